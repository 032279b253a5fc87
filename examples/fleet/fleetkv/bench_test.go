package fleetkv_test

import (
	"testing"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
)

// Generated key parsing and formatting, the per-event cost of typed keys:
//
//	go test ./examples/fleet/fleetkv -run XXX -bench . -benchmem

func BenchmarkParseRouteKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fleetkv.ParseRouteKey("vpc.blue.route.r123"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRouteKeyString(b *testing.B) {
	k := fleetkv.RouteKey{VPC: "blue", RouteID: "r123"}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.String()
	}
}

func BenchmarkParseFirewallRuleKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fleetkv.ParseFirewallRuleKey("vpc.blue.firewall.1200"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFirewallRuleKeyString(b *testing.B) {
	k := fleetkv.FirewallRuleKey{VPC: "blue", Priority: 1200}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.String()
	}
}
