package fleetkv_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
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
	if _, err := b.GetRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "none"}); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("GetRoute of a missing key = %v, want ErrKeyNotFound", err)
	}
}

// Scope values are checked before anything is sent: the connection
// publishes no message for a rejected watch, and does for a valid one.
func TestGeneratedScopesRejectWildcards(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kvwatchtest.Bucket(t, js, "network")
	sent := js.Conn().Stats().OutMsgs
	_, err := fleetkv.WatchNetwork(context.Background(), js, fleetkv.NetworkScopes{VPC: []string{"a", ">"}}, fleetkv.NetworkHandlers{})
	if !errors.Is(err, kvwatch.ErrInvalidScope) {
		t.Fatalf("err = %v, want ErrInvalidScope", err)
	}
	if n := js.Conn().Stats().OutMsgs - sent; n != 0 {
		t.Fatalf("%d messages sent for a rejected watch", n)
	}
	w, err := fleetkv.WatchNetwork(context.Background(), js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if js.Conn().Stats().OutMsgs == sent {
		t.Fatal("a valid watch sent nothing either: the count proves nothing")
	}
}

// Cache reads are copies: modifying what a read returned, or what a
// handler received, never changes the cache. Lists go by scope or by
// partial key.
func TestGeneratedCacheHandsOutCopies(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kv := kvwatchtest.Bucket(t, js, "network")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := fleetkv.NewNetworkBucket(kv)
	for _, vpc := range []string{"a", "b"} {
		if _, err := b.PutVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: vpc}, fleetkv.VPCConfig{Name: vpc, Labels: map[string]string{"team": "net"}}); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"r1", "r2"} {
			if _, err := b.PutRoute(ctx, fleetkv.RouteKey{VPC: vpc, RouteID: id}, fleetkv.Route{CIDR: vpc + id, Tags: []string{"x"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	liveHandled := make(chan struct{}, 1)
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a", "b"}}, fleetkv.NetworkHandlers{
		OnRoute: func(ev fleetkv.RouteEvent) {
			ev.Value.Tags[0] = "changed by the handler" // the handler owns its value
			if !ev.Initial {
				select {
				case liveHandled <- struct{}{}:
				default:
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	key := fleetkv.RouteKey{VPC: "a", RouteID: "r1"}
	got, _ := w.RouteCache().Get(key)
	if got.Tags[0] != "x" {
		t.Fatalf("a handler's change reached the cache: %v", got.Tags)
	}
	got.Tags[0] = "changed by a reader"
	cfg, _ := w.VPCConfigCache().Get(fleetkv.VPCConfigKey{VPC: "a"})
	cfg.Labels["team"] = "changed by a reader"
	if again, _ := w.RouteCache().Get(key); again.Tags[0] != "x" {
		t.Fatalf("a reader's change reached the cache: %v", again.Tags)
	}
	if again, _ := w.VPCConfigCache().Get(fleetkv.VPCConfigKey{VPC: "a"}); again.Labels["team"] != "net" {
		t.Fatalf("a reader's change reached the cache: %v", again.Labels)
	}

	inB, err := w.RouteCache().In(fleetkv.NetworkScopes{VPC: []string{"b"}})
	if err != nil || len(inB) != 2 || inB[0].Key.RouteID != "r1" || inB[1].Key.RouteID != "r2" || inB[0].Key.VPC != "b" {
		t.Fatalf("In(VPC b) = %+v, %v", inB, err)
	}
	if _, err := w.RouteCache().In(fleetkv.NetworkScopes{VPC: []string{"*"}}); !errors.Is(err, kvwatch.ErrInvalidScope) {
		t.Fatalf("In(VPC *) = %v, want ErrInvalidScope", err)
	}
	r2s := w.RouteCache().ListFunc(func(k fleetkv.RouteKey) bool { return k.RouteID == "r2" })
	if len(r2s) != 2 || r2s[0].Key.VPC != "a" || r2s[1].Key.VPC != "b" {
		t.Fatalf("ListFunc(r2) = %+v", r2s)
	}
	if all := w.RouteCache().List(); len(all) != 4 {
		t.Fatalf("List = %d entries, want 4", len(all))
	}

	// A live event's handler owns its value too.
	if _, err := b.PutRoute(ctx, key, fleetkv.Route{CIDR: "live", Tags: []string{"y"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-liveHandled:
	case <-ctx.Done():
		t.Fatal("no live route event")
	}
	if again, _ := w.RouteCache().Get(key); again.CIDR != "live" || again.Tags[0] != "y" {
		t.Fatalf("after a live event whose handler changed its value, the cache has %+v", again)
	}
}

// A typed checkpoint survives JSON, and a watcher resumed from it gets
// only the changes made meanwhile.
func TestGeneratedCheckpointResume(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kv := kvwatchtest.Bucket(t, js, "network")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := fleetkv.NewNetworkBucket(kv)
	rule := fleetkv.FirewallRuleKey{VPC: "a", Priority: 10}
	if _, err := b.PutFirewallRule(ctx, rule, fleetkv.FirewallRule{Action: "allow", Port: 22}); err != nil {
		t.Fatal(err)
	}
	w1, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w1.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	cp, err := w1.Checkpoint()
	w1.Stop()
	if err != nil {
		t.Fatal(err)
	}
	saved, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	var restored fleetkv.NetworkCheckpoint
	if err := json.Unmarshal(saved, &restored); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "new"}, fleetkv.Route{CIDR: "10.0.0.0/8"}); err != nil {
		t.Fatal(err)
	}
	// The handlers run on their own goroutine: OnSynced, after the
	// initial events, tells the test they are all in.
	var events []string
	handled := make(chan struct{})
	w2, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{
		OnRoute:        func(ev fleetkv.RouteEvent) { events = append(events, "route "+ev.Key.String()) },
		OnFirewallRule: func(ev fleetkv.FirewallRuleEvent) { events = append(events, "rule "+ev.Key.String()) },
		OnSynced:       func() { close(handled) },
	}, restored.Resume())
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	select {
	case <-handled:
	case <-ctx.Done():
		t.Fatal("the resumed watcher's OnSynced never ran")
	}
	if len(events) != 1 || events[0] != "route vpc.a.route.new" {
		t.Fatalf("resumed watcher delivered %v, want only the new route", events)
	}
	if v, ok := w2.FirewallRuleCache().Get(rule); !ok || v.Port != 22 {
		t.Fatalf("restored rule = %+v, %v", v, ok)
	}
	if w2.Stats().Resume != "delta" {
		t.Errorf("Resume = %q, want delta", w2.Stats().Resume)
	}
}

// The schema fixes keys and types, not the environment: the generated
// watcher and client work on bucket network-staging as on network, the
// watcher with kvwatch.WithBucket, the client on the handle it is given,
// and a write's revision is waited for with WaitRevision.
func TestGeneratedCodeOnABucketNamedAtRunTime(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	prod := fleetkv.NewNetworkBucket(kvwatchtest.Bucket(t, js, "network"))
	staging := fleetkv.NewNetworkBucket(kvwatchtest.Bucket(t, js, "network-staging"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	key := fleetkv.RouteKey{VPC: "a", RouteID: "r1"}
	if _, err := prod.PutRoute(ctx, key, fleetkv.Route{CIDR: "prod"}); err != nil {
		t.Fatal(err)
	}
	if _, err := staging.PutRoute(ctx, key, fleetkv.Route{CIDR: "staging"}); err != nil {
		t.Fatal(err)
	}
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{}, kvwatch.WithBucket("network-staging"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.RouteCache().Get(key); got.CIDR != "staging" {
		t.Fatalf("cached %q after sync, want staging's value", got.CIDR)
	}
	rev, err := staging.PutRoute(ctx, key, fleetkv.Route{CIDR: "staging v2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := prod.PutRoute(ctx, key, fleetkv.Route{CIDR: "prod v2"}); err != nil {
		t.Fatal(err)
	}
	if err := w.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if got, _ := w.RouteCache().Get(key); got.CIDR != "staging v2" {
		t.Errorf("cached %q after WaitRevision(%d), want staging's write", got.CIDR, rev)
	}
	if s := w.Stats(); s.Puts != 2 {
		t.Errorf("%d puts delivered, want staging's 2 (none of network's)", s.Puts)
	}
}
