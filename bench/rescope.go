package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
)

// runRescope adds one scope of k keys to a node already watching N keys:
// the generated watcher's SetScopes reads only the added scope; a
// hand-written nats.go watcher has to recreate its last-per-subject
// consumer over every prefix and receive all N + k entries again.
func runRescope(ctx context.Context, b *bench) error {
	prefixes, perPrefix := b.pick(50, 20, 5), b.pick(1000, 500, 20)
	n, k := prefixes*perPrefix, perPrefix
	srv, kv, err := startWithBucket(ctx, 0)
	if err != nil {
		return err
	}
	defer srv.stop()
	// prefixes+1 prefixes: the last one is the scope added.
	if _, err := srv.load(ctx, loadRequest{Bucket: "bench", Prefixes: prefixes + 1, PerPrefix: perPrefix, Count: n + k, ValueSize: 200}); err != nil {
		return err
	}
	b.say("  a node watches %d keys in %d scopes, then adds a scope of %d keys", n, prefixes, k)
	names := prefixNames(prefixes + 1)

	w, err := watchSynced(ctx, srv.js, benchkv.BenchScopes{Prefix: names[:prefixes]}, benchkv.BenchHandlers{})
	if err != nil {
		return err
	}
	defer w.Stop()
	before := w.Stats().Received
	start := time.Now()
	if err := w.SetScopes(ctx, benchkv.BenchScopes{Prefix: names}); err != nil {
		return err
	}
	elapsed := time.Since(start)
	received := w.Stats().Received - before
	if got := w.ItemCache().Len(); got != n+k {
		return fmt.Errorf("after SetScopes the cache holds %d entries, want %d", got, n+k)
	}
	b.report("rescope_messages_per_added_key", float64(received)/float64(k), "messages/key")
	b.report("rescope_seconds_kvwatch", elapsed.Seconds(), "s")

	filters := prefixFilters(prefixes + 1)
	// WatchFiltered prefixes the bucket's subject to the slice it is given,
	// in place (nats.go v1.55.0, kv.go): give it copies.
	old, err := kv.WatchFiltered(ctx, slices.Clone(filters[:prefixes]))
	if err != nil {
		return err
	}
	if _, err := drainInitial(ctx, old, nil); err != nil {
		return err
	}
	start = time.Now()
	old.Stop()
	fresh, err := kv.WatchFiltered(ctx, slices.Clone(filters))
	if err != nil {
		return err
	}
	defer fresh.Stop()
	entries, err := drainInitial(ctx, fresh, nil)
	if err != nil {
		return err
	}
	b.report("rescope_messages_natsgo_recreate", float64(entries), "messages")
	b.report("rescope_messages_per_added_key_natsgo", float64(entries)/float64(k), "messages/key")
	b.report("rescope_seconds_natsgo", time.Since(start).Seconds(), "s")
	return nil
}
