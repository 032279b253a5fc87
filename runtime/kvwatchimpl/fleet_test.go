package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// A watcher on an edge server watches the edge's mirror of the hub's
// bucket (named like it) unchanged: the initial state, the hub's live
// writes, and writes made on the edge through the mirror-bound handle
// (which go to the hub); the edge's mirror holds its one consumer, the
// hub none. The watcher's connection has the _LOCAL inbox prefix, which
// the edges' leaf remotes deny (docs/fleet.md): its replies stay on the
// edge.
func TestWatchAnEdgeMirror(t *testing.T) {
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	_, hub := f.ConnectHub(t)
	hubKV, err := hub.KeyValue(context.Background(), "network")
	if err != nil {
		t.Fatal(err)
	}
	writeKeys(t, hubKV, "a", 5)
	last := put(t, hubKV, "vpc.b.route.r1", route{CIDR: "b"})
	edge := f.Edges[0]
	f.WaitMirrored(t, edge, last)

	_, js := edge.Connect(t)
	r := newRecorder()
	w, routes, configs := startCached(t, js, vpcs("a"), r)
	if n := routes.Cache().Len(); n != 5 {
		t.Fatalf("%d routes after sync, want 5", n)
	}
	live := put(t, hubKV, "vpc.a.route.live", route{CIDR: "from the hub"})
	waitRevision(t, w, live)

	// A node writes on its second connection (docs/fleet.md, A node): the
	// watcher's has the _LOCAL inbox prefix, which the hub cannot answer.
	_, writer := edge.ConnectWriter(t)
	edgeKV, err := writer.KeyValue(context.Background(), "network")
	if err != nil {
		t.Fatal(err)
	}
	mine := put(t, edgeKV, "vpc.a.route.mine", route{CIDR: "from the edge"})
	waitRevision(t, w, mine)
	if got, want := cacheState(routes, configs), bucketState(t, hubKV, "a"); !slices.Equal(got, want) {
		t.Fatalf("cache on the edge\n%v\nwant the hub's\n%v", got, want)
	}
	if n := kvwatchtest.Consumers(t, js, "network"); n != 1 {
		t.Errorf("%d consumers on the edge's mirror, want 1", n)
	}
	if n := kvwatchtest.Consumers(t, hub, "network"); n != 0 {
		t.Errorf("%d consumers on the hub's bucket, want 0", n)
	}
}

// startOnEdge starts a watcher of VPC a on the edge, recording into r,
// and waits until it is synced.
func startOnEdge(t *testing.T, js jetstream.JetStream, r *recorder, opts ...kvwatch.Option) (*kvwatchimpl.Watcher, *kvwatchimpl.Binding[routeKey, route]) {
	t.Helper()
	routes, _, bindings := networkBindings(r)
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings, append(r.options(), opts...)...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)
	return w, routes
}

// The schema's bucket name is not the environment's: WithBucket watches
// network-staging, and an edge's mirror of network named network-edge,
// whose messages keep the origin's subjects ($KV.network.…), which the
// watcher then reads.
func TestWatchABucketNamedAtRunTime(t *testing.T) {
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	_, hub := f.ConnectHub(t)
	staging := kvwatchtest.Bucket(t, hub, "network-staging")
	put(t, staging, "vpc.a.route.r1", route{CIDR: "staging"})
	r := newRecorder()
	w, routes := startOnEdge(t, hub, r, kvwatch.WithBucket("network-staging"))
	if v, ok := routes.Cache().Get(routeKey{VPC: "a", RouteID: "r1"}); !ok || v.CIDR != "staging" || w.Bucket() != "network-staging" {
		t.Fatalf("network-staging: cached %+v (%v), bucket %s", v, ok, w.Bucket())
	}

	hubKV, err := hub.KeyValue(context.Background(), "network")
	if err != nil {
		t.Fatal(err)
	}
	last := put(t, hubKV, "vpc.a.route.r1", route{CIDR: "hub"})
	_, edge := f.Edges[0].Connect(t)
	ctx := context.Background()
	if _, err := edge.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "network-edge",
		Mirror: &jetstream.StreamSource{Name: "network", Domain: kvwatchtest.HubDomain}}); err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 20*time.Second, "network-edge mirrored", func() bool {
		s, err := edge.Stream(ctx, "KV_network-edge")
		return err == nil && s.CachedInfo().State.LastSeq >= last
	})
	r2 := newRecorder()
	w2, routes2 := startOnEdge(t, edge, r2, kvwatch.WithBucket("network-edge"))
	if v, ok := routes2.Cache().Get(routeKey{VPC: "a", RouteID: "r1"}); !ok || v.CIDR != "hub" {
		t.Fatalf("network-edge: cached %+v (%v), want the hub's value", v, ok)
	}
	if got := w2.Filters(); !slices.Equal(got, []string{"$KV.network.vpc.a", "$KV.network.vpc.a.>"}) {
		t.Errorf("filters on the differently named mirror: %v, want the origin's subjects", got)
	}
	m := w2.Stats().Mirror
	if m == nil || m.Origin != "KV_network" || m.External != "$JS.hub.API" {
		t.Errorf("Stats().Mirror = %+v, want the origin KV_network across the hub's domain", m)
	}
	// Written through the mirror's handle (to the hub), on the node's
	// writer connection, seen on the edge.
	_, writer := f.Edges[0].ConnectWriter(t)
	edgeKV, err := writer.KeyValue(ctx, "network-edge")
	if err != nil {
		t.Fatal(err)
	}
	rev := put(t, edgeKV, "vpc.a.route.r2", route{CIDR: "through the edge"})
	waitRevision(t, w2, rev)
	if _, err := kvwatchimpl.Start(ctx, edge, &network, vpcs("a"), nil, kvwatch.WithBucket("no.dots")); err == nil || !strings.Contains(err.Error(), `"no.dots"`) {
		t.Errorf("WithBucket(no.dots) = %v, want an error naming it", err)
	}
}

// Cutting the edge's link to the hub leaves its mirror unchanged, and the
// watcher says so: Stats().Mirror shows it stale (Mirror.Lag stays 0 in
// an outage, only the time since the origin was heard from grows), a
// warning is logged, and both end once the link is back, which is logged
// at INFO (good news needs no one's attention).
func TestMirrorStalenessIsReported(t *testing.T) {
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	edge := f.Edges[0]
	_, js := edge.Connect(t)
	logs := &lineLog{}
	w, _ := startOnEdge(t, js, newRecorder(), kvwatch.WithMirrorStaleAfter(time.Second), kvwatch.WithLogger(slog.New(logs)))
	if m := w.Stats().Mirror; m == nil || m.Stale {
		t.Fatalf("Stats().Mirror = %+v before the cut, want a healthy mirror", m)
	}
	edge.Cut()
	kvwatchtest.Eventually(t, 10*time.Second, "the mirror stale", func() bool {
		m := w.Stats().Mirror
		return m != nil && m.Stale && m.SinceHeard > time.Second
	})
	if !strings.Contains(logs.text(), "WARN kvwatch: the mirror has not heard from its origin") {
		t.Errorf("no warning logged:\n%s", logs.text())
	}
	edge.Restore()
	kvwatchtest.Eventually(t, 60*time.Second, "the mirror healthy again", func() bool {
		m := w.Stats().Mirror
		return m != nil && !m.Stale
	})
	if !strings.Contains(logs.text(), "INFO kvwatch: the mirror hears from its origin again") {
		t.Errorf("no recovery logged at INFO:\n%s", logs.text())
	}
}

// A mirror that allows no direct get (made by a raw CreateStream: neither
// AllowDirect nor MirrorDirect) answers none: the watcher reads its state
// through the consumer at once, without waiting out request timeouts.
func TestMirrorWithoutDirectGet(t *testing.T) {
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	_, hub := f.ConnectHub(t)
	hubKV, err := hub.KeyValue(context.Background(), "network")
	if err != nil {
		t.Fatal(err)
	}
	last := put(t, hubKV, "vpc.a.route.r1", route{CIDR: "hub"})
	_, edge := f.Edges[0].Connect(t)
	ctx := context.Background()
	if _, err := edge.CreateStream(ctx, jetstream.StreamConfig{Name: "KV_raw", MaxMsgsPerSubject: 1,
		Mirror: &jetstream.StreamSource{Name: "KV_network", Domain: kvwatchtest.HubDomain}}); err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 20*time.Second, "KV_raw mirrored", func() bool {
		s, err := edge.Stream(ctx, "KV_raw")
		return err == nil && s.CachedInfo().State.LastSeq >= last
	})
	start := time.Now()
	w, routes := startOnEdge(t, edge, newRecorder(), kvwatch.WithBucket("raw"), kvwatch.WithRequestTimeout(3*time.Second))
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("synced after %v: a request timeout waited out?", took)
	}
	if s := w.Stats(); s.InitialState != "consumer" {
		t.Errorf("InitialState = %q, want consumer", s.InitialState)
	}
	if v, ok := routes.Cache().Get(routeKey{VPC: "a", RouteID: "r1"}); !ok || v.CIDR != "hub" {
		t.Errorf("cached %+v (%v)", v, ok)
	}
}

// The consumer limit of an edge's mirror (1,000 by default, as every
// stream's) is reached: the error names the mirror and both fixes.
func TestConsumerLimitOnAnEdgeMirror(t *testing.T) {
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	_, js := f.Edges[0].Connect(t)
	err := syncAtConsumerLimit(t, js)
	if !errors.Is(err, kvwatch.ErrConsumerLimit) || !containsAll(err.Error(), "mirror", "KV_network", "MaxConsumers", "default_max_consumers") {
		t.Fatalf("WaitSynced = %v, want ErrConsumerLimit naming the mirror and the fixes", err)
	}
}

// Read-your-writes on an edge: a node writes through the mirror-bound
// handle (to the hub) and waits with WaitRevision until its own watcher
// has the write; the cache then holds it, every time. A write out of the
// watcher's scopes is waited for too (the mirror must hold it), without
// an event to wait for.
func TestReadYourWritesOnAnEdge(t *testing.T) {
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	_, js := f.Edges[0].Connect(t)
	w, routes := startOnEdge(t, js, newRecorder())
	_, writer := f.Edges[0].ConnectWriter(t)
	kv, err := writer.KeyValue(context.Background(), "network")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 50 {
		want := fmt.Sprintf("v%d", i)
		rev := put(t, kv, "vpc.a.route.r1", route{CIDR: want})
		if err := w.WaitRevision(ctx, rev); err != nil {
			t.Fatalf("WaitRevision(%d): %v", rev, err)
		}
		if got, _ := routes.Cache().Get(routeKey{VPC: "a", RouteID: "r1"}); got.CIDR != want {
			t.Fatalf("write %d: the cache holds %q after WaitRevision, want %q", i, got.CIDR, want)
		}
	}
	out := put(t, kv, "vpc.b.route.r1", route{CIDR: "out of scope"})
	if err := w.WaitRevision(ctx, out); err != nil {
		t.Fatalf("WaitRevision of a write out of scope: %v", err)
	}
	if got := w.Stats().LastRevision; got < out {
		t.Errorf("LastRevision %d after WaitRevision(%d)", got, out)
	}
	// A revision the stream does not hold yet is waited for until ctx ends.
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	if err := w.WaitRevision(short, out+1000); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitRevision past the stream's end = %v, want the context's error", err)
	}
}
