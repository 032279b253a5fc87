package kvwatchimpl_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// A server down for longer than two heartbeats costs its watcher one
// consumer reset, not two: the consumer recreated after the reconnect
// outlived that reconnect, whose notice must not recreate it again (an
// edge restart of the storm bench counted 815 resets for 500 watchers).
// And one log line above debug level: the recovery's end, which says
// what broke and how long it took (a storm is a line per watcher).
func TestOneResetForAServerDownAndBack(t *testing.T) {
	node := kvwatchtest.StartNode(t, &server.Options{})
	_, js := kvwatchtest.Connect(t, node.Server, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	kv := kvwatchtest.Bucket(t, js, "network")
	put(t, kv, "vpc.a.route.r0", route{CIDR: "0"})
	logs := &lineLog{}
	w := startNetwork(t, js, vpcs("a"), newRecorder(), kvwatch.WithLogger(slog.New(logs)))
	waitSynced(t, w)

	node.Stop()
	kvwatchtest.Eventually(t, 20*time.Second, "the missed heartbeats noticed", func() bool {
		return w.Stats().ConsumerResets == 1
	})
	node.Restart(t)
	first := w.Stats().Consumer
	rev := putRetrying(t, kv, "vpc.a.route.r1", route{CIDR: "1"})
	waitRevision(t, w, rev)
	// Delivered by the consumer made after the reconnect, and another
	// write after it: a reset that the reconnect's notice would make
	// comes as soon as that consumer runs, before its first delivery.
	kvwatchtest.Eventually(t, 20*time.Second, "a consumer made after the restart", func() bool {
		return w.Stats().Consumer != "" && w.Stats().Consumer != first
	})
	rev = putRetrying(t, kv, "vpc.a.route.r2", route{CIDR: "2"})
	waitRevision(t, w, rev)
	if n := w.Stats().ConsumerResets; n != 1 {
		t.Errorf("%d consumer resets for one restart, want 1", n)
	}
	var told []string
	for _, line := range strings.Split(logs.text(), "\n") {
		if !strings.Contains(line, " DEBUG ") {
			told = append(told, line)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], "INFO kvwatch: recovered") || !strings.Contains(told[0], "no heartbeat") {
		t.Errorf("logged above debug level for one restart:\n%s\nwant one INFO kvwatch: recovered line, naming the missed heartbeats", strings.Join(told, "\n"))
	}
}
