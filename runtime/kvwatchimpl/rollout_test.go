package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// Tests of a schema rolling out over a fleet, as the runtime sees it: a
// newer schema adds a kind (Policy) and a field of a value (a route's
// weight); nodes running its code and nodes running the old code watch
// the same bucket side by side.

// policyTemplate is the key of the kind the newer schema adds; the old
// code (networkBindings) does not know it.
var policyTemplate = kvwatchimpl.MustTemplate("vpc.{vpc}.policy.{policy_id}")

var policyKind = kvwatchimpl.Kind[string, string]{Name: "Policy", Key: policyTemplate,
	ParseKey: func(key string) (string, error) {
		var p [2]string
		if err := policyTemplate.Split(key, p[:]); err != nil {
			return "", err
		}
		return key, nil
	},
	FormatKey: func(k string) string { return k },
	Codec:     kvwatchimpl.String{}}

// An old watcher in scope of a new kind's keys reports each of them once,
// at its first write, and at most MaxUnknownKeysReported of them (then one
// more, with Last), to OnError and to its logger alike; it counts every
// write, and loses nothing of the kinds it knows. More distinct keys than
// the bound, each written several times: before the watcher starts (its
// initial read), live, after its consumer was recreated (the delta from
// its revision), and read again when a scope is added back. A route's
// value with a field the old code does not know decodes; a value that
// does not decode is still reported every time. A new watcher, whose code
// knows the kind, sees every write of it beside the old one.
func TestRolloutOfANewKind(t *testing.T) {
	js, kv := setup(t)
	ctx := context.Background()
	const distinct = kvwatch.MaxUnknownKeysReported + 20
	first := map[string]uint64{} // a policy key's first revision
	var order []string           // policy keys, as first written
	writePolicy := func(i, round int) uint64 {
		key := fmt.Sprintf("vpc.a.policy.p%03d", i)
		rev, err := kv.PutString(ctx, key, fmt.Sprintf("allow (round %d)", round))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := first[key]; !ok {
			first[key] = rev
			order = append(order, key)
		}
		return rev
	}
	routes := map[routeKey]route{} // the routes' current values
	var liveRoutes []uint64        // revisions of route writes after the watchers started
	writeRoute := func(i, round int) uint64 {
		k := routeKey{VPC: "a", RouteID: fmt.Sprintf("r%d", i)}
		v := route{CIDR: fmt.Sprintf("10.%d.%d.0/24", round, i)}
		rev, err := kv.Put(ctx, k.String(), fmt.Appendf(nil, `{"cidr":%q,"weight":%d}`, v.CIDR, round))
		if err != nil {
			t.Fatal(err)
		}
		routes[k] = v
		return rev
	}
	const before = 10
	for i := range before {
		writePolicy(i, 0)
	}
	writeRoute(0, 0)

	old, logged := newRecorder(), &lineLog{skipped: true}
	oldW, oldRoutes, _ := startCached(t, js, vpcs("a"), old, kvwatch.WithLogger(slog.New(logged)))
	var mu sync.Mutex
	policies := map[string]uint64{} // the new watcher's policy events per key
	newRec := newRecorder()
	newRoutes, _, bindings := networkBindings(newRec)
	newPolicies := kvwatchimpl.Bind(&policyKind, func(ev kvwatch.Event[string, string]) {
		mu.Lock()
		policies[ev.Key]++
		mu.Unlock()
	})
	newW, err := kvwatchimpl.Start(ctx, js, &network, vpcs("a"), append(bindings, newPolicies), newRec.options()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(newW.Stop)
	waitSynced(t, newW)

	var bad []uint64 // revisions of route values that do not decode
	for round := 1; round <= 3; round++ {
		if round == 3 {
			// The old watcher's consumer is recreated: it goes on from
			// its revision.
			name := oldW.Stats().Consumer
			if err := js.DeleteConsumer(ctx, "KV_network", name); err != nil {
				t.Fatal(err)
			}
			kvwatchtest.Eventually(t, 10*time.Second, "the consumer recreated", func() bool {
				c := oldW.Stats().Consumer
				return c != "" && c != name
			})
		}
		for i := range distinct {
			writePolicy(i, round)
			if i%20 == 0 {
				liveRoutes = append(liveRoutes, writeRoute(i/20, round))
			}
		}
		rev, err := kv.PutString(ctx, "vpc.a.route.bad", "not json")
		if err != nil {
			t.Fatal(err)
		}
		bad = append(bad, rev)
		waitRevision(t, oldW, rev)
		waitRevision(t, newW, rev)
	}
	// A scope removed and added back: the old watcher reads every key in
	// it again, the unknown ones and the bad value included.
	for _, scopes := range []kvwatchimpl.Scopes{vpcs("b"), vpcs("a")} {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if err := oldW.SetScopes(sctx, scopes); err != nil {
			t.Fatalf("SetScopes: %v", err)
		}
		cancel()
	}
	waitRevision(t, oldW, bad[len(bad)-1])

	events, errs := old.snapshot()
	var unknown []*kvwatch.UnknownKeyError
	var dataErrs []uint64
	for _, err := range errs {
		var u *kvwatch.UnknownKeyError
		var d *kvwatch.DataError
		switch {
		case errors.As(err, &u):
			unknown = append(unknown, u)
		case errors.As(err, &d):
			dataErrs = append(dataErrs, d.Revision)
		default:
			t.Errorf("old watcher: unexpected error %v", err)
		}
	}
	if len(unknown) != kvwatch.MaxUnknownKeysReported+1 {
		t.Errorf("old watcher: %d unknown keys reported, want %d", len(unknown), kvwatch.MaxUnknownKeysReported+1)
	}
	for i, u := range unknown[:min(len(unknown), len(order))] {
		if u.Key != order[i] || u.Revision != first[order[i]] || u.Last != (i == kvwatch.MaxUnknownKeysReported) {
			t.Errorf("unknown key report %d: %q at %d (last %v), want %q at %d, its first write (last %v)",
				i, u.Key, u.Revision, u.Last, order[i], first[order[i]], i == kvwatch.MaxUnknownKeysReported)
		}
	}
	if n := strings.Count(logged.text(), "matches no key template"); n != len(unknown) {
		t.Errorf("old watcher: %d unknown keys logged, %d reported to OnError: want the same", n, len(unknown))
	}
	s := oldW.Stats()
	// Every write is counted: the initial read, three rounds, the read of
	// the scope added back.
	if want := uint64(before + 3*distinct + distinct); s.UnknownKeys != want {
		t.Errorf("old watcher: Stats().UnknownKeys = %d, want %d", s.UnknownKeys, want)
	}
	// Every bad value is reported, the one read again too.
	if want := slices.Concat(bad, bad[len(bad)-1:]); fmt.Sprint(dataErrs) != fmt.Sprint(want) || s.DataErrors != uint64(len(want)) {
		t.Errorf("old watcher: data errors at %v (Stats().DataErrors %d), want at %v", dataErrs, s.DataErrors, want)
	}
	delivered := map[uint64]bool{}
	for _, e := range events {
		if e.Kind == "Route" && !e.Initial {
			delivered[e.Revision] = true
		}
	}
	for _, rev := range liveRoutes {
		if !delivered[rev] {
			t.Errorf("old watcher: the route write at %d was not delivered", rev)
		}
	}
	checkRoutes(t, "old watcher", oldRoutes, routes)

	_, errs = newRec.snapshot()
	for _, err := range errs {
		var d *kvwatch.DataError
		if !errors.As(err, &d) {
			t.Errorf("new watcher: unexpected error %v", err)
		}
	}
	if s := newW.Stats(); s.UnknownKeys != 0 || s.DataErrors != uint64(len(bad)) || s.Kinds["Policy"].Puts != before+3*distinct || s.Kinds["Policy"].Cached != distinct {
		t.Errorf("new watcher: stats %+v, want no unknown key, %d data errors, %d policy puts, %d cached", s, len(bad), before+3*distinct, distinct)
	}
	mu.Lock()
	for i, key := range order {
		want := uint64(3) // one a round
		if i < before {
			want++ // and the initial one
		}
		if policies[key] != want {
			t.Errorf("new watcher: %d events of %s, want %d", policies[key], key, want)
		}
	}
	mu.Unlock()
	checkRoutes(t, "new watcher", newRoutes, routes)
}

// checkRoutes compares a watcher's route cache with the routes written.
func checkRoutes(t *testing.T, who string, b *kvwatchimpl.Binding[routeKey, route], want map[routeKey]route) {
	t.Helper()
	got := map[routeKey]route{}
	for k, v := range b.Cache().All() {
		got[k] = v
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: route cache %v, want %v", who, got, want)
	}
}
