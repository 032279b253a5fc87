package kvwatchimpl_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// An atomic batch of the typed client is applied to a watcher's caches at
// once, on the hub and on an edge's mirror alike: no cache reader sees
// part of it. The mirror drops the server's marks of a batch
// (Nats-Batch-*); the typed client's own marks survive it. Before, a
// watcher of the mirror applied a batch entry by entry.
func TestBatchIsAppliedAtOnceOnHubAndEdge(t *testing.T) {
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	_, hub := f.ConnectHub(t)
	mustAllowBatches(t, hub)
	hubKV, err := hub.KeyValue(context.Background(), "network")
	if err != nil {
		t.Fatal(err)
	}
	old := put(t, hubKV, "vpc.a.route.old", route{CIDR: "old"})
	f.WaitMirrored(t, f.Edges[0], old)
	_, onEdge := f.Edges[0].Connect(t)

	type watched struct {
		name string
		w    *kvwatchimpl.Watcher
		mu   sync.Mutex
		seen []string // the batch's keys in the caches after each apply that changed them
	}
	watch := func(name string, js jetstream.JetStream) *watched {
		v := &watched{name: name}
		routes := kvwatchimpl.Bind(&routeKind, nil)
		last := ""
		w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{routes, kvwatchimpl.Bind(&vpcKind, nil)},
			kvwatchimpl.WithApplyHook(func() {
				state := ""
				for _, id := range []string{"r1", "r2", "old"} {
					if _, ok := routes.Cache().Get(routeKey{VPC: "a", RouteID: id}); ok {
						state += id + " "
					}
				}
				if state != last {
					last = state
					v.mu.Lock()
					v.seen = append(v.seen, state)
					v.mu.Unlock()
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		waitSynced(t, w)
		v.w = w
		return v
	}
	watchers := []*watched{watch("hub", hub), watch("edge", onEdge)}

	b := kvwatchimpl.NewBatch(hub, hubKV)
	kvwatchimpl.BatchPut(b, &routeKind, routeKey{VPC: "a", RouteID: "r1"}, route{CIDR: "r1"})
	kvwatchimpl.BatchPut(b, &routeKind, routeKey{VPC: "a", RouteID: "r2"}, route{CIDR: "r2"})
	kvwatchimpl.BatchDelete(b, &routeKind, routeKey{VPC: "a", RouteID: "old"}, false)
	kvwatchimpl.BatchPut(b, &vpcKind, vpcKey{VPC: "b"}, vpcConfig{Name: "out of scope, and last"})
	rev, err := b.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range watchers {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := v.w.WaitRevision(ctx, rev) // the batch's last write is out of scope
		cancel()
		if err != nil {
			t.Fatalf("on the %s: %v", v.name, err)
		}
		v.mu.Lock()
		seen := fmt.Sprint(v.seen)
		v.mu.Unlock()
		// The state after sync, then the whole batch at once.
		if want := "[old  r1 r2 ]"; seen != want {
			t.Errorf("on the %s, the caches went through %s, want %s", v.name, seen, want)
		}
	}
}
