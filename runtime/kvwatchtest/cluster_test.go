package kvwatchtest

import (
	"context"
	"testing"
	"time"

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
