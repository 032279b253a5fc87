package kvwatchimpl_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// A connection that goes silent without a reset (half-open: a peer gone
// behind a firewall, a dead link) is noticed by the heartbeats the
// watcher misses, confirmed by a round trip that is not answered, and
// left for the next server of the connection's list, well before the
// client's own pings would notice (two minutes apart by default): the
// first event after the silence comes within a few seconds, nothing
// lost or repeated.
func TestWatcherLeavesASilentConnection(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, jsDirect := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.Bucket(t, jsDirect, "network")
	p := netfault.Start(t, s.ClientURL())
	// Through the proxy first, then the server itself: a client's list of
	// servers, as a cluster's URLs are.
	nc, js := connectURLs(t, p.URL()+","+s.ClientURL(), nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	w, log := startLogged(t, js, debugLogger())
	stopWriter := writeDistinct(t, kv)
	kvwatchtest.Eventually(t, 10*time.Second, "events flowing", func() bool { return log.maxRevision() > 30 })
	silent := time.Now()
	p.Blackhole()
	before := streamLast(t, jsDirect)
	kvwatchtest.Eventually(t, 30*time.Second, "an event after the connection went silent", func() bool {
		_, ok := log.firstAfter(before)
		return ok
	})
	at, _ := log.firstAfter(before)
	took := at.Sub(silent)
	t.Logf("first event %v after the connection went silent", took.Round(time.Millisecond))
	// 2 s of missed heartbeats, then 3 s for the round trip (silent.go),
	// and room for a busy machine.
	if bound := recoveryBound(10 * time.Second); took > bound {
		t.Errorf("first event %v after the connection went silent, want within %v", took, bound)
	}
	if w.Stats().SilentConnections == 0 {
		t.Error("no silent connection counted")
	}
	if nc.ConnectedUrl() == p.URL() {
		t.Error("still connected through the silent proxy")
	}
	finish(t, kv, w, log, stopWriter)
}
