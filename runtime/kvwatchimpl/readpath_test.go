package kvwatchimpl_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// A state too large for one answer whose scopes hold most of the bucket
// is delivered by the watcher's consumer on the whole bucket
// (readpath.go), keys of other scopes dropped; once synced, the watcher
// goes on with one consumer on its own filters, and never holds two.
// Scopes holding a small share of the bucket are read by direct get.
func TestStateReadChoosesTheConsumerForMostOfTheBucket(t *testing.T) {
	for _, c := range []struct {
		name   string
		scopes []string
		path   string
	}{
		{"most of the bucket", []string{"a", "b", "c"}, "consumer"},
		{"a small share", []string{"d"}, "direct-get-listing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			js, kv := setup(t)
			// vpc a, b, c: 1,000 routes each; d: 1,100; e: 100; and each
			// VPC's config.
			var ws []write
			for _, v := range []string{"a", "b", "c", "d", "e"} {
				ws = append(ws, write{key: "vpc." + v, op: "PUT", value: `{"name":"` + v + `"}`})
				n := map[string]int{"d": 1100, "e": 100}[v]
				if n == 0 {
					n = 1000
				}
				for i := range n {
					ws = append(ws, write{key: fmt.Sprintf("vpc.%s.route.r%d", v, i), op: "PUT", value: fmt.Sprintf(`{"cidr":"%s%d"}`, v, i)})
				}
			}
			publishAll(t, js, ws)
			r := newRecorder()
			w, routes, configs := startCached(t, js, vpcs(c.scopes...), r)
			if got := w.Stats().InitialState; got != c.path {
				t.Fatalf("InitialState = %q, want %q", got, c.path)
			}
			events, _ := r.snapshot()
			n := 0
			for _, e := range events {
				if !slices.Contains(c.scopes, e.Key[4:5]) {
					t.Fatalf("an event of a key out of scope: %+v", e)
				}
				n++
			}
			want := 1000*len(c.scopes) + 100*b2i(c.scopes[0] == "d")
			if n != want+len(c.scopes) {
				t.Errorf("%d events at sync, want one per key in scope", n)
			}
			// Both caches hold their kind's keys in scope: the route cache
			// got room for the state before it was read, and the config
			// cache, holding a few keys, gave its room back once it was
			// (cache.go).
			if got := routes.Cache().Len(); got != want {
				t.Errorf("%d routes cached at sync, want %d", got, want)
			}
			for _, v := range c.scopes {
				if cfg, ok := configs.Cache().Get(vpcKey{VPC: v}); !ok || cfg.Name != v {
					t.Errorf("the config of VPC %s is cached as %+v (%v)", v, cfg, ok)
				}
			}
			if got := configs.Cache().Len(); got != len(c.scopes) {
				t.Errorf("%d configs cached at sync, want %d", got, len(c.scopes))
			}
			// The consumer now is the watcher's, on its filters, and the
			// only one; a write in scope comes, one out of scope does not.
			kvwatchtest.Eventually(t, 10*time.Second, "one consumer, on the watcher's filters", func() bool {
				names := consumerNames(t, js)
				if len(names) != 1 {
					return false
				}
				info, err := js.Consumer(context.Background(), "KV_network", names[0])
				if err != nil {
					return false
				}
				filters := info.CachedInfo().Config.FilterSubjects
				if f := info.CachedInfo().Config.FilterSubject; f != "" {
					filters = []string{f}
				}
				return slices.Equal(filters, w.Filters())
			})
			put(t, kv, "vpc.e.route.x", route{CIDR: "out"})
			key := "vpc." + c.scopes[0] + ".route.x"
			put(t, kv, key, route{CIDR: "in"})
			r.waitFor(t, key, func(events []got, _ []error) bool { return hasKey(events, key, kvwatch.OpPut) })
			if events, _ := r.snapshot(); hasKey(events, "vpc.e.route.x", kvwatch.OpPut) {
				t.Error("a write out of scope was delivered")
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// With every read choosing (kvwatchimpl.WithReadPath("choose"), as the
// robustness test runs), small buckets take both ways too: scopes holding
// most of the bucket are read by the consumer, a small share by direct
// get.
func TestChooseEveryReadTakesBothWays(t *testing.T) {
	js, _ := setup(t)
	var ws []write
	for _, v := range []string{"a", "b", "c", "d"} {
		for i := range 20 {
			ws = append(ws, write{key: fmt.Sprintf("vpc.%s.route.r%d", v, i), op: "PUT", value: `{"cidr":"x"}`})
		}
	}
	publishAll(t, js, ws)
	for scopes, path := range map[string]string{"abcd": "consumer", "abc": "consumer", "a": "direct-get"} {
		var names []string
		for _, c := range scopes {
			names = append(names, string(c))
		}
		w := startNetwork(t, js, vpcs(names...), newRecorder(), kvwatchimpl.WithReadPath("choose"))
		waitSynced(t, w)
		if got := w.Stats().InitialState; got != path {
			t.Errorf("scopes %v: InitialState = %q, want %q", names, got, path)
		}
		if n := len(w.Filters()); n != 2*len(names) {
			t.Errorf("scopes %v: %d filters", names, n)
		}
		w.Stop()
	}
}
