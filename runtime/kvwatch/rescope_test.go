package kvwatch_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/nats-io/nats.go/jetstream"
)

// pollConsumers samples the consumer count of the network stream every
// millisecond until stop is called, which returns the highest count seen
// and the number of samples. It returns once the first sample is taken.
func pollConsumers(t *testing.T, js jetstream.JetStream) (stop func() (peak, samples int)) {
	var peak, samples atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if s, err := js.Stream(ctx, "KV_network"); err == nil {
				if n := int64(s.CachedInfo().State.Consumers); n > peak.Load() {
					peak.Store(n)
				}
				samples.Add(1)
			}
			cancel()
			time.Sleep(time.Millisecond)
		}
	})
	kvwatchtest.Eventually(t, 5*time.Second, "first consumer sample", func() bool { return samples.Load() > 0 })
	return func() (int, int) { close(done); wg.Wait(); return int(peak.Load()), int(samples.Load()) }
}

// Re-scoping a running watcher while writes go on: added scopes arrive,
// removed ones leave with LeftScope deletes, the cache ends equal to the
// bucket, and the stream never holds two consumers.
func TestSetScopesUnderWrites(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 40)
	writeKeys(t, kv, "b", 60)
	writeKeys(t, kv, "c", 10)
	r := newRecorder()
	routes, configs, bindings := networkBindings(r)
	w, err := kvwatch.Start(context.Background(), js, &network, vpcs("a"), bindings, r.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitSynced(t, w)
	stopWriter := overwrite(t, kv, []string{"vpc.a.route.r1", "vpc.b.route.r2", "vpc.c.route.r3", "vpc.b.route.new"})
	peak := pollConsumers(t, js)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	before := w.Stats().Received
	if err := w.SetScopes(ctx, vpcs("a", "b")); err != nil {
		t.Fatal(err)
	}
	added := w.Stats().Received - before
	if err := w.SetScopes(ctx, vpcs("b")); err != nil {
		t.Fatal(err)
	}
	stopWriter()
	if p, n := peak(); p != 1 {
		t.Fatalf("consumers seen while re-scoping: peak %d in %d samples, want 1", p, n)
	}
	last, err := kv.Put(context.Background(), "vpc.b", []byte(`{"name":"end"}`))
	if err != nil {
		t.Fatal(err)
	}
	waitRevision(t, w, last)
	if got, want := cacheState(routes, configs), bucketState(t, kv, "b"); !slices.Equal(got, want) {
		t.Fatalf("cache after re-scoping\n%v\nwant\n%v", got, want)
	}
	// Adding scope b read b's 60 keys (and the writes meanwhile), not a's.
	if added < 50 || added > 60+200 {
		t.Errorf("adding a scope of 60 keys received %d entries", added)
	}
	events, errs := r.snapshot()
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	left := map[string]bool{}
	for _, e := range events {
		if e.Key[4] == 'a' && e.Op == kvwatch.OpDelete {
			left[e.Key] = true
		}
	}
	if len(left) < 40 {
		t.Errorf("%d keys of scope a were told they left, want 40", len(left))
	}
	if got := fmt.Sprint(w.Filters()); got != "[$KV.network.vpc.b $KV.network.vpc.b.>]" {
		t.Errorf("filters = %s", got)
	}
}

// Going to empty scopes drops the consumer; coming back reads the scope.
func TestSetScopesToEmptyAndBack(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 5)
	r := newRecorder()
	routes, configs, bindings := networkBindings(r)
	w, err := kvwatch.Start(context.Background(), js, &network, vpcs("a"), bindings, r.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitSynced(t, w)
	ctx := context.Background()
	if err := w.SetScopes(ctx, kvwatch.Scopes{}); err != nil {
		t.Fatal(err)
	}
	if n := kvwatchtest.Consumers(t, js, "network"); n != 0 || routes.Cache().Len() != 0 {
		t.Fatalf("after empty scopes: %d consumers, %d cached; want 0 and 0", n, routes.Cache().Len())
	}
	put(t, kv, "vpc.a.route.r9", route{CIDR: "while away"})
	if err := w.SetScopes(ctx, vpcs("a")); err != nil {
		t.Fatal(err)
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, "a"); !slices.Equal(got, want) {
		t.Fatalf("cache\n%v\nwant\n%v", got, want)
	}
	if n := kvwatchtest.Consumers(t, js, "network"); n != 1 {
		t.Fatalf("consumers = %d, want 1", n)
	}
	events, _ := r.snapshot()
	var leftScope, back int
	for _, e := range events[5:] {
		switch {
		case e.Op == kvwatch.OpDelete:
			leftScope++
		case e.Op == kvwatch.OpPut && e.Initial:
			back++
		}
	}
	if leftScope != 5 || back != 6 {
		t.Errorf("%d left-scope deletes and %d initial puts after, want 5 and 6: %+v", leftScope, back, events)
	}
}

// No gap and no duplicate at the seam between the initial read and the
// consumer, on both ways of reading: with every revision kept (history
// 64), each key's delivered revisions are exactly its history from the
// first delivered on, while a writer races the watcher's start.
func TestSeamHasNoGapNorDuplicate(t *testing.T) {
	for _, path := range []string{"consumer", "direct-get"} {
		t.Run(path, func(t *testing.T) {
			js := kvwatchtest.JetStream(t)
			kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", History: 64})
			keys := writeKeys(t, kv, "a", 20)
			if path == "direct-get" {
				// A purge rolls up a key's history: interior deletes.
				if err := kv.Purge(context.Background(), keys[10]); err != nil {
					t.Fatal(err)
				}
			}
			// Overwrite all 20 keys: a key overwritten past its 64 revisions
			// would make interior deletes before the watcher starts.
			stop := overwrite(t, kv, keys)
			revs := map[string][]uint64{}
			var mu sync.Mutex
			routes := kvwatch.Bind(&routeKind, func(ev kvwatch.Event[routeKey, route]) {
				mu.Lock()
				revs[ev.Key.String()] = append(revs[ev.Key.String()], ev.Revision)
				mu.Unlock()
			})
			w, err := kvwatch.Start(context.Background(), js, &network, vpcs("a"), []kvwatch.AnyBinding{routes, kvwatch.Bind(&vpcKind, nil)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			waitSynced(t, w)
			kvwatchtest.Eventually(t, 5*time.Second, "writes past the seam", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(revs[keys[0]]) > 3
			})
			stop()
			last, err := kv.Put(context.Background(), "vpc.a", []byte(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			waitRevision(t, w, last)
			if got := w.Stats().InitialState; got != path {
				t.Fatalf("InitialState = %q, want %q", got, path)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, key := range keys[:8] {
				history, err := kv.History(context.Background(), key)
				if err != nil {
					t.Fatal(err)
				}
				got := revs[key]
				if len(got) == 0 {
					t.Fatalf("%s: nothing delivered", key)
				}
				// History keeps the last 64 revisions: compare from the
				// later of its start and the first delivered revision.
				from := max(got[0], history[0].Revision())
				var want []uint64
				for _, h := range history {
					if h.Revision() >= from {
						want = append(want, h.Revision())
					}
				}
				got = slices.DeleteFunc(slices.Clone(got), func(r uint64) bool { return r < from })
				if !slices.Equal(got, want) {
					t.Errorf("%s: delivered revisions %v, history %v", key, got, want)
				}
			}
		})
	}
}
