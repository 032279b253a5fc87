package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// The proof this project exists for: two scopes, one consumer; writes under
// both arrive typed; a write under a third scope never arrives.
func TestTwoScopesOneConsumer(t *testing.T) {
	js, kv := setup(t)
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a", "b"), r)
	waitSynced(t, w)

	if n := kvwatchtest.Consumers(t, js, "network"); n != 1 {
		t.Fatalf("consumers on KV_network = %d, want 1", n)
	}
	put(t, kv, "vpc.a.route.r1", route{CIDR: "10.0.0.0/24", NextHop: "gw-a"})
	put(t, kv, "vpc.c.route.r9", route{CIDR: "10.9.0.0/24"}) // third scope
	put(t, kv, "vpc.b", vpcConfig{Name: "bravo"})
	put(t, kv, "vpc.b.route.r2", route{CIDR: "10.1.0.0/24", NextHop: "gw-b"})

	r.waitFor(t, "writes under both scopes", func(ev []got, _ []error) bool {
		return hasKey(ev, "vpc.b.route.r2", kvwatch.OpPut)
	})
	if n := kvwatchtest.Consumers(t, js, "network"); n != 1 {
		t.Fatalf("consumers on KV_network after writes = %d, want 1", n)
	}
	if got := w.Filters(); fmt.Sprint(got) != "[$KV.network.vpc.a $KV.network.vpc.a.> $KV.network.vpc.b $KV.network.vpc.b.>]" {
		t.Errorf("filters = %v", got)
	}
	// The stream is ordered: vpc.c.route.r9 was written before the last
	// awaited write, so had it been delivered it would be here already.
	// Stop joins every goroutine of the watcher: what any other path might
	// still have delivered is in the events counted below.
	w.Stop()
	events, _ := r.snapshot()
	if hasKey(events, "vpc.c.route.r9", kvwatch.OpPut) {
		t.Fatalf("write under an unwatched scope was delivered: %+v", events)
	}
	want := []got{
		{Kind: "Route", Key: "vpc.a.route.r1", Op: kvwatch.OpPut, Value: `{"cidr":"10.0.0.0/24","next_hop":"gw-a"}`},
		{Kind: "VPCConfig", Key: "vpc.b", Op: kvwatch.OpPut, Value: `{"name":"bravo"}`},
		{Kind: "Route", Key: "vpc.b.route.r2", Op: kvwatch.OpPut, Value: `{"cidr":"10.1.0.0/24","next_hop":"gw-b"}`},
	}
	if len(events) != len(want) {
		t.Fatalf("got %d events, want %d: %+v", len(events), len(want), events)
	}
	for i, e := range events {
		if e.Kind != want[i].Kind || e.Key != want[i].Key || e.Op != want[i].Op || e.Value != want[i].Value || e.Initial {
			t.Errorf("event %d = %+v, want %+v (live)", i, e, want[i])
		}
	}
}

// Empty scopes watch nothing: no consumer, synced at once, no events.
func TestEmptyScopesWatchNothing(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{Name: "alpha"})
	r := newRecorder()
	w := startNetwork(t, js, kvwatchimpl.Scopes{}, r)
	if !w.Synced() {
		// Synced is set by the watcher goroutine right after Start.
		waitSynced(t, w)
	}
	put(t, kv, "vpc.a.route.r1", route{CIDR: "10.0.0.0/24"})
	if n := kvwatchtest.Consumers(t, js, "network"); n != 0 {
		t.Fatalf("consumers = %d, want 0", n)
	}
	if len(w.Filters()) != 0 {
		t.Fatalf("filters = %v, want none", w.Filters())
	}
	// Nothing can deliver events (no consumer exists, checked above);
	// Stop joins every goroutine of the watcher, so anything a broken
	// implementation delivered anyway is recorded by now.
	w.Stop()
	if events, errs := r.snapshot(); len(events) != 0 || len(errs) != 0 {
		t.Fatalf("events %+v, errors %v; want none", events, errs)
	}
}

// Overlapping scopes are accepted, served by one consumer, and every change
// is delivered once.
func TestOverlappingScopes(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a.route.r1", route{CIDR: "10.0.0.0/24"})
	r := newRecorder()
	scopes := vpcs("a", "a")                                                                             // the same VPC twice
	scopes.Values = append(scopes.Values, kvwatchimpl.ScopeValue{Scope: 1, Params: []string{"a", "r1"}}) // narrower
	w := startNetwork(t, js, scopes, r)
	waitSynced(t, w)
	if n := kvwatchtest.Consumers(t, js, "network"); n != 1 {
		t.Fatalf("consumers = %d, want 1", n)
	}
	put(t, kv, "vpc.a.route.r1", route{CIDR: "10.0.1.0/24"})
	put(t, kv, "vpc.a.route.r2", route{CIDR: "10.0.2.0/24"})
	events := r.waitFor(t, "r2", func(ev []got, _ []error) bool { return hasKey(ev, "vpc.a.route.r2", kvwatch.OpPut) })
	counts := map[string]int{}
	for _, e := range events {
		counts[fmt.Sprintf("%s@%d", e.Key, e.Revision)]++
	}
	for k, n := range counts {
		if n != 1 {
			t.Errorf("%s delivered %d times", k, n)
		}
	}
	if len(events) != 3 { // r1 initial, r1 update, r2
		t.Fatalf("got %d events, want 3: %+v", len(events), events)
	}
	if got := fmt.Sprint(w.Filters()); got != "[$KV.network.vpc.a $KV.network.vpc.a.>]" {
		t.Errorf("filters = %s", got)
	}
}

// Scope values that would widen the watch are rejected with a typed error
// before anything is sent to the server: the connection publishes no
// message (the JetStream API requests ClientTrace sees, nor direct gets,
// which bypass it), while a valid Start afterwards does.
func TestScopeInjectionRejected(t *testing.T) {
	js, _ := setup(t)
	var requests atomic.Int32
	traced, err := jetstream.New(js.Conn(), jetstream.WithClientTrace(&jetstream.ClientTrace{
		RequestSent: func(string, []byte) { requests.Add(1) },
	}))
	if err != nil {
		t.Fatal(err)
	}
	sentBefore := js.Conn().Stats().OutMsgs
	for _, bad := range []string{"", ".", "*", ">", "a.b", "a.*", "a b", " a", "a\t", "ü", "a>", "a,b"} {
		bindings := []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)}
		w, err := kvwatchimpl.Start(context.Background(), traced, &network, vpcs("ok", bad), bindings)
		if err == nil {
			w.Stop()
			t.Errorf("scope value %q accepted", bad)
			continue
		}
		var se *kvwatch.ScopeError
		if !errors.As(err, &se) || !errors.Is(err, kvwatch.ErrInvalidScope) || se.Value != bad || se.Param != "vpc" {
			t.Errorf("scope value %q: error %v (%T), want *ScopeError for vpc", bad, err, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests reached the server", n)
	}
	if n := js.Conn().Stats().OutMsgs - sentBefore; n != 0 {
		t.Fatalf("%d messages sent to the server", n)
	}
	if n := kvwatchtest.Consumers(t, js, "network"); n != 0 {
		t.Fatalf("consumers = %d, want 0", n)
	}
	// The positive control: a valid Start is seen by both counters.
	sentBefore = js.Conn().Stats().OutMsgs
	w, err := kvwatchimpl.Start(context.Background(), traced, &network, vpcs("ok"),
		[]kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitSynced(t, w)
	if requests.Load() == 0 || js.Conn().Stats().OutMsgs == sentBefore {
		t.Fatalf("a valid Start was not seen: %d requests traced, %d messages sent; the counters prove nothing",
			requests.Load(), js.Conn().Stats().OutMsgs-sentBefore)
	}
}

// Synced comes after exactly the initial keys while a writer keeps
// overwriting them and adding new ones: by direct get, every initial key
// is delivered (flagged initial) before synced, and nothing after synced
// is flagged initial, on both ways of reading the state: by direct get,
// and by the consumer (a stream without direct get), whose catch-up the
// stream's message API seals. Before that seal, a key overwritten while
// the consumer delivered the state came just after synced.
func TestSyncedExactUnderConcurrentWrites(t *testing.T) {
	for _, path := range []string{"direct-get", "consumer"} {
		t.Run(path, func(t *testing.T) { syncedExactUnderConcurrentWrites(t, path) })
	}
}

func syncedExactUnderConcurrentWrites(t *testing.T, path string) {
	js, kv := setup(t)
	if path == "consumer" {
		disableDirectGet(t, js)
	}
	const initial = 300
	keys := make([]string, initial)
	for i := range initial {
		keys[i] = fmt.Sprintf("vpc.a.route.r%d", i)
		put(t, kv, keys[i], route{CIDR: fmt.Sprintf("10.0.%d.0/24", i)})
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var written atomic.Int64
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			key := fmt.Sprintf("vpc.a.route.r%d", i%initial)
			if i%3 == 0 {
				key = fmt.Sprintf("vpc.a.route.new%d", i)
			}
			if _, err := kv.Put(ctx, key, []byte(`{"cidr":"w"}`)); err == nil {
				written.Add(1)
			}
		}
	})
	kvwatchtest.Eventually(t, 5*time.Second, "writer running", func() bool { return written.Load() > 50 })

	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r)
	waitSynced(t, w)
	events, _ := r.snapshot()
	// Let the writer go on a little past sync, then stop it.
	kvwatchtest.Eventually(t, 5*time.Second, "writes after sync", func() bool {
		ev, _ := r.snapshot()
		return len(ev) > len(events)+20
	})
	cancel()
	wg.Wait()

	checkSyncedState(t, r, keys)
	if s := w.Stats(); !s.Synced || s.InitialState != path {
		t.Fatalf("Stats().Synced = %v, InitialState = %q; want true, %q", s.Synced, s.InitialState, path)
	}
}

// A key equal to a scope prefix (vpc.a for scope vpc=a) belongs to the
// scope, both in the initial state and live.
func TestKeyEqualToScopePrefix(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{Name: "alpha"})
	put(t, kv, "vpc.ab", vpcConfig{Name: "not a"}) // shares a string prefix, not a token prefix
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r)
	waitSynced(t, w)
	put(t, kv, "vpc.a", vpcConfig{Name: "alpha2"})
	events := r.waitFor(t, "live vpc.a", func(ev []got, _ []error) bool { return len(ev) >= 2 })
	if len(events) != 2 || events[0].Key != "vpc.a" || !events[0].Initial || events[1].Key != "vpc.a" || events[1].Initial {
		t.Fatalf("events = %+v, want vpc.a initial then live", events)
	}
	if events[1].Prev != `{"name":"alpha"}` {
		t.Errorf("live event Prev = %q, want the initial value", events[1].Prev)
	}
}

// A scope covers the keys of the templates it is a prefix of: with no
// template equal to the prefix, the key vpc.a is not watched (neither
// delivered nor reported), while a key under vpc.a. that no template
// matches is in scope and reported. (docs/schema.md, Scopes: a filter for vpc.a
// itself would double the consumer's filters for keys no template makes.)
func TestScopeCoversTheKeysOfItsTemplates(t *testing.T) {
	js, kv := setup(t)
	routesOnly := kvwatchimpl.BucketSpec{Bucket: "network", Scopes: []kvwatchimpl.ScopeSpec{{Name: "VPC", Prefix: "vpc.{vpc}"}}}
	put(t, kv, "vpc.a", vpcConfig{Name: "no template is vpc.{vpc} here"})
	put(t, kv, "vpc.a.route.r1", route{CIDR: "in"})
	put(t, kv, "vpc.a.other", route{CIDR: "in scope, no template"})
	r := newRecorder()
	w, err := kvwatchimpl.Start(context.Background(), js, &routesOnly, vpcs("a"),
		[]kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, recordEvent[routeKey, route](r, "Route"))}, r.options()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)
	put(t, kv, "vpc.a", vpcConfig{Name: "again"})
	last := put(t, kv, "vpc.a.route.r2", route{CIDR: "live"})
	waitRevision(t, w, last)
	events, errs := r.snapshot()
	var keys []string
	for _, e := range events {
		keys = append(keys, e.Key)
	}
	if want := []string{"vpc.a.route.r1", "vpc.a.route.r2"}; !slices.Equal(keys, want) {
		t.Errorf("events for %v, want %v", keys, want)
	}
	var unknown []string
	for _, err := range errs {
		var u *kvwatch.UnknownKeyError
		if errors.As(err, &u) {
			unknown = append(unknown, u.Key)
		}
	}
	if want := []string{"vpc.a.other"}; !slices.Equal(unknown, want) {
		t.Errorf("unknown keys reported: %v, want %v (errors %v)", unknown, want, errs)
	}
	if got := fmt.Sprint(w.Filters()); got != "[$KV.network.vpc.a.>]" {
		t.Errorf("filters %s, want only the keys under vpc.a.", got)
	}
}
