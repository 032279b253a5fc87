package kvwatchtest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// interested says whether s has a subscription matching subject in the
// global account (the one leaf nodes bind to here): its clients' or one a
// leaf node sent it.
func interested(s *server.Server, subject string) bool {
	return s.GlobalAccount().SubscriptionInterest(subject)
}

// barrier subscribes nc to a fresh subject and waits until s has the
// interest. Interest travels each link in order, so s has by then seen
// every subscription nc made before, as far as it was to get them.
func barrier(t *testing.T, nc *nats.Conn, s *server.Server) {
	t.Helper()
	subject := "barrier." + nats.NewInbox()[len(nats.InboxPrefix):]
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	Eventually(t, 10*time.Second, "interest in "+subject+" on "+s.Name(), func() bool { return interested(s, subject) })
}

// spreads subscribes on edge1 and says whether the subscription reached
// edge2 through the hub.
func spreads(t *testing.T, f *Fleet) bool {
	t.Helper()
	nc1, _ := f.Edges[0].Connect(t)
	if _, err := nc1.SubscribeSync("probe.edge1"); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 10*time.Second, "the hub interested in edge1's probe", func() bool { return interested(f.Hub.Server, "probe.edge1") })
	// The hub's own client's interest reaches edge2 after anything the hub
	// had to pass on before it.
	hubNC, _ := f.ConnectHub(t)
	barrier(t, hubNC, f.Edges[1].Server)
	return interested(f.Edges[1].Server, "probe.edge1")
}

// isolated reports whether each of the hub's leaf connections isolates
// its interest from the others.
func isolated(t *testing.T, f *Fleet) []bool {
	t.Helper()
	leafz, err := f.Hub.Leafz(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, l := range leafz.Leafs {
		got = append(got, l.IsIsolated)
	}
	return got
}

// By default the hub isolates leaf node interest (docs/fleet.md:
// isolate_leafnode_interest): every leaf connection on the hub says so,
// and a subscription on edge1 reaches the hub but not edge2.
func TestFleetIsolatesLeafNodeInterest(t *testing.T) {
	f := StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, FleetOptions{Edges: 2})
	if got := isolated(t, f); !slices.Equal(got, []bool{true, true}) {
		t.Errorf("the hub's leaf connections isolated: %v, want both", got)
	}
	if spreads(t, f) {
		t.Error("edge2 has edge1's interest: the hub does not isolate leaf node interest")
	}
}

// By default Edge.Connect's connection uses the local inbox prefix, which
// each edge's leaf remote denies: a watcher's requests to the edge (a KV
// get, a batched direct get, an ordered consumer on the mirror) are
// answered and their reply subscriptions stay on the edge; a request the
// hub answers is not, and ConnectWriter's connection makes it instead.
func TestFleetKeepsLocalInboxesOnTheEdge(t *testing.T) {
	f := StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, FleetOptions{})
	edge := f.Edges[0]
	if got := edge.opts.LeafNode.Remotes[0].DenyImports; !slices.Equal(got, []string{"_LOCAL.>"}) {
		t.Errorf("the edge's leaf remote denies the imports of %v, want [_LOCAL.>]", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Written on the edge, through the mirror-bound handle, to the hub.
	wnc, writer := edge.ConnectWriter(t)
	if inbox := wnc.NewRespInbox(); !strings.HasPrefix(inbox, nats.InboxPrefix) {
		t.Fatalf("ConnectWriter's inbox %s, want the default prefix", inbox)
	}
	wkv, err := writer.KeyValue(ctx, "network")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := wkv.PutString(ctx, "k", "v")
	if err != nil {
		t.Fatalf("a write through the edge's mirror-bound handle: %v", err)
	}
	f.WaitMirrored(t, edge, rev)

	nc, js := edge.Connect(t)
	inbox := nc.NewRespInbox()
	if !strings.HasPrefix(inbox, "_LOCAL.") {
		t.Fatalf("Edge.Connect's inbox %s, want the prefix _LOCAL", inbox)
	}
	kv, err := js.KeyValue(ctx, "network")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("Get on the edge = %v, %v", e, err)
	}
	if got := directGetLast(t, nc, "KV_network", "$KV.network.>"); !slices.Equal(got, []string{"$KV.network.k=v"}) {
		t.Errorf("batched direct get on the edge's mirror: %v", got)
	}
	c, err := js.OrderedConsumer(ctx, "KV_network", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"$KV.network.>"}})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := c.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil || string(msg.Data()) != "v" {
		t.Fatalf("Next on the edge's mirror = %v, %v", msg, err)
	}

	barrier(t, nc, f.Hub.Server)
	if interested(f.Hub.Server, inbox) {
		t.Errorf("the hub has interest in %s: the edge's reply subscriptions reach it", inbox)
	}
	barrier(t, wnc, f.Hub.Server)
	if !interested(f.Hub.Server, wnc.NewRespInbox()) {
		t.Errorf("the hub has no interest in ConnectWriter's inbox: the check above proves nothing")
	}
	if _, err := nc.Request("$JS."+HubDomain+".API.INFO", nil, time.Second); err == nil {
		t.Error("a request to the hub's domain on Edge.Connect's connection was answered: the edge does not deny its inbox")
	}
	if _, err := wnc.Request("$JS."+HubDomain+".API.INFO", nil, 10*time.Second); err != nil {
		t.Errorf("a request to the hub's domain on ConnectWriter's connection: %v", err)
	}
}

// directGetLast asks stream for the last message of every subject under
// filter in one batched direct get (multi_last), as a watcher reads its
// initial state, and returns them as subject=value.
func directGetLast(t *testing.T, nc *nats.Conn, stream, filter string) []string {
	t.Helper()
	sub, err := nc.SubscribeSync(nc.NewInbox())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	body := `{"multi_last":["` + filter + `"]}`
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+stream, sub.Subject, []byte(body)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("batched direct get on %s: %v, after %v", stream, err, got)
		}
		if m.Header.Get("Status") == "204" { // end of batch
			return got
		}
		if status := m.Header.Get("Status"); status != "" {
			t.Fatalf("batched direct get on %s: status %s %s", stream, status, m.Header.Get("Description"))
		}
		got = append(got, m.Header.Get("Nats-Subject")+"="+string(m.Data))
	}
}

// Bare is nats-server's default topology: the hub does not isolate leaf
// node interest, edge1's subscriptions reach edge2, edges deny no imports,
// and Edge.Connect's connection, with the default inbox prefix, writes
// through the mirror-bound handle to the hub.
func TestBareFleet(t *testing.T) {
	f := StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, FleetOptions{Edges: 2, Bare: true})
	if got := isolated(t, f); !slices.Equal(got, []bool{false, false}) {
		t.Errorf("the hub's leaf connections isolated: %v, want neither", got)
	}
	if !spreads(t, f) {
		t.Error("edge2 lacks edge1's interest in a bare fleet: the probe above proves nothing")
	}
	edge := f.Edges[0]
	if got := edge.opts.LeafNode.Remotes[0].DenyImports; len(got) != 0 {
		t.Errorf("the edge's leaf remote denies the imports of %v, want none", got)
	}
	nc, js := edge.Connect(t)
	if inbox := nc.NewRespInbox(); !strings.HasPrefix(inbox, nats.InboxPrefix) {
		t.Errorf("Edge.Connect's inbox %s in a bare fleet, want the default prefix", inbox)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, "network")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.PutString(ctx, "k", "v"); err != nil {
		t.Errorf("a write through Edge.Connect's mirror-bound handle in a bare fleet: %v", err)
	}
}
