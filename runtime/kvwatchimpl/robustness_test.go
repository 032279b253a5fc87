package kvwatchimpl_test

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// The robustness test, after etcd's tests/robustness: random traffic
// (puts, creates, overwrites, deletes, purges, bad values, unknown keys,
// bursts, atomic batches) against a bucket while watchers are re-scoped
// (from the driver and from handlers), checkpointed, stopped, resumed and
// slowed down, and faults are injected (a server restart on a file store;
// in a 3-node cluster the loss of the consumer's node or of the meta
// leader, a stream leader step-down; the bucket deleted and made again; in
// a fleet, two of three watchers on an edge's mirror, its link to the hub
// cut, the edge restarted). Every watch guarantee of docs/guarantees.md is then
// checked against the recorded history of writes (robustness_check_test.go),
// and for the handlers added to running watchers (AddHandlers, from the
// driver and from handlers, removed now and then) and the loops over their
// events (Events), against their watchers' own events too
// (robustness_regcheck_test.go).
//
//	go test ./runtime/kvwatchimpl -run Robustness              # the short run, part of go test ./...
//	go test ./runtime/kvwatchimpl -run Robustness -soak 10m    # runs after runs, for 10 minutes
//	go test ./runtime/kvwatchimpl -run Robustness/cluster -robust.seed 42   # replays one run's choices
//	go test ./runtime/kvwatchimpl -run Robustness/cluster -robust.seed 42 -robust.for 20s   # one of a soak's runs (as it prints)
//
// A seed fixes the run's choices (operations, faults, traffic); the
// servers' timing is the machine's.

var (
	robustSeed = flag.Uint64("robust.seed", 0, "replay the robustness run with this seed (each run prints its own)")
	robustFor  = flag.Duration("robust.for", 0, "with -robust.seed, how long the run lasts (a soak's runs print theirs; default the topology's short run)")
	soak       = flag.Duration("soak", 0, "run the robustness test for this long, one seeded run after another (e.g. 10m)")
)

func TestRobustness(t *testing.T) {
	for _, topo := range robustTopologies() {
		t.Run(topo.name, func(t *testing.T) {
			if *soak == 0 {
				seed, d := *robustSeed, topo.short
				if seed == 0 {
					seed = uint64(time.Now().UnixNano())
				}
				if *robustFor > 0 {
					d = *robustFor
				}
				robustnessRun(t, topo, seed, d)
				return
			}
			var total robustReport
			deadline := time.Now().Add(*soak / time.Duration(len(robustTopologies())))
			for time.Now().Before(deadline) {
				seed := uint64(time.Now().UnixNano())
				var r robustReport
				if !t.Run(fmt.Sprint(seed), func(t *testing.T) { r = robustnessRun(t, topo, seed, soakRun) }) {
					t.Fatalf("seed %d failed", seed)
				}
				total.add(r)
			}
			t.Logf("soak %s: %s", topo.name, total)
			t.Logf("soak %s: registrations: %s", topo.name, total.regDetail)
			t.Logf("soak %s: calls from user code: %s", topo.name, total.calls)
		})
	}
}

// soakRun is how long each run of a soak lasts.
const soakRun = 20 * time.Second

// robustReport counts what a run did.
type robustReport struct {
	runs, ops, faults, writes, events, syncPoints, violations int
	// Atomic batches committed, attempts whose outcome was looked up on
	// the stream (of which found stored), attempts sent again.
	batches, batchesLookedUp, batchesFound, batchesResent int
	// Handlers added to running watchers (AddHandlers) and loops over
	// their events (Events), checked against their watchers' events and
	// the history: how many, how many removed, their events.
	regs, regsRemoved, loops, regEvents int
	regDetail                           regStats
	faultsByName                        map[string]int
	// calls are the watcher's methods called from user code.
	calls callsMade
	// wentBack counts the watchers' reports that the store went back.
	wentBack int
	// statePaths counts the lives by how their initial state was read.
	statePaths map[string]int
}

func (a *robustReport) add(b robustReport) {
	a.runs += b.runs
	a.ops += b.ops
	a.faults += b.faults
	a.writes += b.writes
	a.events += b.events
	a.syncPoints += b.syncPoints
	a.violations += b.violations
	a.batches += b.batches
	a.batchesLookedUp += b.batchesLookedUp
	a.batchesFound += b.batchesFound
	a.batchesResent += b.batchesResent
	a.regs += b.regs
	a.regsRemoved += b.regsRemoved
	a.loops += b.loops
	a.regEvents += b.regEvents
	a.regDetail.add(b.regDetail)
	a.calls.add(b.calls)
	a.wentBack += b.wentBack
	if a.statePaths == nil {
		a.statePaths = map[string]int{}
	}
	for k, v := range b.statePaths {
		a.statePaths[k] += v
	}
	if a.faultsByName == nil {
		a.faultsByName = map[string]int{}
	}
	for k, v := range b.faultsByName {
		a.faultsByName[k] += v
	}
}

func (r robustReport) String() string {
	var faults []string
	for _, k := range slices.Sorted(maps.Keys(r.faultsByName)) {
		faults = append(faults, fmt.Sprintf("%s %d", k, r.faultsByName[k]))
	}
	var paths []string
	for _, k := range slices.Sorted(maps.Keys(r.statePaths)) {
		paths = append(paths, fmt.Sprintf("%s %d", k, r.statePaths[k]))
	}
	return fmt.Sprintf("%d runs, %d writes (%d atomic batches; %d batch outcomes looked up, %d found stored; %d batch attempts sent again), "+
		"%d watcher operations, %d faults (%s), %d reports of the store gone back, %d events and %d sync points checked, "+
		"initial states read by %s, "+
		"%d registrations by AddHandlers (%d removed) and %d Events loops, %d of their events checked, %d violations",
		r.runs, r.writes, r.batches, r.batchesLookedUp, r.batchesFound, r.batchesResent,
		r.ops, r.faults, strings.Join(faults, ", "), r.wentBack, r.events, r.syncPoints,
		strings.Join(paths, ", "), r.regs, r.regsRemoved, r.loops, r.regEvents, r.violations)
}

// robustRun is the state of one run.
type robustRun struct {
	t    *testing.T
	hist *history
	// observers see the streams that hold watchers' consumers (the
	// bucket's, and in a fleet the edge's mirror too).
	observers []jetstream.JetStream
	// healthy is set while no server is down: consumers must be where
	// the watchers say.
	healthy atomic.Bool

	mu         sync.Mutex
	violations []string
	reports    []string // noteReport
	// callsCtx ends the calls from user code still waiting when traffic
	// stops (robustness_calls_test.go): the watchers must then converge.
	callsCtx context.Context
}

// noteReport keeps a report of the store gone back, with what led to it,
// for the run's log (written by the test's goroutine at the end: a
// callback may run after the test).
func (r *robustRun) noteReport(text string) {
	r.mu.Lock()
	r.reports = append(r.reports, text)
	r.mu.Unlock()
}

func (r *robustRun) violation(format string, args ...any) {
	r.mu.Lock()
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// consumers returns the names of the consumers on the streams the
// observers see (consumer names are unique across them); nil when a
// stream cannot be asked.
func (r *robustRun) consumers(ctx context.Context) map[string]bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	names := map[string]bool{}
	for _, observer := range r.observers {
		stream, err := observer.Stream(ctx, "KV_network")
		if err != nil {
			return nil
		}
		lister := stream.ConsumerNames(ctx)
		for name := range lister.Name() {
			names[name] = true
		}
		if lister.Err() != nil {
			return nil
		}
	}
	return names
}

// pollConsumers checks, while the servers are healthy, that no watcher
// holds more than one consumer, until ctx ends.
func (r *robustRun) pollConsumers(ctx context.Context) {
	reported := map[string]bool{}
	for sleep(ctx, 30*time.Millisecond) {
		if !r.healthy.Load() {
			continue
		}
		names := r.consumers(ctx)
		if !r.healthy.Load() {
			continue // a fault began during the listing
		}
		per := map[string][]string{}
		for name := range names {
			per[consumerPrefix(name)] = append(per[consumerPrefix(name)], name)
		}
		for prefix, list := range per {
			if len(list) > 1 && !reported[prefix] {
				reported[prefix] = true
				slices.Sort(list)
				r.violation("more than one consumer of one watcher on the stream: %v", list)
			}
		}
	}
}

// robustnessRun runs one seeded run of d on topo and checks it.
func robustnessRun(t *testing.T, topo robustTopology, seed uint64, d time.Duration) robustReport {
	replay := fmt.Sprintf("go test ./runtime/kvwatchimpl -run 'Robustness/%s' -robust.seed %d", topo.name, seed)
	if d != topo.short {
		replay += " -robust.for " + d.String()
	}
	t.Logf("seed %d (replay: %s)", seed, replay)
	rng := rand.New(rand.NewPCG(seed, 1))
	env := topo.start(t)
	callsCtx, endCalls := context.WithCancel(context.Background())
	defer endCalls()
	r := &robustRun{t: t, hist: &history{}, observers: env.observers(), callsCtx: callsCtx}
	r.healthy.Store(true)
	report := robustReport{runs: 1, faultsByName: map[string]int{}, statePaths: map[string]int{}}

	ctx, cancel := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	gate := &sync.RWMutex{}
	var writers []*writer
	// Two writers of mixed traffic, and a third of atomic batches only,
	// slower, which often has one in flight when a fault strikes: the
	// outcomes unknown then are looked up (writer.sendBatch).
	for i := range 3 {
		wr := &writer{js: env.connect(), hist: r.hist, rng: rand.New(rand.NewPCG(seed, uint64(10+i))), vpcs: 8, gate: gate,
			runID: fmt.Sprintf("%d-%d", seed, i), fail: func(msg string) { r.violation("%s", msg) }, batchesOnly: i == 2}
		writers = append(writers, wr)
		bg.Go(func() { wr.run(ctx) })
	}
	pollCtx, stopPolling := context.WithCancel(context.Background())
	var polling sync.WaitGroup
	polling.Go(func() { r.pollConsumers(pollCtx) })

	watchers := make([]*robustWatcher, 3)
	for i := range watchers {
		rw := &robustWatcher{id: i, js: env.watcherConnection(i), run: r}
		if err := rw.start(randomScopes(rng, 8), false); err != nil {
			t.Fatal(err)
		}
		watchers[i] = rw
	}
	drive := &robustDriver{run: r, env: env, rng: rng, watchers: watchers, writers: writers, report: &report}
	deadline := time.Now().Add(d)
	nextFault := time.Now().Add(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(20+rng.IntN(120)) * time.Millisecond)
		drive.reviveEnded()
		if len(env.faults) > 0 && time.Now().After(nextFault) {
			drive.fault()
			nextFault = time.Now().Add(time.Duration(1500+rng.IntN(1500)) * time.Millisecond)
			continue
		}
		drive.operate()
	}
	// One run in four ends right after a fault: the watchers must then
	// converge on what it left, some still to notice it.
	if len(env.faults) > 0 && rng.IntN(4) == 0 {
		drive.fault()
	}

	// The end: traffic stops, every server is up, calls from user code
	// still waiting end, and every watcher must converge on the bucket's
	// final state within its scopes.
	cancel()
	endCalls()
	bg.Wait()
	for _, wr := range writers {
		report.batches += wr.batches
		report.batchesLookedUp += wr.batchesLookedUp
		report.batchesFound += wr.batchesFound
		report.batchesResent += wr.batchesResent
	}
	env.restoreAll()
	r.healthy.Store(true)
	drive.reviveEnded()
	for _, rw := range watchers {
		for i := range rw.inCall {
			rw.inCall[i].Store(nil)
		}
		rw.slow.Store(0)
		drive.converge(rw)
		drive.quiesce(rw)
	}
	for _, rw := range watchers {
		rw.stop(true)
	}
	stopPolling()
	polling.Wait()
	kvwatchtest.Eventually(t, 10*time.Second, "no goroutine of a stopped watcher", func() bool {
		return watcherGoroutines() == 0
	})

	r.mu.Lock()
	bad := slices.Clone(r.violations)
	for _, text := range r.reports {
		t.Log(text)
	}
	r.mu.Unlock()
	for _, rw := range watchers {
		rw.mu.Lock()
		report.calls.add(rw.made)
		rw.mu.Unlock()
		report.wentBack += int(rw.wentBack.Load())
		for _, l := range rw.lives {
			l.mu.Lock()
			if l.statePath != "" {
				report.statePaths[l.statePath]++
			}
			l.mu.Unlock()
		}
		type part struct{ l, whole *life }
		var parts []part
		for _, whole := range rw.lives {
			for _, l := range whole.rewindParts() {
				parts = append(parts, part{l, whole})
			}
		}
		for n, p := range parts {
			l := p.l
			lifeBad := checkLife(r.hist, topo.history, rw.id, n, l, env.onMirror(rw.id))
			var st regStats
			lifeBad = append(lifeBad, checkRegistrations(r.hist, topo.history, rw.id, n, l, env.onMirror(rw.id), &st)...)
			if len(lifeBad) > 0 && testing.Verbose() {
				t.Logf("watcher %d life %d, its log:\n%s\n%s", rw.id, n, p.whole.log.text(), describeRegs(l))
			}
			bad = append(bad, lifeBad...)
			for _, e := range l.events {
				if !e.sync && !e.dropped && !e.rewound {
					report.events++
				}
			}
			report.regs += st.regs - st.loops
			report.regsRemoved += st.removed
			report.loops += st.loops
			report.regEvents += st.events
			report.regDetail.add(st)
			report.syncPoints += len(l.syncs)
		}
	}
	r.hist.mu.Lock()
	report.writes = len(r.hist.writes)
	r.hist.mu.Unlock()
	report.violations = len(bad)
	t.Logf("%s: %s", topo.name, report)
	t.Logf("%s: registrations: %s", topo.name, report.regDetail)
	t.Logf("%s: calls from user code: %s", topo.name, report.calls)
	if len(bad) > 0 {
		t.Errorf("seed %d: %d violations of the watch guarantees, e.g.:\n%s", seed, len(bad), strings.Join(bad[:min(len(bad), 25)], "\n"))
	}
	if report.syncPoints < 3 || report.writes < 200 {
		t.Errorf("the run checked little: %s", report)
	}
	return report
}

// watcherGoroutines counts the goroutines running the runtime's code.
func watcherGoroutines() int {
	buf := make([]byte, 1<<22)
	n := runtime.Stack(buf, true)
	count := 0
	for g := range strings.SplitSeq(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "kvwatchimpl.(*Watcher)") || strings.Contains(g, "kvwatchimpl.(*tailConsumer)") || strings.Contains(g, "kvwatchimpl.(*listener)") {
			count++
		}
	}
	return count
}

// converge waits until the watcher's caches hold the bucket's final state
// within its scopes: the newest write of every key in scope delivered. The
// bucket's as it is now (the history's current epoch), not the one the
// watcher last synced on: right after the store went back, a watcher that
// applied writes the store lost and has not reconnected yet still holds
// the lost history's final state, which its re-list is about to replace.
func (d *robustDriver) converge(rw *robustWatcher) {
	if d.env.onMirror(rw.id) {
		// A watcher is never ahead of its mirror: the 20 s are the
		// watcher's, once the mirror holds the final state (nats-server's
		// mirror notices a stalled origin only after 10 s of silence).
		d.env.waitMirrored(streamLast(d.run.t, d.env.connect()))
	}
	deadline := time.Now().Add(20 * time.Second)
	var diff []string
	for time.Now().Before(deadline) {
		d.reviveEnded() // a bucket recreated at the end ends a watch late
		w, l := rw.watcher()
		l.mu.Lock()
		stopped := l.stopAt >= 0 // by a callback: its handlers end where it did, its caches may go on; reviveEnded starts the next life once it is done
		l.mu.Unlock()
		cp, err := w.Checkpoint()
		if err == nil && !stopped {
			cp.Revision = ^uint64(0) // the final state
			if diff = stateDiff(d.run.hist, d.run.hist.currentEpoch(), cp, false); len(diff) == 0 {
				l.mu.Lock()
				l.final = &cp
				l.mu.Unlock()
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, l := rw.watcher()
	d.run.violation("watcher %d: not at the final state within 20 s of the end: %v\nits log:\n%s", rw.id, diff[:min(len(diff), 10)], l.log.text())
}

// quiesce waits, once the watcher's caches hold the final state
// (converge), until its handlers' events (with its data errors) make that
// state too, and its registrations have run every event (Stats.Queued):
// Stop, which stops handlers, then cuts none short, and the
// registrations' final states are checked (checkReg).
func (d *robustDriver) quiesce(rw *robustWatcher) {
	_, l := rw.watcher()
	l.mu.Lock()
	final := l.final
	l.mu.Unlock()
	if final == nil {
		return // converge reported it
	}
	want := cacheOf(*final)
	var diff []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s := l.restoredState()
		l.mu.Lock()
		for _, e := range l.events {
			s.apply(e)
		}
		l.mu.Unlock()
		if diff = mapDiff(s.cache(), want); len(diff) == 0 {
			break
		}
		if time.Now().After(deadline) {
			w, _ := rw.watcher()
			l.mu.Lock()
			n := len(l.events)
			last := l.events[max(0, n-5):]
			l.mu.Unlock()
			d.run.violation("watcher %d: its handlers' events do not make its final caches within 10 s: %v\nstats %+v; %d events in its log, the last %v\n%s\nits log:\n%s",
				rw.id, diff, w.Stats(), n, last, l.eventsOfKeys(diff), l.log.text())
			return
		}
	}
	w, _ := rw.watcher()
	for deadline := time.Now().Add(10 * time.Second); w.Stats().Queued > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			d.run.violation("watcher %d: its registrations have not run their events within 10 s (%d queued)", rw.id, w.Stats().Queued)
			return
		}
	}
	l.mu.Lock()
	l.quiet = true
	l.mu.Unlock()
}
