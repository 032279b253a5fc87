package fleetkv_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/nats-io/nats.go/jetstream"
)

// Generated keys round-trip, and parsers say why a key does not match.
func TestGeneratedKeys(t *testing.T) {
	k := fleetkv.FirewallRuleKey{VPC: "blue", Priority: 18446744073709551615}
	if s := k.String(); s != "vpc.blue.firewall.18446744073709551615" {
		t.Fatalf("String = %q", s)
	}
	if got, err := fleetkv.ParseFirewallRuleKey(k.String()); err != nil || got != k {
		t.Fatalf("Parse(String()) = %+v, %v", got, err)
	}
	for key, why := range map[string]string{
		"vpc.blue.firewall.007":                  "canonical",
		"vpc.blue.firewall.-1":                   "not a uint64",
		"vpc.blue.firewall.18446744073709551616": "not a uint64",
		"vpc.blue.firewall":                      "has 3 tokens, want 4",
		"vpc.blue.route.1":                       `token 3 is "route", want "firewall"`,
	} {
		_, err := fleetkv.ParseFirewallRuleKey(key)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseFirewallRuleKey(%q) = %v, want an error saying %q", key, err, why)
		}
	}
	if r, err := fleetkv.ParseRouteKey("vpc.a.route.r-1"); err != nil || r != (fleetkv.RouteKey{VPC: "a", RouteID: "r-1"}) {
		t.Errorf("ParseRouteKey = %+v, %v", r, err)
	}
}

// The generated watcher delivers typed events of every kind and keeps
// typed caches; the generated client refuses keys that would address
// another key.
func TestGeneratedWatcher(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kv := kvwatchtest.Bucket(t, js, "network")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := fleetkv.NewNetworkBucket(kv)
	if _, err := b.PutVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: "a"}, fleetkv.VPCConfig{Name: "alpha"}); err != nil {
		t.Fatal(err)
	}

	rules := make(chan fleetkv.FirewallRuleEvent, 10)
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{
		OnFirewallRule: func(ev fleetkv.FirewallRuleEvent) { rules <- ev },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if v, ok := w.VPCConfigCache().Get(fleetkv.VPCConfigKey{VPC: "a"}); !ok || v.Name != "alpha" {
		t.Fatalf("cache has %+v, %v", v, ok)
	}
	key := fleetkv.FirewallRuleKey{VPC: "a", Priority: 7}
	rev, err := b.PutFirewallRule(ctx, key, fleetkv.FirewallRule{Action: "allow", Port: 443})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-rules:
		if ev.Key != key || ev.Value.Port != 443 || ev.Op != kvwatch.OpPut || ev.Revision != rev || ev.Initial {
			t.Fatalf("event = %+v", ev)
		}
	case <-ctx.Done():
		t.Fatal("no firewall rule event")
	}
	if item, err := b.GetFirewallRule(ctx, key); err != nil || item.Value.Port != 443 || item.Revision != rev {
		t.Fatalf("Get = %+v, %v", item, err)
	}

	for _, bad := range []fleetkv.RouteKey{{VPC: "a.b", RouteID: "r"}, {VPC: "*", RouteID: "r"}, {VPC: "a", RouteID: ""}} {
		if _, err := b.PutRoute(ctx, bad, fleetkv.Route{}); err == nil {
			t.Errorf("PutRoute(%+v) accepted", bad)
		}
	}
	other := kvwatchtest.Bucket(t, js, "other")
	if _, err := fleetkv.NewNetworkBucket(other).PutVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: "a"}, fleetkv.VPCConfig{}); err == nil {
		t.Error("writing network entries into bucket other was accepted")
	}
	if _, err := b.GetRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "none"}); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("GetRoute of a missing key = %v, want ErrKeyNotFound", err)
	}
}

// Scope values are checked before anything is sent.
func TestGeneratedScopesRejectWildcards(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kvwatchtest.Bucket(t, js, "network")
	_, err := fleetkv.WatchNetwork(context.Background(), js, fleetkv.NetworkScopes{VPC: []string{"a", ">"}}, fleetkv.NetworkHandlers{})
	if !errors.Is(err, kvwatch.ErrInvalidScope) {
		t.Fatalf("err = %v, want ErrInvalidScope", err)
	}
}
