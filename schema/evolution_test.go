package schema_test

import (
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

const evolutionBase = `version: 1
package: p
revision: 3
compat:
  accept:
    - change: field-type Route.metric
      reason: every writer wrote whole numbers
buckets:
  - bucket: network
    doc: The network.
    keys:
      - name: Route
        key: vpc.{vpc}.route.{id}
        value: Route
    scopes:
      - name: VPC
        prefix: vpc.{vpc}
types:
  Route:
    doc: A route.
    fields:
      cidr: string
      metric: int
`

func mustLoad(t *testing.T, src string) *schema.Schema {
	t.Helper()
	s, err := schema.Load("kvwatch.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRevisionAndAccepts(t *testing.T) {
	s := mustLoad(t, evolutionBase)
	if s.Revision != 3 {
		t.Errorf("Revision = %d, want 3", s.Revision)
	}
	if len(s.Accepts) != 1 || s.Accepts[0].Change != "field-type Route.metric" || s.Accepts[0].Reason != "every writer wrote whole numbers" || s.Accepts[0].Pos.Line != 6 {
		t.Errorf("Accepts = %+v", s.Accepts)
	}
	for _, c := range []struct{ from, to, want string }{
		{"revision: 3", "revision: 0", "kvwatch.yaml:3:11: revision must be at least 1"},
		{"revision: 3", "revision: three", "kvwatch.yaml:3:11: revision must be a whole number"},
		{"      reason: every writer wrote whole numbers\n", "", `kvwatch.yaml:6:7: an accepted change: missing required field "reason"`},
		{"reason: every writer wrote whole numbers", "reason: ' '", "kvwatch.yaml:7:15: reason is blank"},
		{"  accept:", "  acept:", `unknown field "acept" in compat (did you mean "accept"?)`},
	} {
		_, err := schema.Load("kvwatch.yaml", []byte(strings.Replace(evolutionBase, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q -> %q: error %v, want %q", c.from, c.to, err, c.want)
		}
	}
}

func TestFingerprint(t *testing.T) {
	base := mustLoad(t, evolutionBase).Buckets[0].Fingerprint()
	if len(base) != 16 {
		t.Fatalf("fingerprint %q: want 16 hex digits", base)
	}
	same := []struct{ from, to string }{
		{"doc: The network.", "doc: Another doc."},
		{"revision: 3", "revision: 4"},
		{"    doc: A route.\n", ""},
	}
	for _, c := range same {
		if got := mustLoad(t, strings.Replace(evolutionBase, c.from, c.to, 1)).Buckets[0].Fingerprint(); got != base {
			t.Errorf("%q -> %q changed the fingerprint", c.from, c.to)
		}
	}
	differ := []struct{ from, to string }{
		{"metric: int", "metric: int64"},
		{"metric: int", "metric_v2: int"},
		{"key: vpc.{vpc}.route.{id}", "key: vpc.{vpc}.routes.{id}"},
		{"        value: Route\n", "        value: Route\n        codec: json\n        doc: x\n"}, // codec json is the default: same
		{"prefix: vpc.{vpc}", "prefix: vpc.{vpc}\n      - name: Route\n        prefix: vpc.{vpc}.route.{id}"},
		{"    doc: The network.\n", "    doc: The network.\n    config:\n      history: 5\n"},
	}
	for i, c := range differ {
		got := mustLoad(t, strings.Replace(evolutionBase, c.from, c.to, 1)).Buckets[0].Fingerprint()
		if wantSame := i == 3; (got == base) != wantSame {
			t.Errorf("%q -> %q: fingerprint %s, base %s (same wanted: %t)", c.from, c.to, got, base, wantSame)
		}
	}
}
