package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
)

// runIndex measures what a cache index costs a watcher per update: the
// drain of the throughput scenario (n updates already in the stream,
// consumed as fast as the watcher can, timed from the first), through the
// generated watcher of bucket bench (kind Item, no index) and of bucket
// benchix (the same items, kind IndexedItem, with an index on owner), in
// alternating rounds. Each update keeps its key's owner (one of 50), so
// every update takes its key out of an index entry and puts it back.
func runIndex(ctx context.Context, b *bench) error {
	n := b.pick(200_000, 50_000, 2_000)
	rounds := b.pick(5, 3, 1)
	srv, _, err := startWithBucket(ctx, 0)
	if err != nil {
		return err
	}
	defer srv.stop()
	if _, err := srv.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "benchix"}); err != nil {
		return err
	}
	rates, allocs := map[string][]float64{}, map[string][]float64{}
	version := 0
	for range rounds {
		for _, indexed := range []bool{false, true} {
			version++
			rate, perEvent, err := indexDrain(ctx, srv, indexed, n, version)
			if err != nil {
				return err
			}
			name := map[bool]string{false: "without", true: "with"}[indexed]
			rates[name] = append(rates[name], rate)
			allocs[name] = append(allocs[name], perEvent)
		}
	}
	without, with := median(rates["without"]), median(rates["with"])
	b.report("index_drain_updates_per_s_without", without, "updates/s")
	b.report("index_drain_updates_per_s_with", with, "updates/s")
	b.report("index_drain_ratio_with_vs_without", with/without, "ratio")
	b.report("index_allocs_per_event_without", median(allocs["without"]), "allocs")
	b.report("index_allocs_per_event_with", median(allocs["with"]), "allocs")
	return nil
}

// indexDrain publishes n updates to bench or benchix, then resumes that
// bucket's watcher just before them and times how fast it applies them,
// counting the client's allocations per update meanwhile.
func indexDrain(ctx context.Context, srv *childServer, indexed bool, n, version int) (rate, allocsPerEvent float64, err error) {
	bucket := map[bool]string{false: "bench", true: "benchix"}[indexed]
	last, err := srv.load(ctx, loadRequest{Bucket: bucket, Prefixes: 1, PerPrefix: n, Count: n, ValueSize: 200, Version: version})
	if err != nil {
		return 0, 0, err
	}
	runtime.GC()
	r := &reader{name: bucket}
	first := last - uint64(n) + 1
	var stop func()
	if indexed {
		cp := benchkv.BenchixCheckpoint{Revision: first - 1, Filters: []string{"$KV.benchix.p.0.>"}}
		w, err := benchkv.WatchBenchix(ctx, srv.js, benchkv.BenchixScopes{Prefix: []string{"0"}}, benchkv.BenchixHandlers{
			OnIndexedItem: func(ev benchkv.IndexedItemEvent) {
				if ev.Value.Name != "" {
					r.counted()
				}
			},
		}, cp.Resume())
		if err != nil {
			return 0, 0, err
		}
		stop = w.Stop
		defer func() {
			if err == nil && len(w.IndexedItemCache().ByOwner("team-0")) == 0 {
				err = fmt.Errorf("index: the index holds nothing for team-0")
			}
		}()
	} else {
		w, err := typedReader(ctx, srv, first)
		if err != nil {
			return 0, 0, err
		}
		r, stop = w, w.stop
	}
	defer stop()
	if err := waitCount(ctx, r, n); err != nil {
		return 0, 0, err
	}
	elapsed := time.Since(r.firstAt)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	timed := float64(n - 1)
	return timed / elapsed.Seconds(), float64(after.Mallocs-r.firstMallocs) / timed, nil
}
