package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// faultyJS is a real JetStream client that can be told to fail the next
// consumer creation or stream info request.
type faultyJS struct {
	jetstream.JetStream
	failNextConsumer atomic.Bool
	failNextInfo     atomic.Bool
	// beforeInfoFailure runs on the watcher's goroutine just before an
	// injected stream info failure.
	beforeInfoFailure func()
	// beforeConsumer, when set, runs once, just before the next consumer
	// is created.
	beforeConsumer func()
}

func (f *faultyJS) CreateOrUpdateConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	if f.failNextConsumer.CompareAndSwap(true, false) {
		return nil, errors.New("injected: consumer creation failed")
	}
	if hook := f.beforeConsumer; hook != nil {
		f.beforeConsumer = nil
		hook()
	}
	return f.JetStream.CreateOrUpdateConsumer(ctx, stream, cfg)
}

// When the consumer that replays the scopes after SetScopes (on a stream
// without direct get) fails before delivering anything, the retry replays
// from the start: the added scope's entries older than the watcher's
// revision still arrive.
func TestSetScopesReplayRetriedFromTheStart(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "b", 10) // older than anything the watcher applies
	writeKeys(t, kv, "a", 10)
	disableDirectGet(t, js)
	kv, err := js.KeyValue(context.Background(), "network") // a handle that no longer reads by direct get
	if err != nil {
		t.Fatal(err)
	}
	faulty := &faultyJS{JetStream: js}
	r := newRecorder()
	w, routes, configs := startCached(t, faulty, vpcs("a"), r)
	faulty.failNextConsumer.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.SetScopes(ctx, vpcs("a", "b")); err != nil {
		t.Fatal(err)
	}
	if faulty.failNextConsumer.Load() {
		t.Fatal("no consumer creation failed: the retry was not exercised")
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, "a", "b"); !slices.Equal(got, want) {
		t.Errorf("cache has %d entries\n%v\nwant %d\n%v", len(got), got, len(want), want)
	}
}

// A SetScopes call that arrives while the watcher waits to retry a failed
// tail leaves nothing running after Stop: no goroutine of the watcher, for
// any consumer it opened.
func TestStopAfterSetScopesDuringBackoff(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 10)
	writeKeys(t, kv, "b", 10)
	faulty := &faultyJS{JetStream: js}
	retrying := make(chan struct{}, 1)
	logger := slog.New(signalHandler{msg: "kvwatch: retrying", ch: retrying})
	r := newRecorder()
	_, _, bindings := networkBindings(r)
	w, err := kvwatchimpl.Start(context.Background(), faulty, &network, vpcs("a"), bindings, append(r.options(), kvwatch.WithLogger(logger))...)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitSynced(t, w)
	// The tail fails; the watcher backs off.
	kvwatchtest.Eventually(t, 5*time.Second, "the live tail's feed ended", w.EndFeed)
	select {
	case <-retrying:
	case <-time.After(5 * time.Second):
		t.Fatal("the watcher did not back off after its feed ended")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.SetScopes(ctx, vpcs("a", "b")); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	kvwatchtest.Eventually(t, 5*time.Second, "no goroutine of the watcher left", func() bool {
		return watcherGoroutines() == 0
	})
}

// signalHandler is a slog handler that signals ch when a record with
// message msg is logged.
type signalHandler struct {
	msg string
	ch  chan struct{}
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h signalHandler) WithGroup(string) slog.Handler            { return h }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}

// SetScopes calls whose context has already ended leave nothing behind
// that a later call would wait for: each either hands its request over or
// returns without recording it.
func TestSetScopesAfterCancelledCalls(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 5)
	writeKeys(t, kv, "b", 5)
	w, _, _ := startCached(t, js, vpcs("a"), newRecorder())
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 40 {
		scopes := vpcs("a")
		if i%2 == 0 {
			scopes = vpcs("a", "b")
		}
		if err := w.SetScopes(ended, scopes); err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("SetScopes with an ended context: %v", err)
		}
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := w.SetScopes(ctx, vpcs("b")); err != nil {
		t.Fatalf("SetScopes after calls with an ended context: %v", err)
	}
}

// Stream returns the stream with an Info that fails when failNextInfo is
// set, after running beforeInfoFailure.
func (f *faultyJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	s, err := f.JetStream.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return faultyStream{s, f}, nil
}

// faultyStream is a stream whose Info can be made to fail once.
type faultyStream struct {
	jetstream.Stream
	js *faultyJS
}

func (s faultyStream) Info(ctx context.Context, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	if s.js.failNextInfo.CompareAndSwap(true, false) {
		if s.js.beforeInfoFailure != nil {
			s.js.beforeInfoFailure()
		}
		return nil, errors.New("injected: stream info failed")
	}
	return s.Stream.Info(ctx, opts...)
}

// A SetScopes read that fails after delivering the added scopes' keys is
// retried; a key deleted in between is gone from the bucket when the
// retry reads, so the retry must take it out of the cache, once. From no
// scopes, the consumer starts after the read and never replays the
// delete: the retry's re-list delivers it (with its final state unknown).
// From scope a, the consumer starts at the watcher's revision and replays
// the delete itself.
func TestSetScopesRetryForgetsKeysDeletedMeanwhile(t *testing.T) {
	for _, from := range [][]string{nil, {"a"}} {
		t.Run(fmt.Sprintf("from %v", from), func(t *testing.T) {
			js, kv := setup(t)
			writeKeys(t, kv, "a", 10)
			// More than one answer: the read delivers b's keys, then finds
			// more than 1,024 under c, lists them (and fails there).
			writeKeys(t, kv, "b", 600)
			writeKeys(t, kv, "c", 1100)
			faulty := &faultyJS{JetStream: js}
			r := newRecorder()
			w, routes, configs := startCached(t, faulty, vpcs(from...), r)
			faulty.beforeInfoFailure = func() {
				if err := kv.Delete(context.Background(), "vpc.b.route.r0"); err != nil {
					t.Error(err)
				}
			}
			faulty.failNextInfo.Store(true)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			to := append(slices.Clone(from), "b", "c")
			if err := w.SetScopes(ctx, vpcs(to...)); err != nil {
				t.Fatal(err)
			}
			if faulty.failNextInfo.Load() {
				t.Fatal("no stream info failed: the retry was not exercised")
			}
			events, _ := r.snapshot()
			if !hasKey(events, "vpc.b.route.r0", kvwatch.OpPut) {
				t.Fatal("vpc.b.route.r0 was not delivered before the failure")
			}
			if got, want := cacheState(routes, configs), bucketState(t, kv, to...); !slices.Equal(got, want) {
				t.Fatalf("cache has %d entries, the bucket %d", len(got), len(want))
			}
			events, _ = r.snapshot()
			deletes := 0
			for _, e := range events {
				if e.Key == "vpc.b.route.r0" && e.Op == kvwatch.OpDelete {
					deletes++
				}
			}
			if deletes != 1 {
				t.Errorf("%d delete events for vpc.b.route.r0, want 1", deletes)
			}
		})
	}
}

// A resumed watcher that re-lists on a stream without direct get has the
// consumer deliver the state. A restored key overwritten just before the
// consumer starts loses the entry that would have confirmed it (history 1
// keeps one); its newer entry comes after sync. The key is not gone: no
// delete is delivered, only the update.
func TestConsumerRelistKeepsKeysOverwrittenMeanwhile(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 3)
	cp := checkpointOf(t, js, vpcs("a"))
	writeKeys(t, kv, "b", 3)
	disableDirectGet(t, js)
	kv, err := js.KeyValue(context.Background(), "network") // a handle that no longer reads by direct get
	if err != nil {
		t.Fatal(err)
	}
	var overwritten atomic.Uint64
	faulty := &faultyJS{JetStream: js, beforeConsumer: func() {
		overwritten.Store(put(t, kv, "vpc.a.route.r1", route{CIDR: "v2"}))
	}}
	routes, events := routeOpLog()
	// Scopes a and b: the checkpoint (a) does not cover them, so the
	// watcher re-lists.
	w, err := kvwatchimpl.Start(context.Background(), faulty, &network, vpcs("a", "b"),
		[]kvwatchimpl.AnyBinding{routes, kvwatchimpl.Bind(&vpcKind, nil)}, kvwatchimpl.Resume(cp))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitSynced(t, w)
	if s := w.Stats(); s.Resume != "relist" || s.InitialState != "consumer" {
		t.Fatalf("Resume = %q, InitialState = %q; want relist by the consumer", s.Resume, s.InitialState)
	}
	kvwatchtest.Eventually(t, 5*time.Second, "the overwrite applied", func() bool {
		return overwritten.Load() != 0 && w.Stats().LastRevision >= overwritten.Load()
	})
	if got := events(); slices.Contains(got, "delete vpc.a.route.r1 unknown=true") {
		t.Errorf("the overwritten key was reported gone: %v", got)
	}
	if v, ok := routes.Cache().Get(routeKey{VPC: "a", RouteID: "r1"}); !ok || v.CIDR != "v2" {
		t.Errorf("cache holds %+v (%v), want the overwrite", v, ok)
	}
}
