package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
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
// bucket, and the stream never holds two consumers: its MaxConsumers is 1,
// so the server refuses a second one (SetScopes would fail with
// ErrConsumerLimit); the sampled count shows the same, coarsely.
func TestSetScopesUnderWrites(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 40)
	writeKeys(t, kv, "b", 60)
	writeKeys(t, kv, "c", 10)
	r := newRecorder()
	w, routes, configs := startCached(t, js, vpcs("a"), r)
	updateStream(t, js, func(cfg *jetstream.StreamConfig) { cfg.MaxConsumers = 1 })
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
	// The checks below list keys, with a consumer of their own.
	updateStream(t, js, func(cfg *jetstream.StreamConfig) { cfg.MaxConsumers = -1 })
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
		// The deletes of scope a are it leaving, flagged LeftScope; no
		// other event is.
		if want := e.Key[4] == 'a' && e.Op == kvwatch.OpDelete; e.LeftScope != want {
			t.Errorf("event %+v: LeftScope=%v, want %v", e, e.LeftScope, want)
		}
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
	w, routes, configs := startCached(t, js, vpcs("a"), r)
	ctx := context.Background()
	if err := w.SetScopes(ctx, kvwatchimpl.Scopes{}); err != nil {
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
	for _, e := range events {
		if e.LeftScope != (e.Op == kvwatch.OpDelete) {
			t.Errorf("event %+v: LeftScope=%v, want it on the left-scope deletes only", e, e.LeftScope)
		}
	}
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
			if path == "consumer" {
				disableDirectGet(t, js)
			}
			// Overwrite all 20 keys: a key overwritten past its 64 revisions
			// would make interior deletes before the watcher starts.
			stop := overwrite(t, kv, keys)
			log := newRevisionLog()
			w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{log.binding(), kvwatchimpl.Bind(&vpcKind, nil)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			waitSynced(t, w)
			kvwatchtest.Eventually(t, 5*time.Second, "writes past the seam", func() bool {
				log.mu.Lock()
				defer log.mu.Unlock()
				return len(log.revs[keys[0]]) > 3
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
			checkHistoriesDelivered(t, kv, log, keys[:8])
		})
	}
}

// checkHistoriesDelivered fails unless, for every key of keys, the
// revisions delivered are the key's history from the first one delivered
// on: no revision missed, repeated or out of order. The bucket keeps 64
// revisions a key: the comparison starts at the later of the history's
// start and the first revision delivered.
func checkHistoriesDelivered(t *testing.T, kv jetstream.KeyValue, log *revisionLog, keys []string) {
	t.Helper()
	checkRevisionsIncrease(t, log)
	log.mu.Lock()
	defer log.mu.Unlock()
	for _, key := range keys {
		history, err := kv.History(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		got := log.revs[key]
		if len(got) == 0 {
			t.Fatalf("%s: nothing delivered", key)
		}
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
}

// checkRevisionsIncrease fails unless every key's revisions were delivered
// in increasing order: none repeated, none older than one delivered
// before it.
func checkRevisionsIncrease(t *testing.T, log *revisionLog) {
	t.Helper()
	log.mu.Lock()
	defer log.mu.Unlock()
	for key, got := range log.revs {
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("%s: revision %d delivered after %d", key, got[i], got[i-1])
			}
		}
	}
}

// checkpointConsistent fails unless every entry of cp is at or below its
// revision and inside its filters.
func checkpointConsistent(t *testing.T, cp kvwatchimpl.Checkpoint) {
	t.Helper()
	for _, e := range kvwatchimpl.EntriesOf(cp, &routeKind) {
		if e.Revision > cp.Revision {
			t.Errorf("checkpoint at revision %d holds %s at revision %d", cp.Revision, e.Key, e.Revision)
		}
		inside := false
		for _, f := range cp.Filters {
			if filterMatches(f, "$KV.network."+e.Key.String()) {
				inside = true
			}
		}
		if !inside {
			t.Errorf("checkpoint with filters %v holds %s", cp.Filters, e.Key)
		}
	}
}

// filterMatches reports whether subject is inside filter, a literal
// subject or a prefix ending in ".>" (the only wildcard the watcher's
// filters use): "$KV.network.vpc.a" holds vpc.a alone, not vpc.ab.
func filterMatches(filter, subject string) bool {
	if prefix, ok := strings.CutSuffix(filter, ">"); ok && strings.HasSuffix(prefix, ".") {
		return strings.HasPrefix(subject, prefix) && len(subject) > len(prefix)
	}
	return subject == filter
}

// After SetScopes, the watcher's revision covers what the added scopes'
// read put in the cache: a checkpoint is consistent, and a watcher resumed
// from it receives nothing when nothing changed.
func TestCheckpointAfterSetScopes(t *testing.T) {
	for _, from := range []string{"nothing", "a quiet scope"} {
		t.Run("from "+from, func(t *testing.T) {
			js, kv := setup(t)
			writeKeys(t, kv, "a", 5)
			writeKeys(t, kv, "b", 5)
			start := kvwatchimpl.Scopes{}
			if from != "nothing" {
				start = vpcs("a")
			}
			w, _, _ := startCached(t, js, start, newRecorder())
			if err := w.SetScopes(context.Background(), vpcs("a", "b")); err != nil {
				t.Fatal(err)
			}
			cp, err := w.Checkpoint()
			if err != nil {
				t.Fatal(err)
			}
			checkpointConsistent(t, cp)
			if cp.Revision < 10 {
				t.Errorf("checkpoint revision %d, want the 10 writes covered", cp.Revision)
			}
			got, w2 := resumeEvents(t, js, vpcs("a", "b"), cp)
			if len(got) != 0 || w2.Stats().Resume != "delta" {
				t.Errorf("resumed with nothing changed: events %v, path %q; want none, delta", got, w2.Stats().Resume)
			}
		})
	}
}

// Checkpoints taken while SetScopes runs are either refused or consistent
// (and the race detector sees no race).
func TestCheckpointDuringSetScopes(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 50)
	writeKeys(t, kv, "b", 50)
	w, _, _ := startCached(t, js, vpcs("a"), newRecorder())
	done := make(chan struct{})
	var wg sync.WaitGroup
	var taken, refused atomic.Int64
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			cp, err := w.Checkpoint()
			if err != nil {
				refused.Add(1)
				continue
			}
			taken.Add(1)
			checkpointConsistent(t, cp)
		}
	})
	// Re-scope round after round until the checkpoints overlapped them
	// (taken, and refused while a re-scope was being brought in): on a
	// busy machine the checkpointing goroutine may not run at all during
	// one round.
	deadline := time.Now().Add(20 * time.Second)
	for rounds := 0; rounds == 0 || taken.Load() == 0 || refused.Load() == 0; rounds++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d rounds of re-scoping, %d checkpoints taken and %d refused: the test proves nothing", rounds, taken.Load(), refused.Load())
		}
		for _, s := range []kvwatchimpl.Scopes{vpcs("a", "b"), vpcs("b"), vpcs("a")} {
			if err := w.SetScopes(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(done)
	wg.Wait()
}

// Without direct get on the stream, SetScopes replays every scope through
// the consumer: the added scope arrives, and what the cache already held
// brings no event.
func TestSetScopesWithoutDirectGet(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 10)
	writeKeys(t, kv, "b", 10)
	ctx := context.Background()
	disableDirectGet(t, js)
	var err error
	if kv, err = js.KeyValue(ctx, "network"); err != nil { // a handle that no longer reads by direct get
		t.Fatal(err)
	}
	r := newRecorder()
	w, routes, configs := startCached(t, js, vpcs("a"), r)
	before, _ := r.snapshot()
	if err := w.SetScopes(ctx, vpcs("a", "b")); err != nil {
		t.Fatal(err)
	}
	events, errs := r.snapshot()
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	for _, e := range events[len(before):] {
		if !strings.HasPrefix(e.Key, "vpc.b.") || !e.Initial {
			t.Errorf("event after adding scope b: %+v, want only initial events of b", e)
		}
	}
	if n := len(events) - len(before); n != 10 {
		t.Errorf("%d events for the added scope, want 10", n)
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, "a", "b"); !slices.Equal(got, want) {
		t.Errorf("cache\n%v\nwant\n%v", got, want)
	}
}

// A SetScopes call that gave up on its context does not let the next one
// overlap it: the end state is exact and no revision is delivered twice.
func TestSetScopesAfterAbandonedCall(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 20)
	writeKeys(t, kv, "b", 20)
	writeKeys(t, kv, "c", 20)
	r := newRecorder()
	w, routes, configs := startCached(t, js, vpcs("a"), r)
	stop := overwrite(t, kv, []string{"vpc.a.route.r1", "vpc.b.route.r1", "vpc.c.route.r1"})
	short, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	// It usually gives up before it is done; on a fast machine it may not.
	switch err := w.SetScopes(short, vpcs("a", "b")); {
	case errors.Is(err, context.DeadlineExceeded):
		t.Log("the first call was abandoned")
	case err == nil:
		t.Log("the first call completed within 1 ms: the overlap was not exercised")
	default:
		t.Fatalf("the first call: %v", err)
	}
	cancel()
	second, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	if err := w.SetScopes(second, vpcs("a", "b", "c")); err != nil {
		t.Fatal(err)
	}
	stop()
	last := put(t, kv, "vpc.a", vpcConfig{Name: "end"})
	waitRevision(t, w, last)
	if got, want := cacheState(routes, configs), bucketState(t, kv, "a", "b", "c"); !slices.Equal(got, want) {
		t.Errorf("cache\n%v\nwant\n%v", got, want)
	}
	events, errs := r.snapshot()
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	// Scopes only grow here: no event is legitimately repeated, initial
	// or not.
	seen := map[string]bool{}
	for _, e := range events {
		id := fmt.Sprintf("%s@%d/%s", e.Key, e.Revision, e.Op)
		if seen[id] {
			t.Errorf("%s delivered twice (initial: %v)", id, e.Initial)
		}
		seen[id] = true
	}
}

// A heartbeat longer than nats.go accepts is taken as its maximum: the
// watcher works, with one consumer.
func TestLongHeartbeat(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{})
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r, kvwatch.WithHeartbeat(20*time.Second))
	waitSynced(t, w)
	if n := kvwatchtest.Consumers(t, js, "network"); n != 1 {
		t.Fatalf("consumers = %d, want 1", n)
	}
}
