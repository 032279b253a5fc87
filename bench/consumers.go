package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
)

// consumerResult is what watching K scopes cost.
type consumerResult struct {
	consumers  int
	rssKiB     float64 // server RSS growth
	heapKiB    float64 // server Go heap growth after GC
	goroutines int     // server goroutine growth
	syncTime   time.Duration
	failedAt   int // the watcher that could not be created (0: none)
	failure    string
}

// runConsumers watches K scopes (2 keys each) with one generated watcher,
// then with K nats.go watchers (kv.Watch per prefix), each on a fresh
// server, and reports what the stream leader pays: for K = 1, 10, … up to
// kMax (charted), then for K = past, beyond the 1,000-consumers-per-stream
// default cap, where the nats.go watchers fail.
func runConsumers(ctx context.Context, b *bench) error {
	// -quick keeps K = 1,000 (the whole run takes seconds) and goes just
	// past the cap; the test stops at K = 10.
	kMax, past := b.pick(1000, 1000, 10), b.pick(2000, 1001, 0)
	var chart [2][]point // server RSS per approach
	for k := 1; k <= kMax; k *= 10 {
		for i, approach := range []string{"kvwatch", "natsgo"} {
			res, err := measureConsumers(ctx, approach, k)
			if err != nil {
				return err
			}
			reportConsumers(b, approach, k, res)
			chart[i] = append(chart[i], point{x: float64(k), y: res.rssKiB, label: strconv.Itoa(k)})
		}
	}
	if past > 0 {
		for _, approach := range []string{"kvwatch", "natsgo"} {
			res, err := measureConsumers(ctx, approach, past)
			if err != nil {
				return err
			}
			reportConsumers(b, approach, past, res)
		}
	}
	if b.charts != "" {
		return writeChart(b.charts, "consumers-rss.svg", lineChart{
			title:  "nats-server memory growth while a node watches K scopes",
			xLabel: "K (scopes watched by one node)", yLabel: "server RSS growth (KiB)",
			series: []series{{name: "kvwatchgen: 1 watcher, 1 consumer", points: chart[0]}, {name: "nats.go: K watchers, K consumers", points: chart[1]}},
		})
	}
	return nil
}

// reportConsumers reports what watching k scopes with approach cost: the
// same five figures for every k (consumers, server RSS, heap and goroutine
// growth, time to synced), or, where a watcher could not be created, only
// which one and why.
func reportConsumers(b *bench, approach string, k int, res consumerResult) {
	suffix := fmt.Sprintf("%s_K%d", approach, k)
	if res.failedAt > 0 {
		b.reportNote("failed_at_watcher_"+suffix, float64(res.failedAt), "watcher", res.failure)
		return
	}
	b.report("consumers_"+suffix, float64(res.consumers), "consumers")
	b.report("server_rss_kib_"+suffix, res.rssKiB, "KiB")
	b.report("server_heap_kib_"+suffix, res.heapKiB, "KiB")
	b.report("server_goroutines_"+suffix, float64(res.goroutines), "goroutines")
	b.report("sync_seconds_"+suffix, res.syncTime.Seconds(), "s")
}

// measureConsumers starts a server with K prefixes of 2 keys, watches all
// of them with one approach, and measures.
func measureConsumers(ctx context.Context, approach string, k int) (consumerResult, error) {
	srv, kv, err := startWithBucket(ctx, 0)
	if err != nil {
		return consumerResult{}, err
	}
	defer srv.stop()
	if _, err := srv.load(ctx, loadRequest{Bucket: "bench", Prefixes: k, PerPrefix: 2, Count: 2 * k, ValueSize: 200}); err != nil {
		return consumerResult{}, err
	}
	before, err := srv.mem(ctx)
	if err != nil {
		return consumerResult{}, err
	}
	var res consumerResult
	start := time.Now()
	stop, failedAt, err := startWatchers(ctx, srv, kv, approach, k)
	if err != nil && failedAt == 0 {
		return consumerResult{}, err
	}
	defer stop()
	res.syncTime = time.Since(start)
	if failedAt > 0 {
		res.failedAt, res.failure = failedAt, err.Error()
	}
	after, err := srv.mem(ctx)
	if err != nil {
		return consumerResult{}, err
	}
	stream, err := srv.js.Stream(ctx, "KV_bench")
	if err != nil {
		return consumerResult{}, err
	}
	res.consumers = stream.CachedInfo().State.Consumers
	res.rssKiB = float64(after.RSSKiB) - float64(before.RSSKiB)
	res.heapKiB = float64(after.HeapKiB) - float64(before.HeapKiB)
	res.goroutines = after.Goroutines - before.Goroutines
	return res, nil
}

// startWatchers watches K prefixes and returns once every watcher is
// synced. On the nats.go side a watcher that cannot be created ends the
// attempt: failedAt is its number (1-based) and err why.
func startWatchers(ctx context.Context, srv *childServer, kv jetstream.KeyValue, approach string, k int) (stop func(), failedAt int, err error) {
	if approach == "kvwatch" {
		w, err := watchSynced(ctx, srv.js, benchkv.BenchScopes{Prefix: prefixNames(k)}, benchkv.BenchHandlers{})
		if err != nil {
			return func() {}, 0, err
		}
		return w.Stop, 0, nil
	}
	var watchers []jetstream.KeyWatcher
	var wg sync.WaitGroup
	stop = func() {
		for _, w := range watchers {
			w.Stop()
		}
		wg.Wait()
	}
	synced := make(chan struct{}, k)
	for i, filter := range prefixFilters(k) {
		w, err := kv.Watch(ctx, filter)
		if err != nil {
			return stop, i + 1, err
		}
		watchers = append(watchers, w)
		wg.Go(func() {
			once := false
			for e := range w.Updates() {
				if e == nil && !once {
					once = true
					synced <- struct{}{}
				}
			}
		})
	}
	for range k {
		select {
		case <-synced:
		case <-ctx.Done():
			return stop, 0, ctx.Err()
		}
	}
	return stop, 0, nil
}
