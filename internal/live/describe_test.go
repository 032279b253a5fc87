package live

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// describe shows the stream's configuration against the schema's, the
// entries per kind (more than 1,024), the consumers (a kvwatch watcher by
// its name) and the consumer limit left, and the schema the bucket
// records.
func TestDescribe(t *testing.T) {
	url, js, _ := filledServer(t, 1100)
	ctx := t.Context()
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"blue", "green"}}, fleetkv.NetworkHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	env, out, errOut := testEnv(t)
	if code := run(t, env, "describe", "-schema", fleetSchema, "-s", url); code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	got := out.String()
	s, err := schema.LoadFile(fleetSchema)
	if err != nil {
		t.Fatal(err)
	}
	fp, rev := s.Buckets[0].Fingerprint(), strconv.Itoa(s.Revision)
	for _, want := range []string{
		"bucket network (stream KV_network)\n",
		"  schema: none recorded (this schema: revision " + rev + ", fingerprint " + fp + ")\n",
		"  entries: 1105 as of revision 1107\n",
		"  consumers: 1 of 1000 (the server's default on nats-server 2.15+), 999 left\n",
		"  mirror: none",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, row := range [][]string{
		{"max_consumers", "-1"}, {"atomic_batches", "false", "true", "differs"}, {"history", "1", "1"},
		{"Route", "vpc.{vpc}.route.{route_id}", "1101"}, {"(no kind)", "-", "1"}, {"3", "settings", "differ"},
	} {
		if !hasRow(got, row...) {
			t.Errorf("output lacks the row %v:\n%s", row, got)
		}
	}
	if !strings.Contains(got, "kvw_") || !hasRowContaining(got, "kvwatch", "4", "0") {
		t.Errorf("the watcher's consumer is not shown as kvwatch's, with its 4 filters:\n%s", got)
	}

	// The fingerprint CreateOrUpdate…Bucket records (schema evolution).
	st, err := js.Stream(ctx, "KV_network")
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.Metadata = map[string]string{metaRevision: rev, metaFingerprint: fp}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	env, out, _ = testEnv(t)
	run(t, env, "describe", "-schema", fleetSchema, "-s", url, "-json")
	var d description
	if err := json.Unmarshal([]byte(out.String()), &d); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if d.Recorded == nil || *d.Recorded != d.Schema || d.Entries != 1105 || len(d.Cons) != 1 || !d.Cons[0].Watcher {
		t.Fatalf("describe -json: %s", out)
	}
}

// hasRowContaining reports whether a line of out holds every field.
func hasRowContaining(out string, fields ...string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		f := " " + strings.Join(strings.Fields(line), " ") + " "
		ok := true
		for _, want := range fields {
			ok = ok && strings.Contains(f, " "+want+" ")
		}
		if ok {
			return true
		}
	}
	return false
}

// On an edge, describe shows the mirror: its origin, lag and when it last
// heard from it; verify reads the mirror like the bucket.
func TestDescribeAndVerifyAMirrorOnAnEdge(t *testing.T) {
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	_, hub := f.ConnectHub(t)
	kv, err := hub.KeyValue(t.Context(), "network")
	if err != nil {
		t.Fatal(err)
	}
	fill(t, kv, 1030)
	f.WaitMirrored(t, f.Edges[0], 1037)
	edge := f.Edges[0].ClientURL()

	env, out, errOut := testEnv(t)
	if code := run(t, env, "describe", "-schema", fleetSchema, "-s", edge); code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	got := out.String()
	for _, want := range []string{"  entries: 1035 as of revision 1037\n", "  mirror of KV_network via $JS.hub.API: lag 0, last heard from the origin "} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	env, out, errOut = testEnv(t)
	if code := run(t, env, "verify", "-schema", fleetSchema, "-s", edge); code != ExitError || !strings.Contains(out.String(), "as of revision 1037: 1035 entries, 3 problems") {
		t.Fatalf("verify on the edge: exit %d\n%s%s", code, out, errOut)
	}
}
