package kvwatchimpl_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// A watcher on a node that can reach the rest of its cluster, whose
// consumer's node is cut off from them (its routes down, the node still
// running), gets a new consumer through the rest, and once the node is
// back the stream holds that one only: the meta group deletes the old
// one without its node.
func TestAConsumerOnACutOffNodeIsReplaced(t *testing.T) {
	c := kvwatchtest.StartCluster(t, 3)
	_, js := c.Connect(t)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Replicas: 3})
	put(t, kv, "vpc.a.route.r0", route{CIDR: "0"})
	w, host := watcherAwayFromItsConsumer(t, c, js)
	old := w.Stats().Consumer
	for _, p := range c.Routes(host) {
		p.Partition()
	}
	kvwatchtest.Eventually(t, 30*time.Second, "a new consumer while the old one's node is cut off", func() bool {
		now := w.Stats().Consumer
		return now != "" && now != old
	})
	for _, p := range c.Routes(host) {
		p.Heal()
	}
	kvwatchtest.Eventually(t, 30*time.Second, "the old consumer deleted once its node is back", func() bool {
		names := consumerNames(t, js)
		return len(names) == 1 && names[0] == w.Stats().Consumer
	})
	rev := putRetrying(t, kv, "vpc.a.route.r1", route{CIDR: "1"})
	waitRevision(t, w, rev)
}

// The meta leader places a consumer of one replica on a node of the
// stream at random, and takes a node cut off from the rest for online
// until it has missed its heartbeats for half a minute; every request
// under the name of a consumer placed there goes to that node and is
// never answered. A watcher deletes such a name and creates it again,
// placed anew. Here the name it uses next is placed, before the cut, on
// the node then cut off; the CI once met that by chance.
func TestAConsumerPlacedOnACutOffNodeIsPlacedAgain(t *testing.T) {
	c := kvwatchtest.StartCluster(t, 3)
	_, js := c.Connect(t)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Replicas: 3})
	rev := put(t, kv, "vpc.a.route.r0", route{CIDR: "0"})
	w, host := watcherAwayFromItsConsumer(t, c, js)
	old := w.Stats().Consumer
	next := strings.TrimSuffix(old, "_1") + "_2"
	if next == old+"_2" {
		t.Fatalf("the first consumer is %s, not ..._1", old)
	}
	// The next consumer as the watcher will ask for it (it starts after
	// the revision applied), placed on host.
	ctx := context.Background()
	cons, err := js.Consumer(ctx, "KV_network", old)
	if err != nil {
		t.Fatal(err)
	}
	cfg := cons.CachedInfo().Config
	cfg.Name, cfg.DeliverPolicy, cfg.OptStartSeq = next, jetstream.DeliverByStartSequencePolicy, rev+1
	for attempt := 0; ; attempt++ {
		placed, err := js.CreateConsumer(ctx, "KV_network", cfg)
		if err != nil {
			t.Fatal(err)
		}
		if info := placed.CachedInfo(); info.Cluster != nil && info.Cluster.Leader == host {
			break
		}
		if attempt == 30 {
			t.Fatalf("%s never placed on %s", next, host)
		}
		if err := js.DeleteConsumer(ctx, "KV_network", next); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range c.Routes(host) {
		p.Partition()
	}
	// Stats().Consumer names a consumer once its creation was answered,
	// which one placed on host never is.
	kvwatchtest.Eventually(t, 30*time.Second, next+" created while "+host+" is cut off", func() bool {
		return w.Stats().Consumer == next
	})
	for _, p := range c.Routes(host) {
		p.Heal() // the writer's connection may be to host
	}
	rev = putRetrying(t, kv, "vpc.a.route.r1", route{CIDR: "1"})
	waitRevision(t, w, rev)
	kvwatchtest.Eventually(t, 30*time.Second, "only "+next+" on the stream", func() bool {
		names := consumerNames(t, js)
		return len(names) == 1 && names[0] == next
	})
}

// watcherAwayFromItsConsumer starts a synced watcher on vpc a whose
// connection is to another node than its consumer's host, and returns it
// and that host.
func watcherAwayFromItsConsumer(t *testing.T, c *kvwatchtest.Cluster, js jetstream.JetStream) (*kvwatchimpl.Watcher, string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		nc, wjs := c.Connect(t, nats.IgnoreDiscoveredServers())
		w := startNetwork(t, wjs, vpcs("a"), newRecorder(), debugLogger())
		waitSynced(t, w)
		host := consumerNode(t, js)
		if nc.ConnectedServerName() != host {
			return w, host
		}
		if attempt == 10 {
			t.Fatal("every consumer on the watcher's own node")
		}
		w.Stop()
	}
}
