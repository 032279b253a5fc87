package kvwatchimpl_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// checkSyncedState fails unless every key in want was delivered, flagged
// initial, before synced, and nothing after synced is flagged initial.
func checkSyncedState(t *testing.T, r *recorder, want []string) {
	t.Helper()
	events, errs := r.snapshot()
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	initial := map[string]bool{}
	for i, e := range events {
		if e.Initial == e.Synced {
			t.Fatalf("event %d %+v: Initial=%v but synced-before=%v", i, e, e.Initial, e.Synced)
		}
		if e.Initial {
			initial[e.Key] = true
		}
	}
	for _, key := range want {
		if !initial[key] {
			t.Errorf("key %s not delivered before synced", key)
		}
	}
}

// checkDeliveredOnce checks that every key in want was delivered, before
// synced (flagged initial) or after it (a live put), and that no event
// after synced is flagged initial.
func checkDeliveredOnce(t *testing.T, r *recorder, want []string) {
	t.Helper()
	events, errs := r.snapshot()
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	delivered := map[string]bool{}
	for i, e := range events {
		if e.Initial && e.Synced {
			t.Fatalf("event %d %+v: flagged initial after synced", i, e)
		}
		delivered[e.Key] = true
	}
	for _, key := range want {
		if !delivered[key] {
			t.Errorf("key %s never delivered", key)
		}
	}
}

// writeKeys writes n routes under vpc and returns their keys.
func writeKeys(t *testing.T, kv jetstream.KeyValue, vpc string, n int) []string {
	t.Helper()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("vpc.%s.route.r%d", vpc, i)
		put(t, kv, keys[i], route{CIDR: "initial"})
	}
	return keys
}

// overwrite keeps overwriting keys until stop is called; it returns once
// the writer is under way.
func overwrite(t *testing.T, kv jetstream.KeyValue, keys []string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var written atomic.Int64
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := kv.Put(ctx, keys[(i*7)%len(keys)], []byte(`{"cidr":"overwritten"}`)); err == nil {
				written.Add(1)
			}
		}
	})
	kvwatchtest.Eventually(t, 5*time.Second, "writer under way", func() bool { return written.Load() >= 20 })
	return func() { cancel(); wg.Wait() }
}

// More than 1,024 keys in scope, a small share of the bucket, take the
// listing path (one multi_last answer holds at most 1,024 subjects);
// synced stays exact while a writer overwrites keys under it.
func TestSyncLargeScopeWhileOverwriting(t *testing.T) {
	js, kv := setup(t)
	keys := writeKeys(t, kv, "a", 1500)
	ballast(t, js, 3000)
	stop := overwrite(t, kv, keys)
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r)
	waitSynced(t, w)
	stop()
	checkSyncedState(t, r, keys)
	if got := w.Stats().InitialState; got != "direct-get-listing" {
		t.Errorf("InitialState = %q, want direct-get-listing", got)
	}
	if n := kvwatchtest.Consumers(t, js, "network"); n != 1 {
		t.Errorf("consumers = %d, want 1", n)
	}
}

// A read of more than 1,024 keys takes several requests, each answered as
// of its own revision while a writer overwrites a few keys of every scope
// many times; the consumer starts after the oldest revision and must skip
// what the read delivered: every key's revisions arrive once each, in
// order, with none missed (replaying a key's older revisions after the
// read delivered a newer one breaks the order).
func TestSeamOfAReadInSeveralRequests(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", History: 64, Storage: jetstream.MemoryStorage})
	names := []string{"a", "b", "c", "d", "e", "f"}
	var keys, sample []string
	for _, vpc := range names {
		k := writeKeys(t, kv, vpc, 600)
		keys = append(keys, k...)
		sample = append(sample, k[0])
	}
	ballast(t, js, 2*len(keys)) // a small share of the bucket: read by direct get
	requests := directGetRequests(t, s)
	stop1, stop2 := overwrite(t, kv, sample), overwrite(t, kv, sample)
	stop := func() { stop1(); stop2() }
	log := newRevisionLog()
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs(names...), []kvwatchimpl.AnyBinding{log.binding(), kvwatchimpl.Bind(&vpcKind, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitSynced(t, w)
	// Keep writing until every sampled key changed after the read.
	kvwatchtest.Eventually(t, 10*time.Second, "writes past the seam", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, key := range sample {
			if len(log.revs[key]) < 2 {
				return false
			}
		}
		return true
	})
	stop()
	last, err := kv.Put(context.Background(), "vpc.a", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	waitRevision(t, w, last)
	if got := w.Stats().InitialState; got != "direct-get" {
		t.Fatalf("InitialState = %q, want direct-get", got)
	}
	if n := requests(); n < 3 {
		t.Fatalf("%d read requests: the read was not split", n)
	}
	checkHistoriesDelivered(t, kv, log, sample)
}

// A request that matched nothing (404) says no revision. A key created in
// its scope after that answer, before the first answer holding keys, has
// a revision the tail must not skip: here a second client creates one as
// soon as it sees the first "no results" answer, and the watcher ends up
// with it, after the initial read or from the tail.
func TestKeyCreatedInAnEmptyScopeDuringTheRead(t *testing.T) {
	for attempt := range 3 { // the put must land inside the read: retry if it came too late
		s := kvwatchtest.Server(t)
		observer, js := kvwatchtest.Connect(t, s)
		kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Storage: jetstream.MemoryStorage})
		// Empty scopes sort first: the probes answer 404.
		names := []string{"e0", "e1", "e2", "e3", "v0", "v1", "v2", "v3"}
		for _, vpc := range names[4:] {
			writeKeys(t, kv, vpc, 600)
		}
		var created atomic.Uint64
		sub, err := observer.Subscribe("_INBOX.>", func(msg *nats.Msg) {
			if msg.Header.Get("Status") == "404" && created.Load() == 0 {
				created.Store(1) // once
				rev, err := kv.Put(context.Background(), "vpc.e0.route.late", []byte(`{"cidr":"late"}`))
				if err == nil {
					created.Store(rev)
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := observer.Flush(); err != nil {
			t.Fatal(err)
		}
		r := newRecorder()
		w, routes, _ := startCached(t, js, vpcs(names...), r)
		waitSynced(t, w)
		kvwatchtest.Eventually(t, 5*time.Second, "the late key written", func() bool { return created.Load() > 1 })
		sub.Unsubscribe()
		last, err := kv.Put(context.Background(), "vpc.v0", []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		waitRevision(t, w, last)
		if _, ok := routes.Cache().Get(routeKey{VPC: "e0", RouteID: "late"}); !ok {
			t.Fatalf("vpc.e0.route.late (revision %d, written after a 404 answer) never delivered", created.Load())
		}
		events, _ := r.snapshot()
		if i := slices.IndexFunc(events, func(e got) bool { return e.Key == "vpc.e0.route.late" }); events[i].Initial {
			return // written during the read, and delivered before synced
		}
		t.Logf("attempt %d: the late key was written after the sync; again", attempt)
	}
	t.Skip("the late key never landed inside the read")
}

// A stream that does not allow direct get is read by the consumer itself.
func TestSyncWithoutDirectGet(t *testing.T) {
	js, kv := setup(t)
	keys := writeKeys(t, kv, "a", 50)
	disableDirectGet(t, js)
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r)
	waitSynced(t, w)
	checkSyncedState(t, r, keys)
	if got := w.Stats().InitialState; got != "consumer" {
		t.Errorf("InitialState = %q, want consumer", got)
	}
	put(t, kv, "vpc.a", vpcConfig{Name: "live"})
	r.waitFor(t, "a live event", func(ev []got, _ []error) bool { return len(ev) == len(keys)+1 })
}

// A state that fits one answer is read by direct get whenever the stream
// allows it (fresh, overwritten, or keeping history), by the consumer
// otherwise.
func TestInitialStatePathFollowsTheStream(t *testing.T) {
	js, kv := setup(t)
	keys := writeKeys(t, kv, "a", 30)
	// The same keys in a bucket that keeps 5 revisions a key.
	jsHistory := kvwatchtest.JetStream(t)
	writeKeys(t, kvwatchtest.BucketWith(t, jsHistory, jetstream.KeyValueConfig{Bucket: "network", History: 5}), "a", 30)
	for _, c := range []struct {
		name   string
		change func()
		js     jetstream.JetStream
		want   string
	}{
		{"fresh", func() {}, js, "direct-get"},
		{"overwritten", func() { put(t, kv, keys[3], route{CIDR: "overwritten"}) }, js, "direct-get"},
		{"without direct get", func() { disableDirectGet(t, js) }, js, "consumer"},
		{"fresh, history 5", func() {}, jsHistory, "direct-get"},
	} {
		c.change()
		r := newRecorder()
		w := startNetwork(t, c.js, vpcs("a"), r)
		waitSynced(t, w)
		checkSyncedState(t, r, keys)
		if got := w.Stats().InitialState; got != c.want {
			t.Errorf("%s: InitialState = %q, want %q", c.name, got, c.want)
		}
		w.Stop()
	}
}

// A bucket never overwritten before the watcher starts, overwritten while
// it reads the state: every key is still delivered before synced, read by
// direct get (a small share of the bucket) or by the consumer (most of
// it). A consumer delivering the state itself loses overwritten keys'
// older messages before reaching them: the catch-up's seal brings their
// newer ones before synced (readpath.go).
func TestSyncedExactOnAFreshBucketUnderWrites(t *testing.T) {
	for _, path := range []string{"direct-get-listing", "consumer"} {
		t.Run(path, func(t *testing.T) {
			js, kv := setup(t)
			keys := writeKeys(t, kv, "a", 2000)
			if path != "consumer" {
				ballast(t, js, 4000)
			}
			r := newRecorder()
			w := startNetwork(t, js, vpcs("a"), r)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					kv.Put(ctx, keys[(i*7)%len(keys)], []byte(`{"cidr":"w"}`))
				}
			})
			waitSynced(t, w)
			cancel()
			wg.Wait()
			checkSyncedState(t, r, keys)
			if got := w.Stats().InitialState; got != path {
				t.Errorf("InitialState = %q, want %q", got, path)
			}
		})
	}
}

// Starting a watcher asks for the stream's info twice: Start's check that
// the bucket exists, which also serves the first read, and, once the
// consumer exists, the check that the stream is still the one read (a
// bucket deleted and made again in between would take the consumer
// without an error). No more: a fleet restarting thousands of watchers
// spares the server every request it can.
func TestStartAsksForTheStreamOnce(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.Bucket(t, js, "network")
	keys := writeKeys(t, kv, "a", 20)
	observer, _ := kvwatchtest.Connect(t, s)
	infos, err := observer.SubscribeSync("$JS.API.STREAM.INFO.KV_network")
	if err != nil {
		t.Fatal(err)
	}
	if err := observer.Flush(); err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r)
	waitSynced(t, w)
	checkSyncedState(t, r, keys)
	if err := observer.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := infos.Pending(); n != 2 {
		t.Errorf("%d stream info requests to start a watcher, want 2", n)
	}
}
