package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// This file is the robustness test's driver: the topologies it runs on,
// their faults, and the operations on watchers.

// robustTopology is where a run happens.
type robustTopology struct {
	name    string
	history int           // revisions the bucket keeps a key
	short   time.Duration // the traffic of a short run
	start   func(t *testing.T) *robustEnv
}

// robustEnv is a started topology.
type robustEnv struct {
	connect func() jetstream.JetStream // a new connection, where writes go
	// connectWatcher, if set, connects watcher i (by default: connect).
	connectWatcher func(i int) jetstream.JetStream
	// observe, if set, connects to every server whose stream holds
	// watchers' consumers (by default: connect).
	observe func() []jetstream.JetStream
	// mirrored, if set, reports whether watcher i watches a mirror;
	// waitMirrored then waits until the mirror holds revision rev of
	// the bucket, and fails the test (the server's mirror, not a
	// watcher) if it does not within 60 s.
	mirrored     func(i int) bool
	waitMirrored func(rev uint64)
	faults       []robustFault
	restoreAll   func() // every server up again
}

// watcherConnection is the connection watcher i runs on.
func (e *robustEnv) watcherConnection(i int) jetstream.JetStream {
	if e.connectWatcher != nil {
		return e.connectWatcher(i)
	}
	return e.connect()
}

// onMirror reports whether watcher i watches an edge's mirror.
func (e *robustEnv) onMirror(i int) bool { return e.mirrored != nil && e.mirrored(i) }

// observers connects to every server holding watchers' consumers.
func (e *robustEnv) observers() []jetstream.JetStream {
	if e.observe != nil {
		return e.observe()
	}
	return []jetstream.JetStream{e.connect()}
}

// robustFault injects a fault; it returns once the fault is over (a
// server stopped is started again), or leaves that to restoreAll.
type robustFault struct {
	name   string
	inject func(d *robustDriver)
}

func robustTopologies() []robustTopology {
	short := 6 * time.Second
	if raceDetector {
		short = 4 * time.Second
	}
	return []robustTopology{
		{name: "server", history: 1, short: short, start: func(t *testing.T) *robustEnv { return singleServerEnv(t, 1) }},
		{name: "server-history-64", history: 64, short: short, start: func(t *testing.T) *robustEnv { return singleServerEnv(t, 64) }},
		{name: "cluster", history: 1, short: short + 2*time.Second, start: clusterEnv},
		{name: "fleet", history: 1, short: short, start: fleetEnv},
	}
}

// connectOptions reconnect at once and without end, as a fleet node would.
var connectOptions = []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}

// singleServerEnv is one server on a file store, restarted now and then,
// whose bucket is deleted and made again now and then.
func singleServerEnv(t *testing.T, history int) *robustEnv {
	node := kvwatchtest.StartNode(t, &server.Options{})
	_, js := kvwatchtest.Connect(t, node.Server, connectOptions...)
	cfg := jetstream.KeyValueConfig{Bucket: "network", History: uint8(history)}
	kvwatchtest.BucketWith(t, js, cfg)
	mustAllowBatches(t, js)
	// The watchers connect through two proxies to the server: a link
	// broken leaves them the other.
	links := newNetLinks(t, node.ClientURL(), node.ClientURL())
	env := &robustEnv{
		connect:        func() jetstream.JetStream { _, js := kvwatchtest.Connect(t, node.Server, connectOptions...); return js },
		connectWatcher: func(int) jetstream.JetStream { return links.connect(t) },
		restoreAll:     func() {},
	}
	env.faults = []robustFault{
		{name: "server restart", inject: func(d *robustDriver) {
			d.run.healthy.Store(false)
			node.Restart(t)
			d.run.healthy.Store(true)
		}},
		{name: "bucket deleted and recreated", inject: func(d *robustDriver) {
			resume := d.pauseWriters()
			defer resume()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := js.DeleteKeyValue(ctx, "network"); err != nil {
				d.run.violation("deleting the bucket: %v", err)
				return
			}
			d.run.hist.newEpoch()
			for _, rw := range d.watchers {
				_, l := rw.watcher()
				l.log.note(fmt.Sprintf("bucket deleted, epoch %d begins", d.run.hist.currentEpoch()))
			}
			// Made again, retried for 30 s: right after a delete the server
			// can refuse for a moment (err 10049 "error creating store for
			// stream"), and a bucket left deleted would stop every write.
			cctx, cancelCreate := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancelCreate()
			for _, err := js.CreateKeyValue(cctx, cfg); err != nil; _, err = js.CreateKeyValue(cctx, cfg) {
				if cctx.Err() != nil {
					d.run.violation("creating the bucket again: %v", err)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			// Before the writers resume: their batches need it.
			if err := allowBatches(cctx, js); err != nil {
				d.run.violation("allowing atomic batches on the bucket made again: %v", err)
			}
		}},
		{name: "store goes back", inject: func(d *robustDriver) { storeGoesBack(d, t, node, js) }},
	}
	env.faults = append(env.faults, links.faults()...)
	return env
}

// storeGoesBack restarts the server on an older copy of its store, as
// after a crash that lost writes it had acknowledged or a restore from a
// backup: the writes of the last 0.3 to 1.5 s are lost, and the next ones
// reuse their revisions (a new epoch of the history, holding the writes
// the store kept, begun while the server is down: no sync point of the
// store gone back is taken before). Registrations end first: each is
// checked against one history. Every watcher that had applied a write
// the store lost must notice (StreamWentBackError) and re-list; one that
// had not goes on with the new history (goneBackEpoch).
func storeGoesBack(d *robustDriver, t *testing.T, node *kvwatchtest.Node, js jetstream.JetStream) {
	for _, rw := range d.watchers {
		rw.endRegistrations()
	}
	resume := d.pauseWriters() // every write acknowledged: the backup holds up to kept
	d.run.healthy.Store(false)
	restore := node.Backup(t)
	var kept uint64
	kvwatchtest.Eventually(t, 30*time.Second, "the bucket after the backup", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		stream, err := js.Stream(ctx, "KV_network")
		if err == nil {
			kept = stream.CachedInfo().State.LastSeq
		}
		return err == nil
	})
	d.run.healthy.Store(true)
	resume()
	time.Sleep(time.Duration(300+d.rng.IntN(1200)) * time.Millisecond) // writes to lose
	resume = d.pauseWriters()
	defer resume()
	d.run.healthy.Store(false)
	node.Stop()
	d.run.hist.rewind(kept)
	for _, rw := range d.watchers {
		_, l := rw.watcher()
		l.mu.Lock()
		l.goneBack = append(l.goneBack, goneBackAt{at: len(l.events), kept: kept, epoch: d.run.hist.currentEpoch()})
		l.mu.Unlock()
		l.log.note(fmt.Sprintf("the store goes back to revision %d, epoch %d begins", kept, d.run.hist.currentEpoch()))
	}
	restore()
	d.run.healthy.Store(true)
}

// clusterEnv is a 3-node cluster with an R3 bucket, losing the node of a
// watcher's consumer or the meta leader's, and its stream leader stepping
// down.
func clusterEnv(t *testing.T) *robustEnv {
	c := kvwatchtest.StartCluster(t, 3)
	nc, js := c.Connect(t)
	kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Replicas: 3})
	mustAllowBatches(t, js)
	lose := func(d *robustDriver, name string) {
		node := c.Node(name)
		if node == nil || !node.Running() {
			return
		}
		d.run.healthy.Store(false)
		node.Stop()
		time.Sleep(time.Duration(300+d.rng.IntN(1200)) * time.Millisecond)
		node.Restart(t)
		// Healthy again once the cluster has a meta leader and the stream
		// its replicas: consumers are listed from there.
		kvwatchtest.Eventually(t, 30*time.Second, "the cluster back", func() bool { return c.MetaLeader() != "" })
		d.run.healthy.Store(true)
	}
	// cutOff applies fault to every route of a node for a duration
	// between lo and hi, heals them, and waits for the node's routes and
	// a meta leader.
	cutOff := func(d *robustDriver, lo, hi time.Duration, fault func(*netfault.Proxy)) {
		node := c.Nodes[d.rng.IntN(len(c.Nodes))]
		if !node.Running() {
			return
		}
		d.run.healthy.Store(false)
		for _, p := range c.Routes(node.Name()) {
			fault(p)
		}
		time.Sleep(lo + time.Duration(d.rng.Int64N(int64(hi-lo)+1)))
		for _, p := range c.Routes(node.Name()) {
			p.Heal()
		}
		kvwatchtest.Eventually(t, 30*time.Second, "the node back in the cluster", func() bool {
			return routedToAll(node, len(c.Nodes)-1) && c.MetaLeader() != ""
		})
		d.run.healthy.Store(true)
	}
	// The watchers connect through a proxy to each node.
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, n.ClientURL())
	}
	links := newNetLinks(t, urls...)
	return &robustEnv{
		connect:        func() jetstream.JetStream { _, js := c.Connect(t); return js },
		connectWatcher: func(int) jetstream.JetStream { return links.connect(t) },
		restoreAll: func() {
			for _, n := range c.Nodes {
				if !n.Running() {
					n.Restart(t)
				}
			}
		},
		faults: append([]robustFault{
			{name: "consumer's node lost", inject: func(d *robustDriver) {
				w, _ := d.watchers[d.rng.IntN(len(d.watchers))].watcher()
				if host := consumerHost(js, w.Stats().Consumer); host != "" {
					lose(d, host)
				}
			}},
			{name: "meta leader lost", inject: func(d *robustDriver) { lose(d, c.MetaLeader()) }},
			{name: "stream leader step-down", inject: func(d *robustDriver) {
				nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.KV_network", nil, 5*time.Second)
			}},
			// A node apart from the others while it runs, its clients
			// still connected: a leader cut off keeps answering as one
			// for a while, from its own store.
			{name: "node cut off, silent (1-6 s)", inject: func(d *robustDriver) {
				cutOff(d, time.Second, 6*time.Second, (*netfault.Proxy).Blackhole)
			}},
			{name: "node partitioned (1-4 s)", inject: func(d *robustDriver) {
				cutOff(d, time.Second, 4*time.Second, (*netfault.Proxy).Partition)
			}},
			{name: "routes 75 ± 50 ms", inject: func(d *robustDriver) {
				cutOff(d, time.Second, 3*time.Second, func(p *netfault.Proxy) { p.Latency(75*time.Millisecond, 50*time.Millisecond) })
			}},
		}, links.faults()...),
	}
}

// fleetEnv is a hub holding the bucket and an edge holding its mirror
// (docs/fleet.md): writes go to the hub, watcher 0 watches the hub,
// the others the edge's mirror (which drops the batches' marks: watchers
// there apply a batch entry by entry). Faults: the edge's link to the hub
// cut for up to 3 s (the mirror notices an outage after 10 s of silence,
// so these resume at once; TestEdgeWatcherSurvivesFaults takes the long
// ones), the edge restarted.
func fleetEnv(t *testing.T) *robustEnv {
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	edge := f.Edges[0]
	hub := func() jetstream.JetStream { _, js := f.ConnectHub(t); return js }
	mustAllowBatches(t, hub()) // the hub's bucket, made by StartFleet; the mirror needs nothing
	onEdge := func() jetstream.JetStream { _, js := edge.Connect(t); return js }
	return &robustEnv{
		connect: hub,
		connectWatcher: func(i int) jetstream.JetStream {
			if i == 0 {
				return hub()
			}
			return onEdge()
		},
		observe:      func() []jetstream.JetStream { return []jetstream.JetStream{hub(), onEdge()} },
		mirrored:     func(i int) bool { return i > 0 },
		waitMirrored: func(rev uint64) { f.WaitMirrored(t, edge, rev) },
		restoreAll:   func() { edge.Restore() },
		// The edge's leaf link goes silent, slow or reset too (the same
		// faults as the watchers' links elsewhere).
		faults: append([]robustFault{
			{name: "edge link cut", inject: func(d *robustDriver) {
				edge.Cut()
				time.Sleep(time.Duration(200+d.rng.IntN(2800)) * time.Millisecond)
				edge.Restore()
			}},
			{name: "edge restart", inject: func(d *robustDriver) {
				d.run.healthy.Store(false)
				edge.Restart(t)
				d.run.healthy.Store(true)
			}},
		}, (&netLinks{proxies: []*netfault.Proxy{edge.Link()}}).faults()...),
	}
}

// allowBatches sets AllowAtomicPublish on the bucket's stream (the
// writers send atomic batches), retried until ctx ends: as a bucket's
// creation, its update can be refused for a moment (a stream just made,
// a cluster electing its leader).
func allowBatches(ctx context.Context, js jetstream.JetStream) error {
	for {
		err := func() error {
			stream, err := js.Stream(ctx, "KV_network")
			if err != nil {
				return err
			}
			cfg := stream.CachedInfo().Config
			if cfg.AllowAtomicPublish {
				return nil
			}
			cfg.AllowAtomicPublish = true
			_, err = js.UpdateStream(ctx, cfg)
			return err
		}()
		if err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mustAllowBatches is allowBatches for a topology's start, within 30 s.
func mustAllowBatches(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := allowBatches(ctx, js); err != nil {
		t.Fatalf("allowing atomic batches on the bucket: %v", err)
	}
}

// consumerHost returns the server hosting the named consumer, or "".
func consumerHost(js jetstream.JetStream, name string) string {
	if name == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	cons, err := js.Consumer(ctx, "KV_network", name)
	if err != nil || cons.CachedInfo().Cluster == nil {
		return ""
	}
	return cons.CachedInfo().Cluster.Leader
}

// robustDriver makes the run's random choices.
type robustDriver struct {
	run      *robustRun
	env      *robustEnv
	rng      *rand.Rand
	watchers []*robustWatcher
	writers  []*writer
	report   *robustReport
}

// pauseWriters stops every write until resume is called.
func (d *robustDriver) pauseWriters() (resume func()) {
	return d.writers[0].pause() // the writers share one gate
}

// fault injects a random fault of the topology.
func (d *robustDriver) fault() {
	f := d.env.faults[d.rng.IntN(len(d.env.faults))]
	d.report.faults++
	d.report.faultsByName[f.name]++
	f.inject(d)
}

// operate does one random operation on a random watcher.
func (d *robustDriver) operate() {
	rw := d.watchers[d.rng.IntN(len(d.watchers))]
	w, _ := rw.watcher()
	d.report.ops++
	switch x := d.rng.IntN(125); {
	case x < 25:
		rw.save()
	case x < 45:
		d.setScopes(rw, w, randomScopes(d.rng, 8))
	case x < 55:
		d.setScopes(rw, w, toggled(d.rng, w.Filters()))
	case x < 65:
		d.callInCallback(rw)
	case x < 75:
		rw.slow.Store([]int64{0, 0, int64(200 * time.Microsecond), int64(time.Millisecond)}[d.rng.IntN(4)])
	case x < 87:
		rw.save()
		rw.stop(d.run.healthy.Load())
		if err := rw.start(randomScopes(d.rng, 8), true); err != nil {
			d.run.violation("watcher %d: resume: %v", rw.id, err)
		} else if d.rng.IntN(2) == 0 {
			d.addRegistration(rw) // before it is synced, most often
		}
	case x < 92:
		rw.stop(d.run.healthy.Load())
		if err := rw.start(randomScopes(d.rng, 8), false); err != nil {
			d.run.violation("watcher %d: start: %v", rw.id, err)
		} else if d.rng.IntN(2) == 0 {
			d.addRegistration(rw)
		}
	case x < 100:
		rw.noteConsumer()
	case x < 110:
		d.callInCallback(rw)
	default:
		d.registrations(rw, x-110)
	}
}

// registrations does one random operation (x of 15) on the handlers
// added to rw's watcher and the loops over its events
// (robustness_shared_test.go).
func (d *robustDriver) registrations(rw *robustWatcher, x int) {
	w, l := rw.watcher()
	switch {
	case x < 6:
		d.addRegistration(rw)
	case x < 9:
		var live []*rreg
		for _, g := range l.registrations() {
			if g.live() {
				live = append(live, g)
			}
		}
		if len(live) > 0 {
			live[d.rng.IntN(len(live))].remove(l)
		}
	case x < 12:
		running := 0
		for _, g := range l.registrations() {
			if g.running() {
				running++
			}
		}
		if running < 2 {
			plan := regPlan{how: regLoop, slow: d.rng.IntN(4) == 0}
			if d.rng.IntN(2) == 0 {
				plan.breakAfter = 1 + d.rng.IntN(2000)
			}
			rw.startLoop(l, w, plan)
		}
	case x < 13:
		for _, g := range l.registrations() {
			if g.running() {
				rw.endLoop(g)
				break
			}
		}
	default:
		rw.inCall[fromHandler].Store(&callPlan{kind: callAddHandlers, reg: regPlan{how: regInHandler}})
	}
}

// addRegistration adds handlers to rw's watcher from the driver, unless
// it has 3 already.
func (d *robustDriver) addRegistration(rw *robustWatcher) {
	w, l := rw.watcher()
	live := 0
	for _, g := range l.registrations() {
		if g.live() {
			live++
		}
	}
	if live >= 3 {
		return
	}
	plan := regPlan{how: regDriver}
	if d.rng.IntN(3) == 0 {
		plan.removeAfter = 1 + d.rng.IntN(400)
	}
	rw.addRegistration(l, w, plan)
}

// setScopes re-scopes a watcher from the driver, as a node's control loop
// would, and waits for the change.
func (d *robustDriver) setScopes(rw *robustWatcher, w *kvwatchimpl.Watcher, s kvwatchimpl.Scopes) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, l := rw.watcher()
	l.log.note(fmt.Sprintf("driver calls SetScopes(%v)", s))
	err := w.SetScopes(ctx, s)
	l.log.note(fmt.Sprintf("SetScopes returned %v", err))
	switch {
	case err == nil:
		rw.noteConsumer()
	case errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, kvwatch.ErrStopped):
		// the bucket was deleted: the watch ended, reviveEnded resumes it
	default:
		d.run.violation("watcher %d: SetScopes: %v (stats %+v)", rw.id, err, w.Stats())
	}
}

// reviveEnded resumes, from its last checkpoint, every watcher whose watch
// ended on its own (its bucket deleted).
func (d *robustDriver) reviveEnded() {
	for _, rw := range d.watchers {
		w, l := rw.watcher()
		select {
		case <-w.Done():
		default:
			continue
		}
		l.mu.Lock()
		if l.ended == nil {
			l.ended = w.Err()
		}
		l.mu.Unlock()
		if err := rw.start(randomScopes(d.rng, 8), true); err != nil {
			d.run.violation("watcher %d: resume after its watch ended: %v", rw.id, err)
		}
	}
}

// toggled adds a VPC to the watched ones or removes one, from the filters.
func toggled(rng *rand.Rand, filters []string) kvwatchimpl.Scopes {
	watched := map[string]bool{}
	var s kvwatchimpl.Scopes
	for _, f := range filters {
		var vpc string
		if _, err := fmt.Sscanf(f, "$KV.network.vpc.%s", &vpc); err != nil {
			continue
		}
		vpc, _, _ = cutDot(vpc)
		watched[vpc] = true
	}
	pick := fmt.Sprintf("v%d", rng.IntN(8))
	watched[pick] = !watched[pick]
	for vpc, on := range watched {
		if on {
			s.Values = append(s.Values, kvwatchimpl.ScopeValue{Scope: 0, Params: []string{vpc}})
		}
	}
	return s
}

func cutDot(s string) (before, after string, found bool) {
	for i := range len(s) {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// routedToAll reports whether node has a route to each of its peers.
func routedToAll(node *kvwatchtest.Node, peers int) bool {
	rz, err := node.Routez(nil)
	if err != nil {
		return false
	}
	names := map[string]bool{}
	for _, r := range rz.Routes {
		names[r.RemoteName] = true
	}
	return len(names) == peers
}
