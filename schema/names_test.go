package schema

import "testing"

func TestCamelCase(t *testing.T) {
	for in, want := range map[string]string{
		"vpc": "VPC", "route_id": "RouteID", "next_hop": "NextHop", "vpcID": "VPCID", "node-state": "NodeState",
		"http_url": "HTTPURL", "type": "Type", "x": "X", "already_Camel": "AlreadyCamel", "ip4": "Ip4", "lag_ms": "LagMs",
	} {
		if got := camelCase(in); got != want {
			t.Errorf("camelCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"valeu", "value", 1}, {"prefx", "prefix", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"same", "same", 0}} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if got := didYouMean("codex", []string{"codec", "doc"}); got != ` (did you mean "codec"?)` {
		t.Errorf("didYouMean = %q", got)
	}
	if got := didYouMean("vpc", []string{"codec", "value"}); got != "" {
		t.Errorf("didYouMean suggested %q for a word close to nothing", got)
	}
}

func TestCanonicalInt(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "7": true, "-7": true, "007": false, "-0": false, "+1": false, "": false, "-": false,
		"9223372036854775807": true, "9223372036854775808": false, "-9223372036854775808": true, "1x": false,
	} {
		if got := canonicalInt(s, true); got != want {
			t.Errorf("canonicalInt(%q, signed) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{"-1": false, "18446744073709551615": true, "18446744073709551616": false} {
		if got := canonicalInt(s, false); got != want {
			t.Errorf("canonicalInt(%q, unsigned) = %v, want %v", s, got, want)
		}
	}
}
