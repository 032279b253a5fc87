package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// reader is one way of following updates of prefix 0, counting what it
// receives.
type reader struct {
	name  string
	count atomic.Int64
	stop  func()
	// firstAt and firstMallocs are the time and the client's allocation
	// count at the first counted update: where a drain is measured from.
	// Written before count turns 1, read after.
	firstAt      time.Time
	firstMallocs uint64
}

// counted counts one update received; at the first it records firstAt and
// firstMallocs. Only one goroutine may count a reader.
func (r *reader) counted() {
	if r.count.Load() == 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.firstAt, r.firstMallocs = time.Now(), ms.Mallocs
	}
	r.count.Add(1)
}

// readerStart starts a reader at revision first (0: only new updates).
type readerStart func(ctx context.Context, srv *childServer, first uint64) (*reader, error)

// runThroughput compares a generated typed watcher with what a hand-written
// watcher does at its leanest (a raw jetstream.OrderedConsumer and
// json.Unmarshal into the same struct), one reader at a time, in
// alternating rounds:
//
//   - live (throughput_*): the reader is running; n updates are published
//     as fast as the publisher can (in the server's process) and timed
//     until the last reaches the handler. End to end, as a node sees
//     config changes; bounded by the publisher while the reader keeps up.
//   - drain (drain_*): n updates are already in the stream; the reader
//     starts before them and consumes as fast as it can: the reader's own
//     cost per update, where the watcher's cache upkeep shows. Timed from
//     the first update received to the last, so that creating the
//     consumer does not count.
//
// Allocations are counted in the client process over the drain, from the
// first update received to the last too.
func runThroughput(ctx context.Context, b *bench) error {
	n := b.pick(200_000, 50_000, 2_000)
	rounds := b.pick(5, 3, 1)
	srv, _, err := startWithBucket(ctx, 0)
	if err != nil {
		return err
	}
	defer srv.stop()
	readers := []readerStart{typedReader, rawReader}
	drain, live, allocs := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	version := 0
	for range rounds {
		for _, start := range readers {
			version++
			rate, perEvent, name, err := drainRound(ctx, srv, start, n, version)
			if err != nil {
				return err
			}
			drain[name] = append(drain[name], rate)
			allocs[name] = append(allocs[name], perEvent)
			version++
			rate, name, err = liveRound(ctx, srv, start, n, version)
			if err != nil {
				return err
			}
			live[name] = append(live[name], rate)
		}
	}
	// The ratio the issue of record defines is the live, end-to-end one.
	typedLive, rawLive := median(live["kvwatch"]), median(live["raw"])
	b.report("throughput_kvwatch_updates_per_s", typedLive, "updates/s")
	b.report("throughput_raw_updates_per_s", rawLive, "updates/s")
	b.report("throughput_ratio_kvwatch_vs_raw", typedLive/rawLive, "ratio")
	typedDrain, rawDrain := median(drain["kvwatch"]), median(drain["raw"])
	b.report("drain_kvwatch_updates_per_s", typedDrain, "updates/s")
	b.report("drain_raw_updates_per_s", rawDrain, "updates/s")
	b.report("drain_ratio_kvwatch_vs_raw", typedDrain/rawDrain, "ratio")
	b.report("allocs_per_event_kvwatch", median(allocs["kvwatch"]), "allocs")
	b.report("allocs_per_event_raw", median(allocs["raw"]), "allocs")
	return nil
}

// publish writes n updates of n distinct keys of prefix 0 (values of ~200
// bytes; distinct, because with history 1 a reader lagging behind two
// writes of one key only ever sees the second) and returns the last
// revision.
func publish(ctx context.Context, srv *childServer, n, version int) (uint64, error) {
	return srv.load(ctx, loadRequest{Bucket: "bench", Prefixes: 1, PerPrefix: n, Count: n, ValueSize: 200, Version: version})
}

// drainRound publishes n (at least 2) updates, then starts a reader just
// before them and times how fast it consumes them, and counts the
// client's allocations per update meanwhile: both over the n-1 updates
// after the first, so that starting the reader (creating its consumer,
// setting up the resume) is not counted.
func drainRound(ctx context.Context, srv *childServer, start readerStart, n, version int) (rate, allocsPerEvent float64, name string, err error) {
	last, err := publish(ctx, srv, n, version)
	if err != nil {
		return 0, 0, "", err
	}
	runtime.GC()
	r, err := start(ctx, srv, last-uint64(n)+1)
	if err != nil {
		return 0, 0, "", err
	}
	defer r.stop()
	if err := waitCount(ctx, r, n); err != nil {
		return 0, 0, "", err
	}
	elapsed := time.Since(r.firstAt)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	timed := float64(n - 1)
	return timed / elapsed.Seconds(), float64(after.Mallocs-r.firstMallocs) / timed, r.name, nil
}

// liveRound starts a reader, then publishes n updates and times how fast
// they reach it.
func liveRound(ctx context.Context, srv *childServer, start readerStart, n, version int) (float64, string, error) {
	r, err := start(ctx, srv, 0)
	if err != nil {
		return 0, "", err
	}
	defer r.stop()
	began := time.Now()
	if _, err := publish(ctx, srv, n, version); err != nil {
		return 0, "", err
	}
	if err := waitCount(ctx, r, n); err != nil {
		return 0, "", err
	}
	return float64(n) / time.Since(began).Seconds(), r.name, nil
}

// waitCount waits until r has received n updates.
func waitCount(ctx context.Context, r *reader, n int) error {
	for r.count.Load() < int64(n) {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %d of %d updates: %w", r.name, r.count.Load(), n, ctx.Err())
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// typedReader is the generated watcher of prefix 0, counting typed events.
// From a revision it resumes from an empty checkpoint just before, so that
// it reads the updates through its consumer, as it reads live ones.
func typedReader(ctx context.Context, srv *childServer, first uint64) (*reader, error) {
	r := &reader{name: "kvwatch"}
	var opts []kvwatch.Option
	if first > 0 {
		cp := benchkv.BenchCheckpoint{Revision: first - 1, Filters: []string{"$KV.bench.p.0.>"}}
		opts = append(opts, cp.Resume())
	}
	// Only new updates: returns once synced, before they are published.
	// From a revision: at once.
	watch := watchSynced
	if first > 0 {
		watch = benchkv.WatchBench
	}
	w, err := watch(ctx, srv.js, benchkv.BenchScopes{Prefix: []string{"0"}}, benchkv.BenchHandlers{
		OnItem: func(ev benchkv.ItemEvent) {
			if ev.Value.Name != "" && (first > 0 || !ev.Initial) {
				r.counted()
			}
		},
	}, opts...)
	if err != nil {
		return nil, err
	}
	r.stop = w.Stop
	return r, nil
}

// rawReader is an ordered consumer on prefix 0, each message decoded into
// the same struct: from a revision, or only new updates.
func rawReader(ctx context.Context, srv *childServer, first uint64) (*reader, error) {
	r := &reader{name: "raw"}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{"$KV.bench.p.0.>"}, DeliverPolicy: jetstream.DeliverNewPolicy}
	if first > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, first
	}
	cons, err := srv.js.OrderedConsumer(ctx, "KV_bench", cfg)
	if err != nil {
		return nil, err
	}
	it, err := cons.Messages(jetstream.PullHeartbeat(time.Second))
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := it.Next()
			if err != nil {
				return
			}
			var item benchkv.Item
			if json.Unmarshal(msg.Data(), &item) == nil && item.Name != "" {
				r.counted()
			}
		}
	}()
	r.stop = func() { it.Stop(); <-done }
	return r, nil
}
