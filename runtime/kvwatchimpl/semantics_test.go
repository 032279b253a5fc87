package kvwatchimpl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// networkBindings returns fresh bindings of the two kinds, recorded by r.
func networkBindings(r *recorder) (*kvwatchimpl.Binding[routeKey, route], *kvwatchimpl.Binding[vpcKey, vpcConfig], []kvwatchimpl.AnyBinding) {
	routes := kvwatchimpl.Bind(&routeKind, recordEvent[routeKey, route](r, "Route"))
	configs := kvwatchimpl.Bind(&vpcKind, recordEvent[vpcKey, vpcConfig](r, "VPCConfig"))
	return routes, configs, []kvwatchimpl.AnyBinding{routes, configs}
}

// bucketState reads the current value and revision of every key under the
// given VPCs, as "key@revision=value".
func bucketState(t *testing.T, kv jetstream.KeyValue, vpcNames ...string) []string {
	t.Helper()
	ctx := context.Background()
	var state []string
	for _, vpc := range vpcNames {
		lister, err := kv.ListKeysFiltered(ctx, "vpc."+vpc, "vpc."+vpc+".>")
		if err != nil {
			t.Fatal(err)
		}
		for key := range lister.Keys() {
			e, err := kv.Get(ctx, key)
			if err != nil {
				continue // deleted between listing and reading: not in the state
			}
			// Render the value as the cache would: decoded, then encoded.
			var v any = &route{}
			if !strings.Contains(key, ".route.") {
				v = &vpcConfig{}
			}
			if err := json.Unmarshal(e.Value(), v); err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			rendered, _ := json.Marshal(v)
			state = append(state, fmt.Sprintf("%s@%d=%s", key, e.Revision(), rendered))
		}
	}
	slices.Sort(state)
	return state
}

// cacheState renders the caches like bucketState.
func cacheState(routes *kvwatchimpl.Binding[routeKey, route], configs *kvwatchimpl.Binding[vpcKey, vpcConfig]) []string {
	var state []string
	for _, e := range routes.Cache().List() {
		v, _ := json.Marshal(e.Value)
		state = append(state, fmt.Sprintf("%s@%d=%s", e.Key, e.Revision, v))
	}
	for _, e := range configs.Cache().List() {
		v, _ := json.Marshal(e.Value)
		state = append(state, fmt.Sprintf("%s@%d=%s", e.Key, e.Revision, v))
	}
	slices.Sort(state)
	return state
}

// waitRevision waits until the watcher has applied rev and its handlers
// have run every change up to it.
func waitRevision(t *testing.T, w *kvwatchimpl.Watcher, rev uint64) {
	t.Helper()
	kvwatchtest.Eventually(t, 10*time.Second, fmt.Sprintf("revision %d applied and handled", rev), func() bool {
		s := w.Stats()
		return s.LastRevision >= rev && s.Queued == 0
	})
}

// randomOps applies n random puts, deletes and purges to routes and VPC
// configs of the given VPCs, ending with a put under last so that a
// watcher of last sees the final revision.
func randomOps(t *testing.T, kv jetstream.KeyValue, rng *rand.Rand, n int, vpcNames []string, last string) uint64 {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		vpc := vpcNames[rng.IntN(len(vpcNames))]
		key := fmt.Sprintf("vpc.%s.route.r%d", vpc, rng.IntN(20))
		if rng.IntN(8) == 0 {
			key = "vpc." + vpc
		}
		var err error
		switch op := rng.IntN(10); {
		case op < 6:
			_, err = kv.Put(ctx, key, []byte(fmt.Sprintf(`{"cidr":"%d"}`, i)))
		case op < 8:
			err = kv.Delete(ctx, key)
		default:
			err = kv.Purge(ctx, key)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	rev, err := kv.Put(ctx, "vpc."+last, []byte(`{"name":"last"}`))
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// After 1,000 random puts, deletes and purges across scopes, the caches
// hold exactly what the bucket holds within the watched scopes.
func TestCacheMatchesBucketAfterRandomOps(t *testing.T) {
	js, kv := setup(t)
	rng := rand.New(rand.NewPCG(7, 8))
	randomOps(t, kv, rng, 200, []string{"a", "b", "c"}, "a")
	r := newRecorder()
	w, routes, configs := startCached(t, js, vpcs("a", "b"), r)
	last := randomOps(t, kv, rng, 1000, []string{"a", "b", "c"}, "b")
	waitRevision(t, w, last)
	want, got := bucketState(t, kv, "a", "b"), cacheState(routes, configs)
	if !slices.Equal(got, want) {
		t.Fatalf("cache differs from the bucket\ngot  %d: %v\nwant %d: %v", len(got), got, len(want), want)
	}
	if len(want) < 20 {
		t.Fatalf("only %d keys in scope: the random mix proves little", len(want))
	}
	s := w.Stats()
	if s.Kinds["Route"].Cached+s.Kinds["VPCConfig"].Cached != len(want) {
		t.Errorf("Stats cached = %+v, want %d in all", s.Kinds, len(want))
	}
	if s.Deletes == 0 || s.Purges == 0 || s.Puts == 0 {
		t.Errorf("stats did not count every op: %+v", s)
	}
}

// A watcher resumed from a checkpoint delivers exactly the changes made
// while it was away, and its caches end equal to the bucket.
func TestResumeDeliversExactlyTheDelta(t *testing.T) {
	js, kv := setup(t)
	for i := range 10 {
		put(t, kv, fmt.Sprintf("vpc.a.route.r%d", i), route{CIDR: "v1"})
	}
	w1, _, _ := startCached(t, js, vpcs("a"), newRecorder())
	put(t, kv, "vpc.a.route.r0", route{CIDR: "v2"}) // seen live by w1
	waitRevision(t, w1, 11)
	cp, err := w1.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	w1.Stop()
	if cp.Revision != 11 {
		t.Fatalf("checkpoint revision = %d, want 11", cp.Revision)
	}

	// While away: an update, a new key, a delete, a purge, a change outside
	// the scope.
	put(t, kv, "vpc.a.route.r1", route{CIDR: "v2"})
	put(t, kv, "vpc.a.route.r10", route{CIDR: "new"})
	kv.Delete(context.Background(), "vpc.a.route.r2")
	kv.Purge(context.Background(), "vpc.a.route.r3")
	put(t, kv, "vpc.b.route.r1", route{CIDR: "elsewhere"})

	second := newRecorder()
	routes, configs, bindings := networkBindings(second)
	w2, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings,
		append(second.options(), kvwatchimpl.Resume(cp))...)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	waitSynced(t, w2)
	events, _ := second.snapshot()
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("%s %s prev=%s initial=%v", e.Op, e.Key, e.Prev, e.Initial))
	}
	want := []string{
		`put vpc.a.route.r1 prev={"cidr":"v1","next_hop":""} initial=true`,
		`put vpc.a.route.r10 prev= initial=true`,
		`delete vpc.a.route.r2 prev={"cidr":"v1","next_hop":""} initial=true`,
		`purge vpc.a.route.r3 prev={"cidr":"v1","next_hop":""} initial=true`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("resumed watcher delivered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := w2.Stats(); s.Resume != "delta" || s.InitialState != "resume" {
		t.Errorf("Resume = %q, InitialState = %q; want delta, resume", s.Resume, s.InitialState)
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, "a"); !slices.Equal(got, want) {
		t.Errorf("cache after resume\n%v\nwant\n%v", got, want)
	}
}

// When the stream no longer holds the changes after a checkpoint (here:
// every delete marker purged, so the stream's first sequence moved past
// the checkpoint), a resumed watcher re-lists: changed keys are put, keys
// that vanished are deleted with their final state unknown.
func TestResumeAfterPurgedDeleteMarkersRelists(t *testing.T) {
	js, kv := setup(t)
	ctx := context.Background()
	for i := range 4 {
		put(t, kv, fmt.Sprintf("vpc.a.route.r%d", i), route{CIDR: "v1"})
	}
	cp := checkpointOf(t, js, vpcs("a"))
	for i := range 4 {
		if err := kv.Delete(ctx, fmt.Sprintf("vpc.a.route.r%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.PurgeDeletes(ctx, jetstream.DeleteMarkersOlderThan(-1)); err != nil {
		t.Fatal(err)
	}
	put(t, kv, "vpc.a.route.r1", route{CIDR: "back"})
	got, w := resumeEvents(t, js, vpcs("a"), cp)
	want := []string{
		`put vpc.a.route.r1 prev={"cidr":"v1","next_hop":""} unknown=false`,
		`delete vpc.a.route.r0 prev={"cidr":"v1","next_hop":""} unknown=true`,
		`delete vpc.a.route.r2 prev={"cidr":"v1","next_hop":""} unknown=true`,
		`delete vpc.a.route.r3 prev={"cidr":"v1","next_hop":""} unknown=true`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := w.Stats(); s.Resume != "relist" {
		t.Errorf("Resume = %q, want relist", s.Resume)
	}
}

// The same when retention (max age) removed the history: keys that expired
// while the watcher was away are reported gone.
func TestResumeAfterMaxAgeRelists(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", TTL: time.Second})
	for i := range 3 {
		put(t, kv, fmt.Sprintf("vpc.a.route.r%d", i), route{CIDR: "v1"})
	}
	cp := checkpointOf(t, js, vpcs("a"))
	stream, err := js.Stream(context.Background(), "KV_network")
	if err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "entries expired", func() bool {
		info, err := stream.Info(context.Background())
		return err == nil && info.State.Msgs == 0
	})
	put(t, kv, "vpc.a.route.r9", route{CIDR: "fresh"})
	got, w := resumeEvents(t, js, vpcs("a"), cp)
	want := []string{
		`put vpc.a.route.r9 prev= unknown=false`,
		`delete vpc.a.route.r0 prev={"cidr":"v1","next_hop":""} unknown=true`,
		`delete vpc.a.route.r1 prev={"cidr":"v1","next_hop":""} unknown=true`,
		`delete vpc.a.route.r2 prev={"cidr":"v1","next_hop":""} unknown=true`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := w.Stats(); s.Resume != "relist" {
		t.Errorf("Resume = %q, want relist", s.Resume)
	}
}

// A watcher resumed with wider scopes than its checkpoint re-lists: the
// delta alone would miss the new scope's existing keys.
func TestResumeWithWiderScopesRelists(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a.route.r1", route{CIDR: "a"})
	put(t, kv, "vpc.b.route.r1", route{CIDR: "b"})
	cp := checkpointOf(t, js, vpcs("a"))
	got, w := resumeEvents(t, js, vpcs("a", "b"), cp)
	if want := []string{`put vpc.b.route.r1 prev= unknown=false`}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if s := w.Stats(); s.Resume != "relist" {
		t.Errorf("Resume = %q, want relist", s.Resume)
	}
}

// checkpointOf runs a watcher until synced and returns its checkpoint.
func checkpointOf(t *testing.T, js jetstream.JetStream, scopes kvwatchimpl.Scopes) kvwatchimpl.Checkpoint {
	t.Helper()
	w, _, _ := startCached(t, js, scopes, newRecorder())
	defer w.Stop()
	cp, err := w.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

// resumeEvents starts a watcher from cp and returns the events it
// delivered until synced, as "op key prev unknown".
func resumeEvents(t *testing.T, js jetstream.JetStream, scopes kvwatchimpl.Scopes, cp kvwatchimpl.Checkpoint) ([]string, *kvwatchimpl.Watcher) {
	t.Helper()
	var got []string
	routes := kvwatchimpl.Bind(&routeKind, func(ev kvwatch.Event[routeKey, route]) {
		prev := ""
		if ev.HasPrev {
			b, _ := json.Marshal(ev.Prev)
			prev = string(b)
		}
		got = append(got, fmt.Sprintf("%s %s prev=%s unknown=%v", ev.Op, ev.Key, prev, ev.FinalStateUnknown))
	})
	w, err := kvwatchimpl.Start(context.Background(), js, &network, scopes,
		[]kvwatchimpl.AnyBinding{routes, kvwatchimpl.Bind(&vpcKind, nil)}, kvwatchimpl.Resume(cp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)
	return got, w // got is complete: synced comes after the last initial event, on the same goroutine
}

// Checkpoints taken while writes go on are consistent: a watcher resumed
// from one sees only revisions after it, and ends equal to the bucket.
func TestCheckpointUnderConcurrentWrites(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 50)
	w1, _, _ := startCached(t, js, vpcs("a"), newRecorder())
	stop := overwrite(t, kv, []string{"vpc.a.route.r1", "vpc.a.route.r2", "vpc.a.route.r60"})
	waitRevision(t, w1, w1.Stats().LastRevision+50)
	cp, err := w1.Checkpoint()
	w1.Stop()
	if err != nil {
		t.Fatal(err)
	}
	second := newRecorder()
	routes, configs, bindings := networkBindings(second)
	w2, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings,
		kvwatchimpl.Resume(cp))
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	waitSynced(t, w2)
	stop()
	last, err := kv.Put(context.Background(), "vpc.a", []byte(`{"name":"end"}`))
	if err != nil {
		t.Fatal(err)
	}
	waitRevision(t, w2, last)
	events, _ := second.snapshot()
	for _, e := range events {
		if e.Revision <= cp.Revision {
			t.Fatalf("resumed watcher delivered revision %d, at or before its checkpoint %d", e.Revision, cp.Revision)
		}
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, "a"); !slices.Equal(got, want) {
		t.Errorf("cache after resume under writes\n%v\nwant\n%v", got, want)
	}
}

// Stats show progress during the initial read, by direct get and by the
// consumer: while the handler holds the first initial event, the watcher
// is not synced, and entries are known to be pending on the server or
// queued for the handler.
func TestStatsShowInitialProgress(t *testing.T) {
	for _, path := range []string{"direct-get-listing", "consumer"} {
		t.Run(path, func(t *testing.T) {
			js, kv := setup(t)
			writeKeys(t, kv, "a", 1200)
			if path != "consumer" {
				ballast(t, js, 2400)
			}
			release := make(chan struct{})
			// Release the handler on every way out, a failed wait included:
			// the deferred Stop waits for it.
			unblock := sync.OnceFunc(func() { close(release) })
			first := true
			routes := kvwatchimpl.Bind(&routeKind, func(ev kvwatch.Event[routeKey, route]) {
				if first {
					first = false
					<-release
				}
			})
			w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{routes, kvwatchimpl.Bind(&vpcKind, nil)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			defer unblock()
			kvwatchtest.Eventually(t, 10*time.Second, "pending or queued entries reported", func() bool {
				s := w.Stats()
				return !s.Synced && s.Pending+s.Queued > 0
			})
			unblock()
			waitSynced(t, w)
			if s := w.Stats(); s.Pending != 0 || s.Kinds["Route"].Cached != 1200 || s.InitialState != path {
				t.Errorf("after sync: %+v", s)
			}
		})
	}
}

// A logger given with WithLogger receives structured records, such as one
// for each skipped entry.
func TestLoggerReceivesSkippedEntries(t *testing.T) {
	js, kv := setup(t)
	kv.PutString(context.Background(), "vpc.a.route.bad", "not json")
	var logs strings.Builder
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"),
		[]kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)}, kvwatch.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, w)
	w.Stop()
	for _, want := range []string{`msg="kvwatch: skipped"`, `vpc.a.route.bad`, `msg="kvwatch: synced"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs.String())
		}
	}
}
