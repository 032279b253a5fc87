package kvwatchimpl_test

import (
	"fmt"
	"testing"
)

// Scopes of unequal size, the usual case (one large tenant beside small
// ones), are judged by what they hold together, not by a sample of one
// of them: 1,100 + 300 keys of a bucket of 4,000 (35%) are read by direct
// get, 200 + 2,200 (60%) by the consumer on the whole bucket.
func TestStateReadJudgesSkewedScopes(t *testing.T) {
	for _, c := range []struct {
		name  string
		sizes map[string]int // routes of each VPC; a and b are watched
		path  string
	}{
		{"35% of the keys, the large scope first", map[string]int{"a": 1100, "b": 300, "c": 2600}, "direct-get-listing"},
		{"60% of the keys, the small scope first", map[string]int{"a": 200, "b": 2200, "c": 1600}, "consumer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			js, _ := setup(t)
			var ws []write
			for _, v := range []string{"a", "b", "c"} {
				for i := range c.sizes[v] {
					ws = append(ws, write{key: fmt.Sprintf("vpc.%s.route.r%d", v, i), op: "PUT", value: fmt.Sprintf(`{"cidr":"%s%d"}`, v, i)})
				}
			}
			publishAll(t, js, ws)
			w, routes, _ := startCached(t, js, vpcs("a", "b"), newRecorder())
			if got := w.Stats().InitialState; got != c.path {
				t.Errorf("InitialState = %q, want %q", got, c.path)
			}
			if got, want := routes.Cache().Len(), c.sizes["a"]+c.sizes["b"]; got != want {
				t.Errorf("%d routes cached, want %d", got, want)
			}
			// What the server sent: the whole bucket, when the consumer
			// read it, the keys of other scopes included.
			if all := uint64(len(ws)); c.path == "consumer" && w.Stats().Received < all {
				t.Errorf("Received = %d after the consumer read the bucket's %d entries", w.Stats().Received, all)
			}
		})
	}
}
