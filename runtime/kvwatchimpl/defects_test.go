package kvwatchimpl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
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

// This file reproduces defects found by trying the runtime as a user
// would: each test failed before its fix.

// A writer creates fresh keys in tenant b (each written once) while the
// watcher toggles its scopes between {b, c} and {b, d}: every write to b,
// the scope it keeps, is delivered exactly once, and the cache ends with
// all of them. The bucket keeps 64 revisions a key, so that a lost write
// cannot hide behind a newer one. Before the fix, SetScopes started the
// next consumer after the added scope's read when the old consumer's
// pending count said nothing was left, and that count lags behind the
// stream: writes to b stored in that moment were never delivered.
func TestSetScopesKeepsEveryWriteToAScopeItKeeps(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", History: 64})
	writeKeys(t, kv, "c", 20)
	writeKeys(t, kv, "d", 20)
	log := newRevisionLog()
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("b", "c"),
		[]kvwatchimpl.AnyBinding{log.binding(), kvwatchimpl.Bind(&vpcKind, nil)}, debugLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var written []string
	wg.Go(func() {
		// Bursts of 20 writes in flight: the more writes land while
		// SetScopes switches, the likelier the defect showed.
		for i := 0; ctx.Err() == nil; {
			var acks []jetstream.PubAckFuture
			var keys []string
			for range 20 {
				key := fmt.Sprintf("vpc.b.route.n%d", i)
				i++
				f, err := js.PublishAsync("$KV.network."+key, []byte(`{"cidr":"b"}`))
				if err != nil {
					t.Errorf("publish: %v", err)
					return
				}
				acks, keys = append(acks, f), append(keys, key)
			}
			time.Sleep(2 * time.Millisecond) // well within what the watcher applies
			for j, f := range acks {
				select {
				case <-f.Ok():
					mu.Lock()
					written = append(written, keys[j])
					mu.Unlock()
				case err := <-f.Err():
					t.Errorf("publish %s: %v", keys[j], err)
				}
			}
		}
	})
	toggles := 200
	if testing.Short() || raceDetector {
		// The race detector slows each switch several times over: 43 s
		// for 200 alone on 2 cores, past the bound below when other
		// packages' tests share the cores (as in CI).
		toggles = 80
	}
	sctx, scancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer scancel()
	for i := range toggles {
		other := "c"
		if i%2 == 0 {
			other = "d"
		}
		if err := w.SetScopes(sctx, vpcs("b", other)); err != nil {
			t.Fatalf("SetScopes #%d: %v (stats %+v)", i, err, w.Stats())
		}
	}
	cancel()
	wg.Wait()
	last := put(t, kv, "vpc.b.route.last", route{CIDR: "last"})
	waitRevision(t, w, last)

	log.mu.Lock()
	var lost []string
	for _, key := range written {
		if len(log.revs[key]) != 1 {
			lost = append(lost, fmt.Sprintf("%s delivered %v", key, log.revs[key]))
		}
	}
	log.mu.Unlock()
	if len(written) < 200 {
		t.Errorf("only %d keys written during %d SetScopes calls: the test proves little", len(written), toggles)
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d writes to the kept scope b were not delivered exactly once, e.g.:\n%s",
			len(lost), len(written), strings.Join(lost[:min(len(lost), 10)], "\n"))
	}
}

// A watcher resumed after its bucket was deleted and made again, with the
// same keys written in the same order (so that their revisions equal the
// checkpoint's) but with new values, delivers the new values: a re-list
// does not take an equal revision on another stream for the same entry.
func TestResumeAfterTheBucketWasRecreatedWithTheSameRevisions(t *testing.T) {
	js, kv := setup(t)
	keys := []string{"vpc.a.route.r1", "vpc.a.route.r2", "vpc.a.route.r3"}
	for _, key := range keys {
		put(t, kv, key, route{CIDR: "old"})
	}
	cp := checkpointOf(t, js, vpcs("a"))
	data, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := js.DeleteKeyValue(ctx, "network"); err != nil {
		t.Fatal(err)
	}
	kv = kvwatchtest.Bucket(t, js, "network")
	for _, key := range keys {
		put(t, kv, key, route{CIDR: "new"})
	}
	var restored kvwatchimpl.Checkpoint
	if err := json.Unmarshal(data, &restored); err != nil {
		t.Fatal(err)
	}
	restored.Kinds = cp.Kinds // the typed entries; JSON of the rest
	got, w := resumeEvents(t, js, vpcs("a"), restored)
	if s := w.Stats(); s.Resume != "relist" {
		t.Errorf("Resume = %q, want relist", s.Resume)
	}
	want := []string{
		`put vpc.a.route.r1 prev={"cidr":"old","next_hop":""} unknown=false`,
		`put vpc.a.route.r2 prev={"cidr":"old","next_hop":""} unknown=false`,
		`put vpc.a.route.r3 prev={"cidr":"old","next_hop":""} unknown=false`,
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("events after resuming on the recreated bucket:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A handler may call SetScopes (a node's assignment changes with an
// event): the call returns once the change is applied, and the watcher
// goes on; Stop from a handler returns too, and so does WaitSynced before
// the watcher is synced (once it is). Before, SetScopes from a handler
// waited for the goroutine it ran on: the watcher hung for good, and so
// did a later Stop.
func TestCallsFromAHandlerReturn(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a.route.r1", route{CIDR: "a"})
	put(t, kv, "vpc.b.route.r1", route{CIDR: "b"})
	var w *kvwatchimpl.Watcher
	ready := make(chan struct{})
	type result struct {
		what string
		err  error
	}
	results := make(chan result, 10)
	var afterStop atomic.Int64
	stopped := false
	routes := kvwatchimpl.Bind(&routeKind, func(ev kvwatch.Event[routeKey, route]) {
		<-ready
		if stopped {
			afterStop.Add(1)
		}
		switch {
		case ev.Initial && ev.Key.VPC == "a":
			// Before sync: WaitSynced would wait for this very call.
			wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			results <- result{"WaitSynced", w.WaitSynced(wctx)}
		case !ev.Initial && ev.Op == kvwatch.OpPut && ev.Key.RouteID == "move":
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			results <- result{"SetScopes", w.SetScopes(ctx, vpcs("b"))}
		case !ev.Initial && ev.Op == kvwatch.OpPut && ev.Key.RouteID == "stop":
			w.Stop()
			stopped = true
			results <- result{"Stop", nil}
		}
	})
	var err error
	w, err = kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{routes, kvwatchimpl.Bind(&vpcKind, nil)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	close(ready)
	next := func(what string) result {
		t.Helper()
		select {
		case r := <-results:
			if r.what != what {
				t.Fatalf("%s returned, want %s", r.what, what)
			}
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("%s from a handler did not return within 10 s", what)
		}
		return result{}
	}
	if r := next("WaitSynced"); r.err != nil {
		t.Errorf("WaitSynced from a handler before sync = %v, want nil once synced", r.err)
	}
	waitSynced(t, w)
	put(t, kv, "vpc.a.route.move", route{CIDR: "a"})
	if r := next("SetScopes"); r.err != nil {
		t.Fatalf("SetScopes from a handler: %v", r.err)
	}
	// Applied when it returned: the caches are exact for the new scopes.
	if f := w.Filters(); !slices.Equal(f, []string{"$KV.network.vpc.b", "$KV.network.vpc.b.>"}) || w.Stats().Kinds["Route"].Cached != 1 {
		t.Errorf("after SetScopes from a handler returned: filters %v, %d routes cached, want vpc b's and 1", f, w.Stats().Kinds["Route"].Cached)
	}
	// Two writes at once, likely in one pull: after Stop from a handler no
	// handler runs, even for an entry already received.
	stop, err := js.PublishAsync("$KV.network.vpc.b.route.stop", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishAsync("$KV.network.vpc.b.route.after", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	<-stop.Ok()
	next("Stop")
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end after Stop from a handler")
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the consumer deleted", func() bool {
		return kvwatchtest.Consumers(t, js, "network") == 0
	})
	if n := afterStop.Load(); n > 0 {
		t.Errorf("%d handler calls after Stop from a handler", n)
	}
}

// A value that does not decode is reported with one codec prefix, not
// "json: json: ...".
func TestDataErrorTextHasOnePrefix(t *testing.T) {
	_, err := kvwatchimpl.JSON[route]{}.Decode([]byte(`{"cidr": 5}`))
	if err == nil || strings.Count(err.Error(), "json:") != 1 {
		t.Errorf("type error: %v, want one \"json:\"", err)
	}
	_, err = kvwatchimpl.JSON[route]{}.Decode([]byte(`not json`))
	if err == nil || strings.Count(err.Error(), "json:") != 1 {
		t.Errorf("syntax error: %v, want one \"json:\"", err)
	}
}

// After its consumer was recreated, a live watcher on a quiet bucket
// still takes a SetScopes call at once. A review found the tail kept the
// stopped iterator of its first consumer as the way SetScopes wakes it:
// the call waited until its context ended.
func TestSetScopesAfterAConsumerReset(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a.route.r1", route{CIDR: "a"})
	put(t, kv, "vpc.b.route.r1", route{CIDR: "b"})
	w, _ := startLogged(t, js)
	first := w.Stats().Consumer
	if err := js.DeleteConsumer(context.Background(), "KV_network", first); err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the consumer recreated", func() bool {
		c := w.Stats().Consumer
		return c != "" && c != first
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.SetScopes(ctx, vpcs("a", "b")); err != nil {
		t.Fatalf("SetScopes after a reset: %v", err)
	}
}

// A purge that rolled up a put the watcher never saw is still a write to
// deliver. The robustness test's long run found a SetScopes catch-up
// dropping one (history 64: purge delivered, put, purge rolling the put
// up, then a live delete; the second purge never came): entries of a
// catch-up are flagged Initial, and an Initial delete of a key the caches
// did not hold was taken for a deleted key of a state read, which is
// nothing to deliver. A delta (flagged Initial too) shows it at once:
// the key, absent at the checkpoint, is put and purged meanwhile, the
// put rolled up; the delta must deliver the purge. A state read still
// delivers no delete of a key it does not hold.
func TestACatchUpDeliversADeleteOfAKeyItDidNotHold(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", History: 64})
	put(t, kv, "vpc.a.route.r1", route{CIDR: "kept"})
	put(t, kv, "vpc.a.route.gone", route{CIDR: "deleted before the checkpoint"})
	if err := kv.Delete(context.Background(), "vpc.a.route.gone"); err != nil {
		t.Fatal(err)
	}
	cp := checkpointOf(t, js, vpcs("a"))

	put(t, kv, "vpc.a.route.k", route{CIDR: "rolled up"})
	if err := kv.Purge(context.Background(), "vpc.a.route.k"); err != nil {
		t.Fatal(err)
	}
	got, w := resumeEvents(t, js, vpcs("a"), cp)
	if w.Stats().Resume != "delta" {
		t.Fatalf("resumed by %q, want a delta", w.Stats().Resume)
	}
	if want := []string{"purge vpc.a.route.k prev= unknown=false"}; !slices.Equal(got, want) {
		t.Errorf("the delta delivered %q, want %q", got, want)
	}

	// A fresh watcher reads the state, by direct get and, without it, by
	// its consumer (the last entry per key): neither deleted key is in it,
	// and neither delete is an event.
	for _, direct := range []bool{true, false} {
		if !direct {
			disableDirectGet(t, js)
		}
		r := newRecorder()
		w, _, _ := startCached(t, js, vpcs("a"), r)
		events, _ := r.snapshot()
		for _, e := range events {
			if e.Op != kvwatch.OpPut {
				t.Errorf("a fresh read (%s) delivered %s %s", w.Stats().InitialState, e.Op, e.Key)
			}
		}
		if len(events) != 1 {
			t.Errorf("a fresh read (%s) delivered %d events, want 1: %+v", w.Stats().InitialState, len(events), events)
		}
		w.Stop()
	}
}

// WaitRevision(rev) means every change up to rev is in the caches. With
// history 1 a write at rev replaced by a newer one before the tail got to
// it is gone from the stream: the check then saw only the newer entry,
// after rev, took nothing in scope to be pending, and said yes while the
// caches held neither (the tail was busy). It must wait for the tail to
// apply the newer entry. Here the tail is stopped for good, its revision
// before the write.
func TestWaitRevisionWaitsForAReplacedWrite(t *testing.T) {
	js, kv := setup(t)
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)})
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, w)
	before := put(t, kv, "vpc.a.route.before", route{CIDR: "before"})
	waitRevision(t, w, before)
	w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Nothing in scope after the tail's revision: it is up to a write
	// outside its scopes.
	outside := put(t, kv, "vpc.b.route.k", route{CIDR: "b"})
	if up, err := w.UpTo(ctx, outside); err != nil || !up {
		t.Errorf("UpTo(%d) with nothing in scope after the tail's revision = %v, %v; want true", outside, up, err)
	}
	mine := put(t, kv, "vpc.a.route.k", route{CIDR: "mine"})
	put(t, kv, "vpc.a.route.k", route{CIDR: "newer"}) // history 1: mine is gone
	if up, err := w.UpTo(ctx, mine); err != nil || up {
		t.Errorf("UpTo(%d) with the tail at %d and a newer write of the key pending = %v, %v; want false", mine, w.Stats().LastRevision, up, err)
	}
}

// A value that does not decode is reported with a glimpse of it: "json:
// invalid character 'o' in literal null" alone does not say what was
// stored. Long values are cut, with how long they are.
func TestDataErrorShowsTheValue(t *testing.T) {
	js, kv := setup(t)
	kv.PutString(context.Background(), "vpc.a.route.bad", "not json")
	kv.PutString(context.Background(), "vpc.a.route.long", strings.Repeat("x", 200))
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r)
	waitSynced(t, w)
	_, errs := r.snapshot()
	var texts []string
	for _, err := range errs {
		texts = append(texts, err.Error())
	}
	sort.Strings(texts)
	if len(texts) != 2 || !strings.Contains(texts[0], `value "not json"`) ||
		!strings.Contains(texts[1], `value "`+strings.Repeat("x", 64)+`"… (200 bytes)`) {
		t.Errorf("errors %q; want each with a glimpse of its value", texts)
	}
}
