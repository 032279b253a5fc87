package kvwatchtest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A 3-node cluster takes an R3 bucket, survives the loss of a node, and a
// node restarted on its store rejoins: once another node is lost, writes
// go on with the restarted one in the quorum.
func TestCluster(t *testing.T) {
	c := StartCluster(t, 3)
	_, js := c.Connect(t)
	kv := BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "b", Replicas: 3})
	// Each step has its own deadline: a slow election (a loaded machine)
	// must not eat into the next step's time.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kv.PutString(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	c.Nodes[0].Stop()
	Eventually(t, 30*time.Second, "a write with one node down", func() bool {
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		defer wcancel()
		_, err := kv.PutString(wctx, "k", "v2")
		return err == nil
	})
	c.Nodes[0].Restart(t)
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v2" {
		t.Fatalf("Get = %v, %v", e, err)
	}
	// The Get above may be answered by the nodes that never stopped. With
	// another node down, a write needs a quorum that counts the restarted
	// node: it succeeds only once that node has rejoined.
	c.Nodes[1].Stop()
	Eventually(t, 30*time.Second, "a write needing the restarted node", func() bool {
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		defer wcancel()
		_, err := kv.PutString(wctx, "k", "v3")
		return err == nil
	})
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v3" {
		t.Fatalf("Get after the write with the restarted node = %v, %v", e, err)
	}
}

// A node whose routes are cut (Cluster.Routes) is apart from the others
// while it keeps running: they write on without it, it has no route and
// stays behind; healed, it rejoins and catches up, and a write then needs
// it once another node is down.
func TestClusterRoutesPartitionANode(t *testing.T) {
	c := StartCluster(t, 3)
	// The writer's connection to the nodes that stay together.
	_, js := connect(t, c.Nodes[1].ClientURL()+","+c.Nodes[2].ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	kv := BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "b", Replicas: 3})
	put := func(what, v string) {
		t.Helper()
		Eventually(t, 30*time.Second, what, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, err := kv.PutString(ctx, "k", v)
			return err == nil
		})
	}
	put("the first write", "v1")
	apart := c.Nodes[0]
	for _, p := range c.Routes(apart.Name()) {
		p.Partition()
	}
	Eventually(t, 10*time.Second, "the node without routes", func() bool { return apart.NumRoutes() == 0 })
	put("a write without the node apart", "v2")
	if !apart.Running() {
		t.Fatal("the node apart stopped")
	}
	for _, p := range c.Routes(apart.Name()) {
		p.Heal()
	}
	Eventually(t, 30*time.Second, "the node's routes back", func() bool { return apart.NumRoutes() > 0 })
	// Every route goes through a proxy, gossip or not: cut again, the
	// node has none left.
	for _, p := range c.Routes(apart.Name()) {
		p.Partition()
	}
	Eventually(t, 10*time.Second, "the node without routes, cut again", func() bool { return apart.NumRoutes() == 0 })
	for _, p := range c.Routes(apart.Name()) {
		p.Heal()
	}
	Eventually(t, 30*time.Second, "the node's routes back again", func() bool { return apart.NumRoutes() > 0 })
	c.Nodes[1].Stop()
	put("a write needing the node that was apart", "v3")
}

// A node whose route port was taken after it was picked (by another test's
// server) fails to start with the server's own reason, at once, rather
// than after waiting out the readiness timeout: StartCluster then starts
// the cluster over on other ports.
func TestNodeOnATakenPortSaysSo(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	opts := &server.Options{ServerName: "n1"}
	opts.Cluster.Name = "taken"
	opts.Cluster.Host = "127.0.0.1"
	opts.Cluster.Port = taken.Addr().(*net.TCPAddr).Port
	opts.Routes = server.RoutesFromStr(fmt.Sprintf("nats://127.0.0.1:%d", opts.Cluster.Port))
	n := &Node{opts: nodeOptions(t, opts)}
	err = n.tryStart()
	if err == nil || !strings.Contains(err.Error(), "Error listening on router port") {
		t.Fatalf("tryStart = %v, want the router port's listen error", err)
	}
}

// A restored backup loses the writes made after it: the stream comes back
// with its creation time, a lower last sequence, and reuses the lost
// sequences for new writes.
func TestNodeBackup(t *testing.T) {
	n := StartNode(t, &server.Options{})
	_, js := Connect(t, n.Server)
	kv := Bucket(t, js, "b")
	ctx := context.Background()
	if _, err := kv.PutString(ctx, "k", "kept"); err != nil {
		t.Fatal(err)
	}
	restore := n.Backup(t)
	_, js = Connect(t, n.Server)
	kv, err := js.KeyValue(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	lost, err := kv.PutString(ctx, "k", "lost")
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := js.Stream(ctx, "KV_b")
	created := stream.CachedInfo().Created
	restore()
	_, js = Connect(t, n.Server)
	stream, err = js.Stream(ctx, "KV_b")
	if err != nil {
		t.Fatal(err)
	}
	if info := stream.CachedInfo(); info.State.LastSeq != lost-1 || !info.Created.Equal(created) {
		t.Fatalf("after the restore: last sequence %d, created %v; want %d, %v", info.State.LastSeq, info.Created, lost-1, created)
	}
	kv, _ = js.KeyValue(ctx, "b")
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "kept" {
		t.Fatalf("after the restore k = %v, %v; want kept", e, err)
	}
	if again, err := kv.PutString(ctx, "k", "new"); err != nil || again != lost {
		t.Fatalf("the next write got revision %d (%v), want the lost one, %d", again, err, lost)
	}
}
