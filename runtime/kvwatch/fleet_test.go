package kvwatch_test

import (
	"context"
	"slices"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/nats-io/nats.go/jetstream"
)

// A watcher on an edge server watches the edge's mirror of the hub's
// bucket (named like it) unchanged: the initial state, the hub's live
// writes, and writes made on the edge through the mirror-bound handle
// (which go to the hub); the edge's mirror holds its one consumer, the
// hub none.
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

	edgeKV, err := js.KeyValue(context.Background(), "network")
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
