package fleetkv_test

import (
	"slices"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
)

// An index the schema declares follows every change: puts, updates that
// move an entry to another value, deletes, a value that no longer decodes,
// keys that leave the scopes.
func TestCacheIndexFollowsChanges(t *testing.T) {
	ctx, js, b := openNetwork(t)
	put := func(vpc, id, hop string) uint64 {
		rev, err := b.PutRoute(ctx, fleetkv.RouteKey{VPC: vpc, RouteID: id}, fleetkv.Route{CIDR: id, NextHop: hop})
		if err != nil {
			t.Fatal(err)
		}
		return rev
	}
	put("a", "r1", "h1")
	put("a", "r2", "h1")
	put("b", "r3", "h1")
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a", "b"}}, fleetkv.NetworkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	ids := func(hop string) []string {
		var out []string
		for _, e := range w.RouteCache().ByNextHop(hop) {
			out = append(out, e.Key.VPC+"/"+e.Key.RouteID)
		}
		return out
	}
	check := func(step string, hop string, want ...string) {
		t.Helper()
		if got := ids(hop); !slices.Equal(got, want) {
			t.Errorf("%s: ByNextHop(%s) = %q, want %q", step, hop, got, want)
		}
	}
	check("initial", "h1", "a/r1", "a/r2", "b/r3")
	put("a", "r2", "h2")
	b.DeleteRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r1"})
	b.KeyValue().Put(ctx, "vpc.b.route.r3", []byte("not json")) // leaves the cache
	rev := put("a", "r4", "h2")
	if err := w.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	check("after changes", "h1")
	check("after changes", "h2", "a/r2", "a/r4")
	if err := w.SetScopes(ctx, fleetkv.NetworkScopes{VPC: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	check("after a leaves the scopes", "h2")
	if got := w.RouteCache().ByNextHop("nowhere"); got != nil {
		t.Errorf("a value nobody has = %v", got)
	}
}
