package kvwatchtest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// A 3-node cluster takes an R3 bucket, survives the loss of a node, and a
// node restarted on its store rejoins: once another node is lost, writes
// go on with the restarted one in the quorum.
func TestCluster(t *testing.T) {
	c := StartCluster(t, 3)
	_, js := c.Connect(t)
	kv := BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "b", Replicas: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := kv.PutString(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	c.Nodes[0].Stop()
	Eventually(t, 15*time.Second, "a write with one node down", func() bool {
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
	Eventually(t, 15*time.Second, "a write needing the restarted node", func() bool {
		wctx, wcancel := context.WithTimeout(ctx, time.Second)
		defer wcancel()
		_, err := kv.PutString(wctx, "k", "v3")
		return err == nil
	})
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v3" {
		t.Fatalf("Get after the write with the restarted node = %v, %v", e, err)
	}
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
	n := &Node{opts: fillOptions(t, opts)}
	err = n.tryStart()
	if err == nil || !strings.Contains(err.Error(), "Error listening on router port") {
		t.Fatalf("tryStart = %v, want the router port's listen error", err)
	}
}
