package kvwatchprom_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchprom"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// quiet keeps the watchers' warnings about skipped entries out of the
// test output.
var quiet = kvwatch.WithLogger(slog.New(slog.DiscardHandler))

// watch starts a fleetkv watcher of the VPCs given, stopped when the test
// ends, and waits until it is synced.
func watch(t *testing.T, ctx context.Context, js jetstream.JetStream, h fleetkv.NetworkHandlers, vpcs []string, opts ...kvwatch.Option) *fleetkv.NetworkWatcher {
	t.Helper()
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: vpcs}, h, append([]kvwatch.Option{quiet}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	return w
}

// series gathers g and returns its samples whose name has prefix, one
// line each, `name{label="value",...} value` with the labels sorted by
// name, sorted. It fails the test if g fails (a pedantic registry checks
// every metric against its collector's descriptors), if a family has no
// help, or if a family's type does not follow from its name (counters end
// in _total, everything else is a gauge).
func series(t *testing.T, g prometheus.Gatherer, prefix string) []string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var out []string
	for _, mf := range mfs {
		name := mf.GetName()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if mf.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
		want := "GAUGE"
		if strings.HasSuffix(name, "_total") {
			want = "COUNTER"
		}
		if got := mf.GetType().String(); got != want {
			t.Errorf("%s is a %s, want a %s", name, got, want)
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(ls)
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			out = append(out, fmt.Sprintf("%s{%s} %g", name, strings.Join(ls, ","), v))
		}
	}
	slices.Sort(out)
	return out
}

// sample returns the value of the one sample of g named name whose labels
// include every one of labels (`name="value"` each), and fails the test
// unless there is exactly one.
func sample(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	var found []string
	for _, s := range series(t, g, name) {
		if strings.HasPrefix(s, name+"{") && containsAll(s, labels...) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s with %v: %q, want one sample", name, labels, found)
	}
	var v float64
	if _, err := fmt.Sscan(found[0][strings.LastIndexByte(found[0], ' ')+1:], &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// Every counter and gauge of a watcher has the value of its Stats, under
// the labels bucket and watcher (and kind and op): initial events and
// live ones, a delete and a purge, a value that does not decode, a key
// that matches no template, a handler panic. No mirror metric is sent for
// a bucket that is no mirror, and the metrics pass promlint.
func TestCollectorReportsAWatchersStats(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js := kvwatchtest.JetStream(t)
	kv := kvwatchtest.Bucket(t, js, "network")
	b, err := fleetkv.OpenNetworkBucket(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ uint64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.PutVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: "a"}, fleetkv.VPCConfig{Name: "alpha"}))
	must(b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r1"}, fleetkv.Route{CIDR: "10.0.1.0/24"}))
	must(b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r2"}, fleetkv.Route{CIDR: "10.0.2.0/24"}))
	must(b.PutRoute(ctx, fleetkv.RouteKey{VPC: "b", RouteID: "r1"}, fleetkv.Route{CIDR: "out of scope"}))

	c := kvwatchprom.NewCollector()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if got := series(t, reg, "kvwatch_"); len(got) != 0 {
		t.Fatalf("no watcher added, yet %q", got)
	}
	w := watch(t, ctx, js, fleetkv.NetworkHandlers{
		OnFirewallRule: func(fleetkv.FirewallRuleEvent) { panic("a handler's bug") },
	}, []string{"a"})
	if err := c.Add(w.Watcher, "routing"); err != nil {
		t.Fatal(err)
	}

	must(b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r3"}, fleetkv.Route{CIDR: "10.0.3.0/24"}))
	if err := b.DeleteRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if err := b.PurgeRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r2"}); err != nil {
		t.Fatal(err)
	}
	must(kv.Put(ctx, "vpc.a.route.bad", []byte("not json")))
	must(kv.Put(ctx, "vpc.a.other", []byte("{}")))
	rev, err := b.PutFirewallRule(ctx, fleetkv.FirewallRuleKey{VPC: "a", Priority: 10}, fleetkv.FirewallRule{Action: "allow"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the handlers caught up", func() bool { return w.Stats().Queued == 0 })

	l := func(extra string) string { return `{bucket="network",` + extra + `watcher="routing"}` }
	want := []string{
		"kvwatch_cached_entries" + l(`kind="FirewallRule",`) + " 1",
		"kvwatch_cached_entries" + l(`kind="Route",`) + " 1",
		"kvwatch_cached_entries" + l(`kind="VPCConfig",`) + " 1",
		"kvwatch_consumer_creation_retries_total" + l("") + " 0",
		"kvwatch_consumer_filters" + l("") + " 2",
		"kvwatch_consumer_resets_total" + l("") + " 0",
		"kvwatch_cut_off_servers_total" + l("") + " 0",
		"kvwatch_data_errors_total" + l(`kind="FirewallRule",`) + " 0",
		"kvwatch_data_errors_total" + l(`kind="Route",`) + " 1",
		"kvwatch_data_errors_total" + l(`kind="VPCConfig",`) + " 0",
		"kvwatch_events_total" + l(`kind="FirewallRule",op="delete",`) + " 0",
		"kvwatch_events_total" + l(`kind="FirewallRule",op="purge",`) + " 0",
		"kvwatch_events_total" + l(`kind="FirewallRule",op="put",`) + " 1",
		"kvwatch_events_total" + l(`kind="Route",op="delete",`) + " 1",
		"kvwatch_events_total" + l(`kind="Route",op="purge",`) + " 1",
		"kvwatch_events_total" + l(`kind="Route",op="put",`) + " 3",
		"kvwatch_events_total" + l(`kind="VPCConfig",op="delete",`) + " 0",
		"kvwatch_events_total" + l(`kind="VPCConfig",op="purge",`) + " 0",
		"kvwatch_events_total" + l(`kind="VPCConfig",op="put",`) + " 1",
		"kvwatch_handler_panics_total" + l("") + " 1",
		fmt.Sprintf("kvwatch_last_revision%s %d", l(""), rev),
		"kvwatch_pending_entries" + l("") + " 0",
		"kvwatch_queued_events" + l("") + " 0",
		// 3 read as the initial state, 6 from the consumer.
		"kvwatch_received_entries_total" + l("") + " 9",
		// The bucket records no schema (kvwatchtest.Bucket made it).
		"kvwatch_schema_behind" + l("") + " 0",
		"kvwatch_schema_info" + l(`bucket_fingerprint="",bucket_revision="",fingerprint="`+w.Stats().Schema.Fingerprint+`",revision="`+strconv.Itoa(w.Stats().Schema.Revision)+`",`) + " 1",
		"kvwatch_silent_connections_total" + l("") + " 0",
		"kvwatch_stream_went_back_total" + l("") + " 0",
		"kvwatch_synced" + l("") + " 1",
		"kvwatch_unknown_keys_total" + l("") + " 1",
		"kvwatch_without_consumer" + l("") + " 0",
	}
	if got := series(t, reg, "kvwatch_"); !slices.Equal(got, want) {
		t.Errorf("gathered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if s := w.Stats(); s.Puts != 5 || s.DataErrors != 1 || s.Received != 9 || s.Mirror != nil {
		t.Errorf("Stats() = %+v: the metrics above do not say what it says", s)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil || len(problems) != 0 {
		t.Errorf("promlint: %v %+v", err, problems)
	}
}

// Watchers are told apart by bucket and watcher name: the same name on
// another bucket is fine, a second watcher of a bucket under a name taken
// there is ErrDuplicate, and so is a watcher added twice. Remove takes a
// watcher's series out of the next scrape and frees its name.
func TestCollectorAddAndRemove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js := kvwatchtest.JetStream(t)
	kvwatchtest.Bucket(t, js, "network")
	kvwatchtest.Bucket(t, js, "network-staging")
	routing := watch(t, ctx, js, fleetkv.NetworkHandlers{}, []string{"a"})
	firewall := watch(t, ctx, js, fleetkv.NetworkHandlers{}, []string{"b"})
	staging := watch(t, ctx, js, fleetkv.NetworkHandlers{}, []string{"a"}, kvwatch.WithBucket("network-staging"))

	c := kvwatchprom.NewCollector(kvwatchprom.WithConstLabels(prometheus.Labels{"component": "node"}))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if err := c.Add(routing.Watcher, "routing"); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(firewall.Watcher, "routing"); !errors.Is(err, kvwatchprom.ErrDuplicate) {
		t.Errorf("Add of a second watcher of network as routing = %v, want ErrDuplicate", err)
	}
	if err := c.Add(firewall.Watcher, "firewall"); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(firewall.Watcher, "again"); !errors.Is(err, kvwatchprom.ErrDuplicate) {
		t.Errorf("Add of a watcher added already = %v, want ErrDuplicate", err)
	}
	if err := c.Add(staging.Watcher, "routing"); err != nil {
		t.Errorf("Add of a watcher of network-staging as routing = %v, want it added", err)
	}
	for name, add := range map[string]func() error{
		"a nil watcher": func() error { return c.Add(nil, "x") },
		"an empty name": func() error { return c.Add(routing.Watcher, "") },
		"a non-UTF-8":   func() error { return c.Add(routing.Watcher, "\xff") },
	} {
		if err := add(); err == nil || errors.Is(err, kvwatchprom.ErrDuplicate) {
			t.Errorf("Add of %s = %v, want an error", name, err)
		}
	}

	synced := []string{
		`kvwatch_synced{bucket="network",component="node",watcher="firewall"} 1`,
		`kvwatch_synced{bucket="network",component="node",watcher="routing"} 1`,
		`kvwatch_synced{bucket="network-staging",component="node",watcher="routing"} 1`,
	}
	if got := series(t, reg, "kvwatch_synced"); !slices.Equal(got, synced) {
		t.Errorf("gathered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(synced, "\n"))
	}
	// A write to VPC a of network is routing's alone.
	b, err := fleetkv.OpenNetworkBucket(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r1"}, fleetkv.Route{CIDR: "10.0.1.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	if err := routing.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bucket, watcher string
		want            float64
	}{{"network", "routing", 1}, {"network", "firewall", 0}, {"network-staging", "routing", 0}} {
		if got := sample(t, reg, "kvwatch_cached_entries", `bucket="`+tc.bucket+`"`, `watcher="`+tc.watcher+`"`, `kind="Route"`); got != tc.want {
			t.Errorf("%s/%s caches %v routes, want %v", tc.bucket, tc.watcher, got, tc.want)
		}
	}

	if !c.Remove(routing.Watcher) || c.Remove(routing.Watcher) {
		t.Error("Remove of an added watcher, then again: want true, then false")
	}
	if got := series(t, reg, "kvwatch_synced"); !slices.Equal(got, []string{synced[0], synced[2]}) {
		t.Errorf("after Remove(routing) gathered\n%s", strings.Join(got, "\n"))
	}
	if n := testutil.CollectAndCount(c); n != 2*(3*5+16) {
		t.Errorf("%d samples of two watchers, want %d (per kind 3 events, data errors, cached; 16 per watcher)", n, 2*(3*5+16))
	}
	if err := c.Add(firewall.Watcher, "routing"); !errors.Is(err, kvwatchprom.ErrDuplicate) {
		t.Errorf("Add of firewall as routing, while added as firewall = %v, want ErrDuplicate", err)
	}
	if err := c.Add(routing.Watcher, "routing"); err != nil {
		t.Errorf("Add after Remove = %v, want the name free again", err)
	}
	if n := testutil.CollectAndCount(c, "kvwatch_synced"); n != 3 {
		t.Errorf("%d kvwatch_synced after adding routing again, want 3", n)
	}
}

// A watcher on an edge's mirror has the mirror gauges too: healthy while
// the edge hears from the hub, stale (1, seconds since heard above the
// threshold) once its link is cut. Lag stays 0 in an outage.
func TestCollectorReportsAMirror(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	_, hub := f.ConnectHub(t)
	hb, err := fleetkv.OpenNetworkBucket(ctx, hub)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := hb.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r1"}, fleetkv.Route{CIDR: "10.0.1.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	edge := f.Edges[0]
	f.WaitMirrored(t, edge, rev)
	_, js := edge.Connect(t)
	w := watch(t, ctx, js, fleetkv.NetworkHandlers{}, []string{"a"}, kvwatch.WithMirrorStaleAfter(time.Second))
	if err := w.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}

	c := kvwatchprom.NewCollector()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if err := c.Add(w.Watcher, "edge-node"); err != nil {
		t.Fatal(err)
	}
	at := []string{`bucket="network"`, `watcher="edge-node"`}
	if v := sample(t, reg, "kvwatch_mirror_stale", at...); v != 0 {
		t.Errorf("kvwatch_mirror_stale = %v while linked, want 0", v)
	}
	if v := sample(t, reg, "kvwatch_mirror_since_heard_seconds", at...); v < 0 || v > 1 {
		t.Errorf("kvwatch_mirror_since_heard_seconds = %v while linked, want within the 1s threshold", v)
	}
	sample(t, reg, "kvwatch_mirror_lag_messages", at...)
	if v := sample(t, reg, "kvwatch_cached_entries", append(at, `kind="Route"`)...); v != 1 {
		t.Errorf("kvwatch_cached_entries{kind=Route} = %v, want 1", v)
	}

	edge.Cut()
	kvwatchtest.Eventually(t, 10*time.Second, "the mirror stale", func() bool {
		m := w.Stats().Mirror
		return m != nil && m.Stale
	})
	if v := sample(t, reg, "kvwatch_mirror_stale", at...); v != 1 {
		t.Errorf("kvwatch_mirror_stale = %v after the cut, want 1", v)
	}
	if v := sample(t, reg, "kvwatch_mirror_since_heard_seconds", at...); v <= 1 {
		t.Errorf("kvwatch_mirror_since_heard_seconds = %v when stale, want above the 1s threshold", v)
	}
	if v := sample(t, reg, "kvwatch_mirror_lag_messages", at...); v != 0 {
		t.Errorf("kvwatch_mirror_lag_messages = %v in an outage, want 0", v)
	}
}

// A constant label named like one of the collector's own makes
// registering it fail, with the reason, rather than a scrape.
func TestCollectorConstLabelClash(t *testing.T) {
	err := prometheus.NewRegistry().Register(kvwatchprom.NewCollector(kvwatchprom.WithConstLabels(prometheus.Labels{"bucket": "x"})))
	if err == nil || !strings.Contains(err.Error(), "bucket") {
		t.Errorf("Register with a constant label bucket = %v, want an error naming it", err)
	}
}
