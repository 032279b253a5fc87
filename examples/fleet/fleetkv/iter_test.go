package fleetkv_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// A loop over a watcher's events sees what handlers would: the cache as
// initial events, the sync mark, then changes in order, switched on by
// kind; breaking out ends its registration and the watcher goes on.
func TestEventsLoop(t *testing.T) {
	ctx, js, b := openNetwork(t)
	b.PutVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: "a"}, fleetkv.VPCConfig{Name: "alpha"})
	b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r1"}, fleetkv.Route{CIDR: "v1"})
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for ev := range w.Events(ctx) {
		switch ev := ev.(type) {
		case fleetkv.VPCConfigEvent:
			got = append(got, fmt.Sprintf("vpc %s %s initial=%v", ev.Key.VPC, ev.Value.Name, ev.Initial))
		case fleetkv.RouteEvent:
			got = append(got, fmt.Sprintf("route %s %s %s initial=%v", ev.Op, ev.Key.RouteID, ev.Value.CIDR, ev.Initial))
		case kvwatch.SyncedEvent:
			got = append(got, "synced")
			b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r2"}, fleetkv.Route{CIDR: "v2"})
			b.DeleteRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r1"})
		}
		if len(got) == 5 {
			break
		}
	}
	// The replay goes kind by kind, each in key order.
	want := []string{"vpc a alpha initial=true", "route put r1 v1 initial=true", "synced",
		"route put r2 v2 initial=false", "route delete r1  initial=false"}
	if !slices.Equal(got, want) {
		t.Errorf("events\n%q\nwant\n%q", got, want)
	}
	// The loop's registration is gone: the watcher goes on without it.
	rev, _ := b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r3"}, fleetkv.Route{})
	if err := w.WaitRevision(ctx, rev); err != nil {
		t.Fatalf("the watcher after the loop ended: %v", err)
	}
}

// Cache iterators go in key order, by scope too, with values of the
// loop's own, and stop when the loop does.
func TestCacheIterators(t *testing.T) {
	ctx, js, b := openNetwork(t)
	for _, vpc := range []string{"b", "a"} {
		for _, r := range []string{"r2", "r1"} {
			b.PutRoute(ctx, fleetkv.RouteKey{VPC: vpc, RouteID: r}, fleetkv.Route{CIDR: vpc + r, Tags: []string{"t"}})
		}
	}
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a", "b"}}, fleetkv.NetworkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k, v := range w.RouteCache().All() {
		keys = append(keys, k.String())
		v.Tags[0] = "changed" // the loop's own copy
	}
	if want := []string{"vpc.a.route.r1", "vpc.a.route.r2", "vpc.b.route.r1", "vpc.b.route.r2"}; !slices.Equal(keys, want) {
		t.Errorf("All = %q, want %q", keys, want)
	}
	if r, _ := w.RouteCache().Get(fleetkv.RouteKey{VPC: "a", RouteID: "r1"}); r.Tags[0] != "t" {
		t.Error("a loop's change reached the cache")
	}
	n := 0
	for range w.RouteCache().All() {
		n++
		break
	}
	if n != 1 {
		t.Errorf("a loop that breaks ran %d times", n)
	}
	inB, err := w.RouteCache().AllIn(fleetkv.NetworkScopes{VPC: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	keys = nil
	for k := range inB {
		keys = append(keys, k.String())
	}
	if want := []string{"vpc.b.route.r1", "vpc.b.route.r2"}; !slices.Equal(keys, want) {
		t.Errorf("AllIn(b) = %q, want %q", keys, want)
	}
	if _, err := w.RouteCache().AllIn(fleetkv.NetworkScopes{VPC: []string{"*"}}); !errors.Is(err, kvwatch.ErrInvalidScope) {
		t.Errorf("AllIn with a wildcard = %v", err)
	}
}
