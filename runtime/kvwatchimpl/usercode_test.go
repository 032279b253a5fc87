package kvwatchimpl_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// This file is the watcher's methods called from where user code runs:
// the body of an Events loop, handlers and OnError. None of them may wait
// for a delivery to the code that called it (docs/guarantees.md 7).

// returnsWithin runs f on a goroutine of its own and fails the test when
// it has not returned within 10 s: it hangs.
func returnsWithin(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10 s", what)
	}
}

// The body of an Events loop runs while more changes are on their way to
// the loop. Before, the watcher waited for the loop to take the next one:
// SetScopes from the body never returned, nor Stop.
func TestCallsFromAnEventsLoopBody(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a.route.r1", route{CIDR: "a"})
	put(t, kv, "vpc.b.route.r1", route{CIDR: "b"})
	bindings := []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)}
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	var rescoped, stopped atomic.Bool
	returnsWithin(t, "the Events loop", func() {
		for ev := range w.Events(context.Background(), bindings...) {
			if _, ok := ev.(kvwatch.SyncedEvent); ok {
				put(t, kv, "vpc.a.route.move", route{CIDR: "a"})
				continue
			}
			e, ok := ev.(kvwatch.Event[routeKey, route])
			if !ok || e.Initial {
				continue
			}
			switch e.Key.RouteID {
			case "move":
				// Writes keep coming: the watcher has more for this loop.
				for i := range 5 {
					put(t, kv, fmt.Sprintf("vpc.a.route.more%d", i), route{CIDR: "a"})
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := w.SetScopes(ctx, vpcs("a", "b")); err != nil {
					t.Errorf("SetScopes from an Events loop body: %v", err)
				}
				cancel()
				rescoped.Store(true)
				put(t, kv, "vpc.b.route.stop", route{CIDR: "b"})
			case "stop":
				for i := range 5 {
					put(t, kv, fmt.Sprintf("vpc.b.route.after%d", i), route{CIDR: "b"})
				}
				w.Stop() // returnsWithin fails the test if this hangs
				stopped.Store(true)
			}
		}
	})
	if !rescoped.Load() || !stopped.Load() {
		t.Fatalf("the loop ended before its calls: SetScopes %v, Stop %v", rescoped.Load(), stopped.Load())
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the consumer deleted", func() bool {
		return kvwatchtest.Consumers(t, js, "network") == 0
	})
	if err := w.Err(); err != nil {
		t.Errorf("Err after Stop: %v", err)
	}
}

// WaitSynced from the body of an Events loop, before the loop has had its
// SyncedEvent, returns once the watcher is synced. Before, the watcher
// waited for the loop to take its next initial event, and WaitSynced
// waited until its context ended.
func TestWaitSyncedFromAnEventsLoopBodyBeforeSync(t *testing.T) {
	js, kv := setup(t)
	for i := range 300 {
		put(t, kv, fmt.Sprintf("vpc.a.route.r%d", i), route{CIDR: "a"})
	}
	bindings := []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)}
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	returnsWithin(t, "the Events loop", func() {
		events := 0
		for ev := range w.Events(context.Background(), bindings...) {
			if _, ok := ev.(kvwatch.SyncedEvent); ok {
				break
			}
			if events++; events == 1 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err := w.WaitSynced(ctx)
				cancel()
				if err != nil {
					t.Errorf("WaitSynced from an Events loop body before its SyncedEvent: %v", err)
				}
			}
		}
		if events != 300 {
			t.Errorf("the loop had %d initial events before its SyncedEvent, want 300", events)
		}
	})
}

// No callback runs after Stop, not even OnError for entries the watcher
// had in hand when a handler called it. Before, the entries of an atomic
// batch after the one whose handler called Stop were still reported.
func TestNoCallbackAfterStopFromAHandler(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network"})
	updateStream(t, js, func(cfg *jetstream.StreamConfig) { cfg.AllowAtomicPublish = true })
	var w *kvwatchimpl.Watcher
	var stopped atomic.Bool
	var after atomic.Int64
	routes := kvwatchimpl.Bind(&routeKind, func(ev kvwatch.Event[routeKey, route]) {
		if stopped.Load() {
			after.Add(1)
		}
		if ev.Key.RouteID == "stop" {
			w.Stop()
			stopped.Store(true)
		}
	})
	var err error
	w, err = kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{routes, kvwatchimpl.Bind(&vpcKind, nil)},
		kvwatchimpl.OnError(func(error) {
			if stopped.Load() {
				after.Add(1)
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)
	// One batch: the stop, then a key no template matches and an
	// undecodable value (both reported to OnError), then a route.
	b := kvwatchimpl.NewBatch(js, kv)
	kvwatchimpl.BatchPut(b, &routeKind, routeKey{VPC: "a", RouteID: "stop"}, route{})
	kvwatchimpl.BatchPut(b, &oddKind, oddKey("vpc.a.odd.x"), "unknown")
	kvwatchimpl.BatchPut(b, &oddKind, oddKey("vpc.a.route.bad"), "not a route")
	kvwatchimpl.BatchPut(b, &routeKind, routeKey{VPC: "a", RouteID: "later"}, route{})
	if _, err := b.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end after Stop from a handler")
	}
	if n := after.Load(); n > 0 {
		t.Errorf("%d callbacks ran after Stop from a handler", n)
	}
}

// oddKey is a raw key, for writes no template of the watcher expects.
type oddKey string

var oddKind = kvwatchimpl.Kind[oddKey, string]{Name: "Odd", Key: kvwatchimpl.MustTemplate("{raw}"),
	ParseKey: func(s string) (oddKey, error) { return oddKey(s), nil }, FormatKey: func(k oddKey) string { return string(k) },
	Codec: kvwatchimpl.JSON[string]{}}

// While OnSynced runs, the caches stay at the sync point (docs/guarantees.md,
// guarantee 4: exact at OnSynced): a write that a second watcher has
// applied meanwhile is not in them, and comes once OnSynced returns.
// Without the hold, handlers on their own goroutines would see the caches
// move on under OnSynced.
func TestCachesHoldAtTheSyncPointWhileOnSyncedRuns(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a.route.r1", route{CIDR: "a"})
	release := make(chan struct{})
	inOnSynced := make(chan struct{})
	routes := kvwatchimpl.Bind(&routeKind, nil)
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{routes, kvwatchimpl.Bind(&vpcKind, nil)},
		kvwatchimpl.OnSynced(func() { close(inOnSynced); <-release }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	<-inOnSynced
	synced := w.Stats().LastRevision
	later := put(t, kv, "vpc.a.route.later", route{CIDR: "later"})
	clock, _, _ := startCached(t, js, vpcs("a"), newRecorder()) // has the write once synced
	if n := clock.Stats().Kinds["Route"].Cached; n != 2 {
		t.Fatalf("the second watcher caches %d routes, want 2", n)
	}
	// The first watcher's consumer has had the write as long; give it a
	// moment more to (wrongly) apply it.
	moved := false
	for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline) && !moved; time.Sleep(10 * time.Millisecond) {
		moved = w.Stats().LastRevision != synced || routes.Cache().Len() != 1
	}
	if moved {
		t.Errorf("the caches moved on from the sync point (%d) while OnSynced ran: revision %d, %d routes", synced, w.Stats().LastRevision, routes.Cache().Len())
	}
	close(release)
	waitRevision(t, w, later)
}

// An Events loop whose context ends has no event after its body returns,
// however many are queued for it: neither the rest of a replay (every
// cached entry is one delivery) nor the changes still coming. Before, the
// loop ran the rest of what it had taken and took more as long as some
// waited: a loop slower than the bucket's writes never ended (found by
// the robustness test, ending loops while writers wrote).
func TestEventsLoopEndsWhenItsContextEnds(t *testing.T) {
	js, kv := setup(t)
	for i := range 300 {
		put(t, kv, fmt.Sprintf("vpc.a.route.r%d", i), route{CIDR: "a"})
	}
	bindings := []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)}
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)

	t.Run("during the replay", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		after := -1
		returnsWithin(t, "the Events loop", func() {
			for range w.Events(ctx, bindings...) {
				after++
				if after == 0 {
					cancel()
				}
			}
		})
		if after != 0 {
			t.Errorf("%d events after the loop's context ended (a replay of 300 entries)", after)
		}
	})

	t.Run("while changes keep coming", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		writing, stopWriting := context.WithCancel(context.Background())
		var written atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; writing.Err() == nil; i++ {
				if _, err := kv.Put(writing, fmt.Sprintf("vpc.a.route.w%d", i%50), []byte(`{"cidr":"w"}`)); err == nil {
					written.Add(1)
				}
			}
		}()
		defer func() { stopWriting(); <-done }()
		after := -1
		returnsWithin(t, "the Events loop", func() {
			for ev := range w.Events(ctx, bindings...) {
				if e, ok := ev.(kvwatch.Event[routeKey, route]); !ok || e.Initial {
					continue
				}
				after++
				if after == 0 {
					// Held until more changes wait for the loop, then the
					// context ends.
					from := written.Load()
					kvwatchtest.Eventually(t, 10*time.Second, "changes queued for the loop", func() bool {
						return written.Load() >= from+20 && w.Stats().Queued > 0
					})
					cancel()
				}
			}
		})
		if after != 0 {
			t.Errorf("%d changes after the loop's context ended", after)
		}
	})
}
