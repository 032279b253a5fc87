package kvwatchimpl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// This file holds a hand-written bucket description shaped like generated
// code (bucket "network": routes and VPC configs, scoped by VPC or by one
// route), and a recorder of the events a watcher delivers.

type routeKey struct{ VPC, RouteID string }

func (k routeKey) String() string { return "vpc." + k.VPC + ".route." + k.RouteID }

var routeTemplate = kvwatchimpl.MustTemplate("vpc.{vpc}.route.{route_id}")

func parseRouteKey(key string) (routeKey, error) {
	var p [2]string
	if err := routeTemplate.Split(key, p[:]); err != nil {
		return routeKey{}, err
	}
	return routeKey{VPC: p[0], RouteID: p[1]}, nil
}

type route struct {
	CIDR    string `json:"cidr"`
	NextHop string `json:"next_hop"`
}

type vpcKey struct{ VPC string }

func (k vpcKey) String() string { return "vpc." + k.VPC }

var vpcTemplate = kvwatchimpl.MustTemplate("vpc.{vpc}")

func parseVPCKey(key string) (vpcKey, error) {
	var p [1]string
	if err := vpcTemplate.Split(key, p[:]); err != nil {
		return vpcKey{}, err
	}
	return vpcKey{VPC: p[0]}, nil
}

type vpcConfig struct {
	Name string `json:"name"`
}

var (
	routeKind = kvwatchimpl.Kind[routeKey, route]{Name: "Route", Key: routeTemplate,
		ParseKey: parseRouteKey, FormatKey: routeKey.String, Codec: kvwatchimpl.JSON[route]{}}
	vpcKind = kvwatchimpl.Kind[vpcKey, vpcConfig]{Name: "VPCConfig", Key: vpcTemplate,
		ParseKey: parseVPCKey, FormatKey: vpcKey.String, Codec: kvwatchimpl.JSON[vpcConfig]{}}
	network = kvwatchimpl.BucketSpec{Bucket: "network", Scopes: []kvwatchimpl.ScopeSpec{
		{Name: "VPC", Prefix: "vpc.{vpc}"},
		{Name: "Route", Prefix: "vpc.{vpc}.route.{route_id}"},
	}}
)

// vpcs returns scope values for VPCs.
func vpcs(names ...string) kvwatchimpl.Scopes {
	var s kvwatchimpl.Scopes
	for _, n := range names {
		s.Values = append(s.Values, kvwatchimpl.ScopeValue{Scope: 0, Params: []string{n}})
	}
	return s
}

// got is one delivered event, flattened for assertions.
type got struct {
	Kind      string
	Key       string
	Op        kvwatch.Op
	Value     string // JSON of the value
	Prev      string // JSON of the previous value, "" if none
	Revision  uint64
	Initial   bool
	LeftScope bool // a delete SetScopes delivered for a key it no longer watches
	Synced    bool // the watcher reported synced before this event
}

// recorder collects events and errors from one watcher.
type recorder struct {
	mu     sync.Mutex
	events []got
	errs   []error
	synced bool
	wake   chan struct{}
}

func newRecorder() *recorder { return &recorder{wake: make(chan struct{}, 1)} }

func recordEvent[K interface {
	comparable
	fmt.Stringer
}, V any](r *recorder, kind string) func(kvwatch.Event[K, V]) {
	return func(ev kvwatch.Event[K, V]) {
		value, _ := json.Marshal(ev.Value)
		var prev []byte
		if ev.HasPrev {
			prev, _ = json.Marshal(ev.Prev)
		}
		r.mu.Lock()
		r.events = append(r.events, got{Kind: kind, Key: ev.Key.String(), Op: ev.Op, Value: string(value),
			Prev: string(prev), Revision: ev.Revision, Initial: ev.Initial, LeftScope: ev.LeftScope, Synced: r.synced})
		r.mu.Unlock()
		r.poke()
	}
}

func (r *recorder) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *recorder) options() []kvwatch.Option {
	return []kvwatch.Option{
		kvwatchimpl.OnSynced(func() { r.mu.Lock(); r.synced = true; r.mu.Unlock(); r.poke() }),
		kvwatchimpl.OnError(func(err error) { r.mu.Lock(); r.errs = append(r.errs, err); r.mu.Unlock(); r.poke() }),
	}
}

// snapshot returns a copy of what was recorded so far.
func (r *recorder) snapshot() ([]got, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]got(nil), r.events...), append([]error(nil), r.errs...)
}

// waitFor waits until cond holds on the recorded events, or fails the test
// after 10s.
func (r *recorder) waitFor(t *testing.T, what string, cond func(events []got, errs []error) bool) []got {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		events, errs := r.snapshot()
		if cond(events, errs) {
			return events
		}
		select {
		case <-r.wake:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; got %d events: %+v, errors: %v", what, len(events), events, errs)
		}
	}
}

// hasKey reports whether events contain key with op.
func hasKey(events []got, key string, op kvwatch.Op) bool {
	for _, e := range events {
		if e.Key == key && e.Op == op {
			return true
		}
	}
	return false
}

// startNetwork starts a watcher on the network bucket with both kinds
// recorded by r.
func startNetwork(t *testing.T, js jetstream.JetStream, scopes kvwatchimpl.Scopes, r *recorder, opts ...kvwatch.Option) *kvwatchimpl.Watcher {
	t.Helper()
	bindings := []kvwatchimpl.AnyBinding{
		kvwatchimpl.Bind(&routeKind, recordEvent[routeKey, route](r, "Route")),
		kvwatchimpl.Bind(&vpcKind, recordEvent[vpcKey, vpcConfig](r, "VPCConfig")),
	}
	w, err := kvwatchimpl.Start(context.Background(), js, &network, scopes, bindings, append(r.options(), opts...)...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(w.Stop)
	return w
}

// startCached starts a watcher on scopes, with opts, whose bindings record
// into r and keep caches, returned for inspection, and waits until it is
// synced. The watcher is stopped when the test ends.
func startCached(t *testing.T, js jetstream.JetStream, scopes kvwatchimpl.Scopes, r *recorder, opts ...kvwatch.Option) (*kvwatchimpl.Watcher, *kvwatchimpl.Binding[routeKey, route], *kvwatchimpl.Binding[vpcKey, vpcConfig]) {
	t.Helper()
	routes, configs, bindings := networkBindings(r)
	w, err := kvwatchimpl.Start(context.Background(), js, &network, scopes, bindings, append(r.options(), opts...)...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)
	return w, routes, configs
}

// updateStream changes the network bucket's stream configuration with
// change, and fails the test if the server refuses it.
func updateStream(t *testing.T, js jetstream.JetStream, change func(*jetstream.StreamConfig)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, "KV_network")
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	change(&cfg)
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// disableDirectGet turns direct get off on the network bucket's stream,
// as a server that does not offer it would have it.
func disableDirectGet(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	updateStream(t, js, func(cfg *jetstream.StreamConfig) { cfg.AllowDirect = false })
}

// put writes v as JSON under key.
func put(t *testing.T, kv jetstream.KeyValue, key string, v any) uint64 {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(context.Background(), key, data)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return rev
}

// waitSynced waits up to 30s for w to be synced and its handlers to have
// run every initial event (and what came since, when it is quiet): a
// bound for a failure, wide enough for a state of thousands of keys read
// under the race detector on a loaded machine (it once took more than
// 10 s there).
func waitSynced(t *testing.T, w *kvwatchimpl.Watcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatalf("WaitSynced: %v", err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the handlers caught up", func() bool { return w.Stats().Queued == 0 })
}

// setup starts a server with an empty "network" bucket.
func setup(t *testing.T) (jetstream.JetStream, jetstream.KeyValue) {
	t.Helper()
	js := kvwatchtest.JetStream(t)
	return js, kvwatchtest.Bucket(t, js, "network")
}

// containsAll reports whether s contains every one of parts.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// routeOpLog returns a route binding that logs each event as "op key
// unknown=FinalStateUnknown", and a function returning the log so far.
func routeOpLog() (*kvwatchimpl.Binding[routeKey, route], func() []string) {
	var mu sync.Mutex
	var log []string
	b := kvwatchimpl.Bind(&routeKind, func(ev kvwatch.Event[routeKey, route]) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, fmt.Sprintf("%s %s unknown=%v", ev.Op, ev.Key, ev.FinalStateUnknown))
	})
	return b, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(log)
	}
}

// ballast writes n keys outside every scope of the network bucket, so that
// the scopes of a test hold a small share of it and a large state is read
// by direct get, not by the consumer (readpath.go).
func ballast(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	for i := range n {
		if _, err := js.PublishAsync(fmt.Sprintf("$KV.network.ballast.k%d", i), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatalf("writing %d keys of ballast: not done within 30 s", n)
	}
}

// connectURLs connects to urls (comma-separated, as nats.Connect takes
// them) with opts; the connection closes at the end of the test.
func connectURLs(t *testing.T, urls string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(urls, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}
