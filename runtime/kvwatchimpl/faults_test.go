package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// revisionLog records the revision of every route event, by key, with the
// time it arrived.
type revisionLog struct {
	mu    sync.Mutex
	revs  map[string][]uint64
	times []time.Time // arrival time of each event, in order
	last  []uint64    // revision of each event, in order
}

func newRevisionLog() *revisionLog { return &revisionLog{revs: map[string][]uint64{}} }

func (l *revisionLog) binding() *kvwatchimpl.Binding[routeKey, route] {
	return kvwatchimpl.Bind(&routeKind, func(ev kvwatch.Event[routeKey, route]) {
		l.mu.Lock()
		l.revs[ev.Key.String()] = append(l.revs[ev.Key.String()], ev.Revision)
		l.times = append(l.times, time.Now())
		l.last = append(l.last, ev.Revision)
		l.mu.Unlock()
	})
}

// firstAfter returns when the first event with a revision above rev came.
func (l *revisionLog) firstAfter(rev uint64) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range l.last {
		if r > rev {
			return l.times[i], true
		}
	}
	return time.Time{}, false
}

func (l *revisionLog) maxRevision() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m uint64
	for _, r := range l.last {
		m = max(m, r)
	}
	return m
}

// check fails unless every key the writer wrote was delivered, ending at
// its current revision, with strictly increasing revisions, and no
// revision was delivered twice. Each key is written once (twice at most,
// when a put timed out in an outage and was retried), so a lost event
// shows as a key missing or behind.
func (l *revisionLog) check(t *testing.T, kv jetstream.KeyValue, written []string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, key := range written {
		var e jetstream.KeyValueEntry
		kvwatchtest.Eventually(t, 10*time.Second, "reading "+key, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var err error
			e, err = kv.Get(ctx, key)
			return err == nil
		})
		got := l.revs[key]
		if len(got) == 0 || got[len(got)-1] != e.Revision() || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Errorf("%s: delivered revisions %v, want increasing and ending at %d", key, got, e.Revision())
		}
	}
	seen := map[uint64]bool{}
	for _, r := range l.last {
		if seen[r] {
			t.Errorf("revision %d delivered twice", r)
		}
		seen[r] = true
	}
	if len(written) < 50 {
		t.Errorf("only %d keys written: the check proves little", len(written))
	}
}

// streamLast returns the bucket stream's last sequence.
func streamLast(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	return waitStream(t, js, "stream info", nil).State.LastSeq
}

// waitStream returns the bucket stream's info, asked again until an
// answer comes that ok accepts (ok nil: any), for up to 20 s (during an
// election, or while the client reconnects, none may come).
func waitStream(t *testing.T, js jetstream.JetStream, what string, ok func(*jetstream.StreamInfo) bool) *jetstream.StreamInfo {
	t.Helper()
	var info *jetstream.StreamInfo
	kvwatchtest.Eventually(t, 20*time.Second, what, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s, err := js.Stream(ctx, "KV_network")
		if err != nil {
			return false
		}
		info = s.CachedInfo()
		return ok == nil || ok(info)
	})
	return info
}

// writeDistinct writes new keys vpc.a.route.w<i> until stop is called,
// retrying through outages; it returns once writes are under way. stop
// returns the keys whose write was acknowledged.
func writeDistinct(t *testing.T, kv jetstream.KeyValue) (stop func() []string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var written []string
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			key := fmt.Sprintf("vpc.a.route.w%d", i)
			for ctx.Err() == nil {
				wctx, wcancel := context.WithTimeout(ctx, time.Second)
				_, err := kv.Put(wctx, key, []byte(`{"cidr":"w"}`))
				wcancel()
				if err == nil {
					mu.Lock()
					written = append(written, key)
					mu.Unlock()
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	kvwatchtest.Eventually(t, 5*time.Second, "writer under way", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(written) > 20
	})
	return func() []string { cancel(); wg.Wait(); return written }
}

// startLogged starts a watcher of VPC a recording route revisions.
func startLogged(t *testing.T, js jetstream.JetStream, opts ...kvwatch.Option) (*kvwatchimpl.Watcher, *revisionLog) {
	t.Helper()
	log := newRevisionLog()
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{log.binding(), kvwatchimpl.Bind(&vpcKind, nil)}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)
	return w, log
}

// finish stops the writer, writes one last key, waits for it, and checks
// what was delivered.
func finish(t *testing.T, kv jetstream.KeyValue, w *kvwatchimpl.Watcher, log *revisionLog, stopWriter func() []string) {
	t.Helper()
	written := stopWriter()
	var last uint64
	kvwatchtest.Eventually(t, 10*time.Second, "the last write", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var err error
		last, err = kv.Put(ctx, "vpc.a.route.last", []byte(`{"cidr":"last"}`))
		return err == nil
	})
	waitRevision(t, w, last)
	log.check(t, kv, written)
}

// After a server restart (same store, same port) the watcher resumes
// within 3 s, with no revision lost or repeated.
func TestRecoversFromServerRestart(t *testing.T) {
	node := kvwatchtest.StartNode(t, &server.Options{})
	_, js := kvwatchtest.Connect(t, node.Server, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	kv := kvwatchtest.Bucket(t, js, "network")
	w, log := startLogged(t, js)
	stopWriter := writeDistinct(t, kv)
	kvwatchtest.Eventually(t, 5*time.Second, "events flowing", func() bool { return log.maxRevision() > 30 })

	node.Restart(t)
	restarted := time.Now()
	// Events above the stream's last revision once it is back were written
	// after the restart (the server takes writes while it shuts down): the
	// first of them times the recovery.
	before := streamLast(t, js)
	kvwatchtest.Eventually(t, 10*time.Second, "an event after the restart", func() bool {
		_, ok := log.firstAfter(before)
		return ok
	})
	at, _ := log.firstAfter(before)
	if took := at.Sub(restarted); took > recoveryBound(3*time.Second) {
		t.Errorf("first event %v after the server was back, want within %v", took, recoveryBound(3*time.Second))
	}
	if w.Stats().ConsumerResets == 0 {
		t.Error("no consumer reset counted: the restart did not exercise recovery")
	}
	kvwatchtest.Eventually(t, 10*time.Second, "more writes after recovery", func() bool {
		_, ok := log.firstAfter(before + 60)
		return ok
	})
	finish(t, kv, w, log, stopWriter)
}

// recoveryBound is how long a recovery may take: d, the product's target,
// or three times d under the race detector, whose instrumentation (not the
// watcher) then dominates. The bench's failover scenario measures the
// recovery time itself.
func recoveryBound(d time.Duration) time.Duration {
	if raceDetector {
		return 3 * d
	}
	return d
}

// consumerNode returns the name of the server hosting the watcher's
// consumer: the one consumer whose host is up (a consumer on a lost node
// stays listed, leaderless, until the node returns).
func consumerNode(t *testing.T, js jetstream.JetStream) string {
	t.Helper()
	var names []string
	kvwatchtest.Eventually(t, 10*time.Second, "one consumer with a live host", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		stream, err := js.Stream(ctx, "KV_network")
		if err != nil {
			return false
		}
		names = names[:0]
		for info := range stream.ListConsumers(ctx).Info() {
			if info.Cluster != nil && info.Cluster.Leader != "" {
				names = append(names, info.Cluster.Leader)
			}
		}
		return len(names) == 1
	})
	return names[0]
}

// streamLeader returns the server leading the bucket's stream.
func streamLeader(t *testing.T, js jetstream.JetStream) string {
	t.Helper()
	return waitStream(t, js, "a stream leader", func(info *jetstream.StreamInfo) bool {
		return info.Cluster != nil && info.Cluster.Leader != ""
	}).Cluster.Leader
}

// stepDown asks the stream's leader to step down.
func stepDown(t *testing.T, nc *nats.Conn) {
	t.Helper()
	if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.KV_network", nil, 5*time.Second); err != nil {
		t.Fatalf("step down: %v", err)
	}
}

// In a 3-node cluster with an R3 bucket, losing the node that hosts the
// watcher's consumer (but neither the stream's leader nor the meta leader):
// the watcher resumes within 3 s on another node, with no revision lost or
// repeated.
func TestRecoversFromLosingTheConsumerNode(t *testing.T) {
	loseTheConsumerNode(t, false, 3*time.Second)
}

// Losing the node that hosts both the watcher's consumer and the meta
// leader: no consumer can be created before a new meta leader is elected,
// and a creation request sent during the election is never answered. The
// runtime sends it again after a short wait (createTimeout) instead of
// nats.go's fixed 10 s: the watcher resumes within 3 s, still with no
// revision lost or repeated.
func TestRecoversFromLosingTheMetaLeadersNode(t *testing.T) {
	loseTheConsumerNode(t, true, 3*time.Second)
}

// loseTheConsumerNode starts a watcher whose consumer is on the meta
// leader's node or not (withMeta), moves the stream's leader away from that
// node, stops the node under writes, and checks that the first event from
// the next consumer comes within bound, and that nothing is lost or
// repeated.
func loseTheConsumerNode(t *testing.T, withMeta bool, bound time.Duration) {
	c := kvwatchtest.StartCluster(t, 3)
	nc, js := c.Connect(t)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Replicas: 3})
	// An ordered consumer is R1, placed on one of the stream's peers at
	// random: start watchers until one lands where the case needs it.
	var w *kvwatchimpl.Watcher
	var log *revisionLog
	var host string
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatalf("no consumer placed as needed (on the meta leader: %v) in 20 starts", withMeta)
		}
		w, log = startLogged(t, js, debugLogger())
		host = consumerNode(t, js)
		if (host == c.MetaLeader()) == withMeta {
			break
		}
		w.Stop()
		kvwatchtest.Eventually(t, 10*time.Second, "the stopped watcher's consumer gone", func() bool {
			return kvwatchtest.Consumers(t, js, "network") == 0
		})
	}
	stopWriter := writeDistinct(t, kv)
	kvwatchtest.Eventually(t, 5*time.Second, "events flowing", func() bool { return log.maxRevision() > 30 })
	// With the stream's leader gone too, no write would succeed until an
	// election, whatever the watcher does: move it away.
	for i := 0; streamLeader(t, js) == host; i++ {
		if i == 10 {
			t.Fatalf("the stream's leader is still %s after %d step-downs", host, i)
		}
		stepDown(t, nc)
	}
	lost := time.Now()
	c.Node(host).Stop()
	// The lost node delivered nothing it did not store, and stores nothing
	// once stopped: events above the stream's last revision now come from
	// the watcher's next consumer, and the first of them times the
	// recovery.
	before := streamLast(t, js)
	kvwatchtest.Eventually(t, recoveryBound(bound)+5*time.Second, "an event after losing "+host, func() bool {
		_, ok := log.firstAfter(before)
		return ok
	})
	at, _ := log.firstAfter(before)
	t.Logf("first event from the next consumer %v after losing its node", at.Sub(lost).Round(time.Millisecond))
	bound = recoveryBound(bound)
	if took := at.Sub(lost); took > bound {
		t.Errorf("first event %v after losing the consumer's node, want within %v", took, bound)
	}
	if w.Stats().ConsumerResets == 0 {
		t.Error("no consumer reset counted: losing the node did not exercise recovery")
	}
	// The event after the loss proves a new consumer; consumerNode checks
	// it is the only one with a live host.
	consumerNode(t, js)
	kvwatchtest.Eventually(t, 10*time.Second, "more writes after recovery", func() bool {
		_, ok := log.firstAfter(before + 60)
		return ok
	})
	finish(t, kv, w, log, stopWriter)
}

// A stream leader step-down during writes loses and repeats nothing.
func TestSurvivesStreamLeaderStepDown(t *testing.T) {
	c := kvwatchtest.StartCluster(t, 3)
	nc, js := c.Connect(t)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Replicas: 3})
	w, log := startLogged(t, js)
	stopWriter := writeDistinct(t, kv)
	{
		before := log.maxRevision()
		leader := streamLeader(t, js)
		stepDown(t, nc)
		kvwatchtest.Eventually(t, 10*time.Second, "a new stream leader", func() bool {
			return streamLeader(t, js) != leader
		})
		kvwatchtest.Eventually(t, 10*time.Second, "events after the step-down", func() bool {
			_, ok := log.firstAfter(before + 60)
			return ok
		})
	}
	finish(t, kv, w, log, stopWriter)
}

// Deleting the bucket ends the watch with ErrBucketNotFound; it does not
// hang.
func TestDeletedBucketEndsTheWatch(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{})
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r)
	waitSynced(t, w)
	if err := js.DeleteKeyValue(context.Background(), "network"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the watch did not end within 15s of its bucket's deletion")
	}
	if err := w.Err(); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("Err = %v, want ErrBucketNotFound", err)
	}
	_, errs := r.snapshot()
	if len(errs) == 0 || !errors.Is(errs[len(errs)-1], jetstream.ErrBucketNotFound) {
		t.Errorf("OnError did not receive the terminal error: %v", errs)
	}
}

// A stream at its consumer limit gives an error that says how to raise
// the limit.
func TestConsumerLimitError(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{})
	err := syncAtConsumerLimit(t, js)
	if !errors.Is(err, kvwatch.ErrConsumerLimit) || !containsAll(err.Error(), "MaxConsumers", "default_max_consumers", "10026") {
		t.Fatalf("WaitSynced = %v, want ErrConsumerLimit saying how to raise the limit", err)
	}
}

// More filters than allowed are refused before anything is sent.
func TestTooManyFilters(t *testing.T) {
	js, _ := setup(t)
	_, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a", "b", "c"),
		[]kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)}, kvwatch.WithMaxFilters(5))
	if !errors.Is(err, kvwatch.ErrTooManyFilters) || !containsAll(err.Error(), "6 filters", "at most 5") {
		t.Fatalf("err = %v, want ErrTooManyFilters", err)
	}
}

// A client that disappears without Stop leaves its consumer only until
// the inactive threshold passes.
func TestConsumerGoneAfterInactiveThreshold(t *testing.T) {
	s := kvwatchtest.Server(t)
	nc, js := kvwatchtest.Connect(t, s)
	kvwatchtest.Bucket(t, js, "network")
	_, observer := kvwatchtest.Connect(t, s)
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"),
		[]kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)}, kvwatch.WithInactiveThreshold(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, w)
	if n := kvwatchtest.Consumers(t, observer, "network"); n != 1 {
		t.Fatalf("consumers = %d, want 1", n)
	}
	nc.Close() // the node dies: no Stop, no delete
	kvwatchtest.Eventually(t, 10*time.Second, "consumer removed by the server", func() bool {
		return kvwatchtest.Consumers(t, observer, "network") == 0
	})
	w.Stop()
}

func debugLogger() kvwatch.Option {
	if os.Getenv("KVW_DEBUG") == "" {
		return kvwatch.WithLogger(nil)
	}
	return kvwatch.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

// syncAtConsumerLimit sets the network stream's consumer limit to 1, takes
// that one consumer, starts a watcher and returns what WaitSynced says.
func syncAtConsumerLimit(t *testing.T, js jetstream.JetStream) error {
	t.Helper()
	ctx := context.Background()
	updateStream(t, js, func(cfg *jetstream.StreamConfig) { cfg.MaxConsumers = 1 })
	if _, err := js.CreateConsumer(ctx, "KV_network", jetstream.ConsumerConfig{Durable: "other"}); err != nil {
		t.Fatal(err)
	}
	w, err := kvwatchimpl.Start(ctx, js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return w.WaitSynced(wctx)
}

// A watcher started while its server restarts waits for it, within the
// context given to Start, and then watches: every later phase of a watch
// retries the same way. Before, Start failed with "context deadline
// exceeded".
func TestStartDuringAnOutage(t *testing.T) {
	node := kvwatchtest.StartNode(t, &server.Options{})
	_, js := kvwatchtest.Connect(t, node.Server, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	kv := kvwatchtest.Bucket(t, js, "network")
	put(t, kv, "vpc.a.route.r1", route{CIDR: "a"})
	node.Stop()
	var logs lineLog
	started := make(chan error, 1)
	var w *kvwatchimpl.Watcher
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds the watch too
	t.Cleanup(cancel)
	go func() {
		var err error
		w, err = kvwatchimpl.Start(ctx, js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)},
			kvwatch.WithLogger(slog.New(&logs)), kvwatch.WithRequestTimeout(300*time.Millisecond))
		started <- err
	}()
	kvwatchtest.Eventually(t, 10*time.Second, "Start retrying", func() bool {
		return strings.Contains(logs.text(), "looking the bucket up again")
	})
	node.Restart(t)
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("Start during an outage: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not return within 20 s of the server's return")
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)
	if n := w.Stats().Kinds["Route"].Cached; n != 1 {
		t.Errorf("%d routes cached, want 1", n)
	}
}
