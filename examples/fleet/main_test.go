package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// TestExample runs the example end to end on its embedded server and
// checks what a newcomer is promised: typed events of the 3 watched VPCs
// only, the bad value reported, and one consumer on the stream.
func TestExample(t *testing.T) {
	var out bytes.Buffer
	if err := run("", 0, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	checkOutput(t, out.String(), "consumers on KV_network: 1", "cache: 3 VPC configs, 7 routes, 4 firewall rules")
}

// -edges 2 runs the job on a hub and two edges holding KV mirrors: the
// node on edge1 sees what a node on the hub sees, writes through its edge
// and reads its write after WaitRevision; the hub holds no consumer, each
// edge its node's one.
func TestExampleOnEdges(t *testing.T) {
	var out bytes.Buffer
	if err := run("", 2, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	checkOutput(t, text, "consumers on KV_network: hub 0, edge1 1, edge2 1", "cache: 3 VPC configs, 8 routes, 4 firewall rules")
	for _, want := range []string{
		"watching blue, green, red with one watcher, on edge1's mirror",
		"a node on edge2 watches amber, violet (4 routes cached)",
		"the watched stream is a mirror of KV_network, reached through $JS.hub.API; stale: false",
		"after WaitRevision the cache holds 10.1.3.0/24 via 10.1.0.3",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q\n%s", want, text)
		}
	}
}

// -edges starts its own servers: with -server it is refused, as is a
// negative count.
func TestExampleEdgesNeedTheEmbeddedServers(t *testing.T) {
	if err := run("nats://127.0.0.1:1", 2, io.Discard); err == nil || !strings.Contains(err.Error(), "-server") {
		t.Errorf("-edges with -server = %v, want a refusal naming -server", err)
	}
	if err := run("", -1, io.Discard); err == nil || !strings.Contains(err.Error(), "-edges -1") {
		t.Errorf("-edges -1 = %v, want a refusal", err)
	}
}

// -server URL runs the same job on an existing server.
func TestExampleOnExistingServer(t *testing.T) {
	s := kvwatchtest.Server(t)
	var out bytes.Buffer
	if err := run(s.ClientURL(), 0, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if strings.Contains(out.String(), "embedded") {
		t.Errorf("started an embedded server despite -server:\n%s", out.String())
	}
	checkOutput(t, out.String(), "consumers on KV_network: 1", "cache: 3 VPC configs, 7 routes, 4 firewall rules")
	// The bucket it created is gone: nothing left behind on the server.
	_, js := kvwatchtest.Connect(t, s)
	if _, err := js.KeyValue(context.Background(), "network"); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Errorf("after the example, bucket network: %v, want it deleted", err)
	}
}

// checkOutput checks the story every run tells, ending with lastLine;
// cacheLine is the cache after re-scoping.
func checkOutput(t *testing.T, text, lastLine, cacheLine string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if last := lines[len(lines)-1]; last != lastLine {
		t.Errorf("last line = %q, want %q\n%s", last, lastLine, text)
	}
	for _, want := range []string{
		"route     blue/r1       initial 10.1.1.0/24 via 10.1.0.1, metric 10",
		"synced: 3 VPC configs, 6 routes, 3 firewall rules in the cache",
		"route     blue/r1       live    10.1.1.0/24 via 10.1.0.254, metric 5 (was 10.1.1.0/24 via 10.1.0.1, metric 10)",
		"firewall  green/#10     live    deny 0.0.0.0/0 to port 23",
		"route     red/r2        live    deleted, was 10.3.2.0/24 via 10.3.0.1, metric 20",
		"skipped   vpc.green.route.r3",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q\n%s", want, text)
		}
	}
	// Each line in its place: the initial events before "synced:", the
	// events of re-scoping before "cache:". The handlers print on their
	// own goroutine; main waits for them before its summaries.
	checkOrder(t, text, "synced:", "re-scoping", "initial")
	checkOrder(t, text, "cache:", "", "left the watched scopes", "route     amber/r9")
	// Before re-scoping, nothing of amber or violet; after it, amber
	// arrives and red leaves; violet never appears.
	before, after, ok := strings.Cut(text, "re-scoping to blue, green, amber")
	if !ok {
		t.Fatalf("no re-scoping in the output:\n%s", text)
	}
	for _, l := range strings.Split(before, "\n") {
		if strings.HasPrefix(l, "wrote") || strings.HasPrefix(l, "stats") || strings.HasPrefix(l, "a node on edge") {
			continue
		}
		for _, unwatched := range []string{"amber", "violet", "10.4.", "10.5."} {
			if strings.Contains(l, unwatched) {
				t.Errorf("unwatched VPC printed before re-scoping: %q", l)
			}
		}
	}
	for _, want := range []string{
		"vpc       red           live    left the watched scopes, was 10.3.0.0/16 in eu-west-2",
		"route     amber/r9      initial 10.4.9.0/24 via 10.4.0.9, metric 90",
		cacheLine,
	} {
		if !strings.Contains(after, want) {
			t.Errorf("output after re-scoping lacks %q\n%s", want, after)
		}
	}
	if strings.Contains(after, "violet") {
		t.Errorf("violet printed:\n%s", after)
	}
}

// checkOrder fails t when a line containing one of events comes after
// the line starting with summary, and before the next line starting with
// until ("": to the end).
func checkOrder(t *testing.T, text, summary, until string, events ...string) {
	t.Helper()
	_, after, ok := strings.Cut(text, "\n"+summary)
	if !ok {
		t.Fatalf("no %q line in the output:\n%s", summary, text)
	}
	for _, l := range strings.Split(after, "\n")[1:] {
		if until != "" && strings.HasPrefix(l, until) {
			return
		}
		for _, ev := range events {
			if strings.Contains(l, ev) {
				t.Errorf("%q printed after the %q line\n%s", l, summary, text)
			}
		}
	}
}

// -server URL against a server that already has a "network" bucket: the
// example refuses, saying how to go on, and leaves the bucket as it was
// (configuration, keys and their history). It once reconfigured such a
// bucket (history 1, its description gone) and wrote its demo keys into it.
func TestExampleLeavesAnExistingBucketAlone(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", History: 5, Description: "production network state"})
	ctx := context.Background()
	for _, v := range []string{"v1", "v2", "v3"} {
		if _, err := kv.PutString(ctx, "vpc.prod", v); err != nil {
			t.Fatal(err)
		}
	}
	before := streamState(t, js)
	var out bytes.Buffer
	err := run(s.ClientURL(), 0, &out)
	if err == nil || !strings.Contains(err.Error(), `"network" already exists`) || !strings.Contains(err.Error(), "-server") {
		t.Fatalf("run on a server with a network bucket = %v, want a refusal saying how to go on\n%s", err, out.String())
	}
	if after := streamState(t, js); after != before {
		t.Errorf("the bucket changed:\nbefore %s\nafter  %s", before, after)
	}
}

// streamState renders what must not change in the network bucket: its
// configuration and contents.
func streamState(t *testing.T, js jetstream.JetStream) string {
	t.Helper()
	stream, err := js.Stream(context.Background(), "KV_network")
	if err != nil {
		t.Fatal(err)
	}
	info := stream.CachedInfo()
	return fmt.Sprintf("history=%d description=%q msgs=%d last=%d", info.Config.MaxMsgsPerSubject, info.Config.Description, info.State.Msgs, info.State.LastSeq)
}
