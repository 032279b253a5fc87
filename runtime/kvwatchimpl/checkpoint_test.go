package kvwatchimpl_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// A checkpoint pairs entries with their kind (EntriesOf, WithEntries):
// one built in another order than the watcher's bindings resumes each
// kind into its own cache, and one holding a kind the watcher does not
// watch is refused at Start, never restored into another kind's cache.
func TestCheckpointEntriesAreMatchedByKind(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{Name: "a"})
	put(t, kv, "vpc.a.route.r1", route{CIDR: "10.0.0.0/8"})
	w1, routes1, configs1 := startCached(t, js, vpcs("a"), newRecorder())
	cp, err := w1.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	w1.Stop()
	want := cacheState(routes1, configs1)

	routeEntries, configEntries := kvwatchimpl.EntriesOf(cp, &routeKind), kvwatchimpl.EntriesOf(cp, &vpcKind)
	if len(routeEntries) != 1 || len(configEntries) != 1 {
		t.Fatalf("EntriesOf: %d routes, %d configs; want 1 and 1", len(routeEntries), len(configEntries))
	}
	other := kvwatchimpl.Kind[routeKey, route]{Name: "Other", Key: routeTemplate,
		ParseKey: parseRouteKey, FormatKey: routeKey.String, Codec: kvwatchimpl.JSON[route]{}}
	if got := kvwatchimpl.EntriesOf(cp, &other); got != nil {
		t.Errorf("EntriesOf(a kind the checkpoint lacks) = %v, want nil", got)
	}

	reversed := kvwatchimpl.Checkpoint{Revision: cp.Revision, Filters: cp.Filters, StreamCreated: cp.StreamCreated}
	kvwatchimpl.WithEntries(&reversed, &vpcKind, configEntries)
	kvwatchimpl.WithEntries(&reversed, &routeKind, routeEntries)
	r := newRecorder()
	routes2, configs2, bindings := networkBindings(r)
	w2, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings, append(r.options(), kvwatchimpl.Resume(reversed))...)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	waitSynced(t, w2)
	if got := cacheState(routes2, configs2); !slices.Equal(got, want) {
		t.Errorf("caches resumed from a checkpoint in another order\n%v\nwant\n%v", got, want)
	}
	if s := w2.Stats(); s.Resume != "delta" {
		t.Errorf("Resume = %q, want delta", s.Resume)
	}
	if events, _ := r.snapshot(); len(events) != 0 {
		t.Errorf("a resume with nothing changed delivered %d events", len(events))
	}

	foreign := kvwatchimpl.Checkpoint{Revision: cp.Revision, Filters: cp.Filters, StreamCreated: cp.StreamCreated}
	kvwatchimpl.WithEntries(&foreign, &other, routeEntries)
	_, _, bindings = networkBindings(newRecorder())
	w3, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings, kvwatchimpl.Resume(foreign))
	if err == nil {
		w3.Stop()
		t.Fatal("Start resumed from a checkpoint with a kind the watcher does not watch")
	}
	if !strings.Contains(err.Error(), "kind Other") {
		t.Errorf("Start: %v, want an error naming kind Other", err)
	}
}
