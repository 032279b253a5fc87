package kvwatchimpl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// A replicated stream's info is answered from a replica's own store by a
// leader cut off from the others (until it steps down, about 10 s later)
// and by any replica once the stream has no leader (on a server up for
// more than 10 s)
// (nats-server). A watcher that applied writes a cut-off follower lacks,
// then reaches only that node, is answered a last sequence below its
// revision. That is no loss: the writes are on the other replicas. The
// watcher checks again, and reports no stream gone back (before, it
// re-listed: the cluster's false reports in the robustness runs); and
// after 10 s of such answers it leaves the node for the next server of
// its list.
func TestACutOffReplicaIsNoStreamGoneBack(t *testing.T) {
	c := kvwatchtest.StartCluster(t, 3)
	_, js := c.Connect(t)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Replicas: 3})
	put(t, kv, "vpc.a.route.r0", route{CIDR: "0"})
	// A follower of the stream's leader, neither the meta leader nor the
	// watcher's consumer's node: the rest go on at once, and the
	// watcher's check, the first thing it does once it reaches the node,
	// finds the node's store behind.
	leader, meta := streamLeader(t, js), c.MetaLeader()
	var cutOff *kvwatchtest.Node
	var rest []*kvwatchtest.Node
	for _, n := range c.Nodes {
		if cutOff == nil && n.Name() != leader && n.Name() != meta {
			cutOff = n
			continue
		}
		rest = append(rest, n)
	}
	var unconfirmed atomic.Bool
	logger := slog.New(logWatch{match: "not from a leader in touch", on: func() { unconfirmed.Store(true) }})
	r := newRecorder()
	var first, last *netfault.Proxy
	var nc *nats.Conn
	var w *kvwatchimpl.Watcher
	for attempt := 0; ; attempt++ {
		// The watcher's servers: one of the rest first, then the node
		// cut off.
		first, last = netfault.Start(t, rest[0].ClientURL()), netfault.Start(t, cutOff.ClientURL())
		var wjs jetstream.JetStream
		nc, wjs = connectURLs(t, first.URL()+","+last.URL(), nats.DontRandomize(), nats.IgnoreDiscoveredServers(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		w = startNetwork(t, wjs, vpcs("a"), r, kvwatch.WithRequestTimeout(time.Second), kvwatch.WithLogger(logger))
		waitSynced(t, w)
		if consumerNode(t, js) != cutOff.Name() {
			break
		}
		if attempt == 10 {
			t.Fatal("every consumer on the node to cut off")
		}
		w.Stop()
		nc.Close()
	}

	for _, p := range c.Routes(cutOff.Name()) {
		p.Partition()
	}

	_, jsRest := kvwatchtest.Connect(t, rest[1].Server, nats.MaxReconnects(-1))
	var kvRest jetstream.KeyValue
	kvwatchtest.Eventually(t, 30*time.Second, "the bucket from the rest", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var err error
		kvRest, err = jsRest.KeyValue(ctx, "network")
		return err == nil
	})
	var rev uint64
	for i := range 5 { // committed by the rest, once they elect a leader
		rev = putRetrying(t, kvRest, fmt.Sprintf("vpc.a.route.r%d", i+1), route{CIDR: "new"})
	}
	waitRevision(t, w, rev)
	first.Partition() // the watcher's connection goes to the node cut off
	// The node answers the stream's info once its group has no leader
	// (its election timeout) and it has been up for 10 s.
	kvwatchtest.Eventually(t, 60*time.Second, "the watcher answered by the node cut off", func() bool {
		return unconfirmed.Load() || w.Stats().StreamWentBack > 0
	})
	// The node stays cut off; the first server is back. The watcher
	// leaves the node that cannot speak for its cluster (cutoffnode.go)
	// and takes the writes made meanwhile from the rest.
	first.Heal()
	final := putRetrying(t, kvRest, "vpc.a.route.final", route{CIDR: "final"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.WaitRevision(ctx, final); err != nil {
		t.Fatalf("the watcher stayed on the node cut off: %v (stats %+v)", err, w.Stats())
	}
	if n := w.Stats().CutOffServers; n == 0 {
		t.Errorf("CutOffServers = 0, want the node cut off counted")
	}
	if n := w.Stats().StreamWentBack; n != 0 {
		_, errs := r.snapshot()
		t.Fatalf("a replica cut off was reported as the stream gone back %d times: %v", n, errs)
	}
	for _, p := range c.Routes(cutOff.Name()) {
		p.Heal()
	}
}

// putRetrying writes while a cluster elects leaders, until acknowledged.
func putRetrying(t *testing.T, kv jetstream.KeyValue, key string, v route) uint64 {
	t.Helper()
	var rev uint64
	kvwatchtest.Eventually(t, 30*time.Second, "write "+key, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		rev, err = kv.Put(ctx, key, data)
		return err == nil
	})
	return rev
}

// logWatch is a slog handler that calls on for each record whose message
// or attributes hold match.
type logWatch struct {
	match string
	on    func()
}

func (h logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (h logWatch) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h logWatch) WithGroup(string) slog.Handler            { return h }
func (h logWatch) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	if os.Getenv("KVW_DEBUG") != "" {
		fmt.Fprintln(os.Stderr, r.Time.Format("15:04:05.000"), line)
	}
	if strings.Contains(line, h.match) {
		h.on()
	}
	return nil
}
