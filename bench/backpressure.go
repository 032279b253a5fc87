package main

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
)

// runBackpressure publishes a burst far faster than the watcher's handler
// can take it (the handler sleeps 1 ms per event; the publisher writes an
// update every few microseconds) and measures the client's heap while the
// backlog stands: the consumer stops pulling, so the backlog waits on the
// server and the client holds at most one pull (1,000 messages) beyond
// what it has handled.
func runBackpressure(ctx context.Context, b *bench) error {
	n, valueSize := b.pick(50_000, 20_000, 2_000), 1024
	srv, _, err := startWithBucket(ctx, 0)
	if err != nil {
		return err
	}
	defer srv.stop()
	var handled atomic.Int64
	w, err := watchSynced(ctx, srv.js, benchkv.BenchScopes{Prefix: []string{"0"}}, benchkv.BenchHandlers{
		OnItem: func(benchkv.ItemEvent) {
			time.Sleep(time.Millisecond)
			handled.Add(1)
		},
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before := heap()
	start := time.Now()
	if _, err := srv.load(ctx, loadRequest{Bucket: "bench", Prefixes: 1, PerPrefix: n, Count: n, ValueSize: valueSize}); err != nil {
		return err
	}
	publishTime := time.Since(start)
	time.Sleep(2 * time.Second) // the handler works through part of it
	after := heap()
	s := w.Stats()
	b.report("backpressure_published_kib", float64(n*valueSize)/1024, "KiB")
	b.report("backpressure_publish_us_per_update", publishTime.Seconds()*1e6/float64(n), "µs")
	b.report("backpressure_handled_events", float64(handled.Load()), "events")
	b.report("backpressure_server_pending", float64(s.Pending), "messages")
	b.report("backpressure_client_heap_growth_kib", (float64(after)-float64(before))/1024, "KiB")
	return nil
}
