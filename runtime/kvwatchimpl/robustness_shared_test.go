package kvwatchimpl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file is the robustness test's shared watchers: handlers added to a
// running watcher (AddHandlers, from the driver's goroutine and from the
// watcher's own handler) and loops over its events (Events), each
// recording what it gets in a log of its own, and the check of those logs
// against the watcher's own events and against the history of writes.
//
// Where a registration starts. AddHandlers takes the snapshot of the
// caches and inserts the registration's handlers under the state lock,
// in one critical section: every change applied before it is in the
// replay, every change after it goes to the registration. A probe handler
// (kvwatch.ProbeRegistration, export_test.go) attached in that section
// reads the watcher's revision R, whether it is synced or re-scoping, its
// filters, the size of the caches (the replay's length), and the length
// of the watcher's own log. Handlers run on goroutines of their own,
// behind the caches, so the watcher's log may then still lack the changes
// queued for its handlers: the split is somewhere after it, where the
// replay is the state the log makes and the registration's events are the
// log's after it.

// regIDs numbers registrations across a run, for the reports.
var regIDs atomic.Int64

// regHow is how a registration was made.
type regHow int

const (
	regDriver    regHow = iota // AddHandlers from the driver's goroutine
	regInHandler               // AddHandlers from the watcher's own handler
	regLoop                    // a loop over Watcher.Events
)

func (h regHow) String() string {
	return [...]string{"AddHandlers", "AddHandlers in a handler", "Events loop"}[h]
}

// regPlan is what the driver chose for a registration.
type regPlan struct {
	how regHow
	// removeAfter makes the registration remove itself, from its
	// handler, once it has had this many events after its replay.
	removeAfter int
	// breakAfter makes a loop break after this many events (SyncedEvent
	// included); slow makes its body sleep 200 µs an event.
	breakAfter int
	slow       bool
}

// rreg is one registration (or loop) and what it received.
type rreg struct {
	id     int
	plan   regPlan
	reg    atomic.Pointer[kvwatchimpl.Registration]
	cancel context.CancelFunc // a loop's
	done   chan struct{}      // closed when a loop has ended

	mu     sync.Mutex
	probed bool
	state  kvwatchimpl.RegistrationState
	logAt  int      // len(life.events) when AddHandlers took its snapshot
	events []revent // the replay (state.Cached events), then the rest
	// syncedAt is len(events) when its OnSynced ran (a loop: when
	// SyncedEvent came), -1 if it did not.
	syncedAt int
	// selfRemovedAt is len(events) when it removed itself, removedAt
	// len(life.events) right before the driver removed it; -1 if not.
	selfRemovedAt, removedAt int
	loopItems                int  // a loop's events and SyncedEvents
	loopBroke                bool // the loop broke (breakAfter)
	odd                      []string
}

func newRReg(plan regPlan) *rreg {
	return &rreg{id: int(regIDs.Add(1)), plan: plan, syncedAt: -1, selfRemovedAt: -1, removedAt: -1}
}

func (g *rreg) note(format string, args ...any) {
	g.mu.Lock()
	g.odd = append(g.odd, fmt.Sprintf(format, args...))
	g.mu.Unlock()
}

// probe returns the probe's function: what the watcher is at when
// AddHandlers takes its snapshot, with the state lock held.
func (g *rreg) probe(l *life) func(kvwatchimpl.RegistrationState) {
	return func(s kvwatchimpl.RegistrationState) {
		l.mu.Lock()
		at := len(l.events)
		l.mu.Unlock()
		g.mu.Lock()
		if g.probed {
			g.odd = append(g.odd, "probed twice")
		}
		g.probed, g.state, g.logAt = true, s, at
		g.mu.Unlock()
	}
}

// handle records an event, and removes the registration once it has had
// plan.removeAfter events after its replay.
func (g *rreg) handle(e revent) {
	g.mu.Lock()
	g.events = append(g.events, e)
	remove := g.plan.removeAfter > 0 && g.selfRemovedAt < 0 && len(g.events)-g.state.Cached >= g.plan.removeAfter
	g.mu.Unlock()
	if !remove {
		return
	}
	if r := g.reg.Load(); r != nil { // nil while AddHandlers still runs: at a later event
		g.mu.Lock()
		g.selfRemovedAt = len(g.events)
		g.mu.Unlock()
		r.Remove()
	}
}

func (g *rreg) synced() {
	g.mu.Lock()
	if g.syncedAt >= 0 {
		g.odd = append(g.odd, "OnSynced twice")
	}
	g.syncedAt = len(g.events)
	g.mu.Unlock()
}

// handlers returns the registration's handlers: one a kind, made with
// HandlerOf over the watcher's bindings, each making the calls the driver
// asks of registrations' handlers (robustness_calls_test.go), and the
// probe.
func (g *rreg) handlers(rw *robustWatcher, l *life, w *kvwatchimpl.Watcher) []kvwatchimpl.AnyHandler {
	return []kvwatchimpl.AnyHandler{
		kvwatchimpl.HandlerOf(l.routes, func(ev kvwatch.Event[routeKey, route]) {
			g.handle(newRevent(ev.Key.String(), ev.Op, ev.Value, ev.Revision, ev.Initial, ev.LeftScope, ev.FinalStateUnknown))
			rw.calls(fromReg, l, w)
		}),
		kvwatchimpl.HandlerOf(l.configs, func(ev kvwatch.Event[vpcKey, vpcConfig]) {
			g.handle(newRevent(ev.Key.String(), ev.Op, ev.Value, ev.Revision, ev.Initial, ev.LeftScope, ev.FinalStateUnknown))
			rw.calls(fromReg, l, w)
		}),
		kvwatchimpl.ProbeRegistration(g.probe(l)),
	}
}

// endRegistrations removes every registration of rw's life and ends its
// loops, and lets no other start in that life: the store is about to go
// back (storeGoesBack), and a registration is checked against one history.
func (rw *robustWatcher) endRegistrations() {
	for i := range rw.inCall {
		rw.inCall[i].Store(nil)
	}
	_, l := rw.watcher()
	rw.endLoops(l) // first: a loop's body may be adding a registration
	rw.regMu.Lock()
	defer rw.regMu.Unlock()
	l.mu.Lock()
	l.noRegs = true
	l.mu.Unlock()
	for _, g := range l.registrations() {
		if g.live() {
			g.remove(l)
		}
	}
}

// addRegistration adds handlers to w, the watcher of life l.
func (rw *robustWatcher) addRegistration(l *life, w *kvwatchimpl.Watcher, plan regPlan) {
	rw.regMu.Lock() // against endRegistrations
	defer rw.regMu.Unlock()
	l.mu.Lock()
	no := l.noRegs
	l.mu.Unlock()
	if no {
		return
	}
	g := newRReg(plan)
	r, err := w.AddHandlers(g.handlers(rw, l, w), g.synced, func(err error) { g.note("its onError: %v", err) })
	if err != nil {
		// It fails once the watch has ended: stopped, or on its own (the
		// error it ended on; its goroutines may still run its last events).
		if !errors.Is(err, kvwatch.ErrStopped) && (w.Err() == nil || !errors.Is(err, w.Err())) {
			rw.run.violation("watcher %d: AddHandlers on a running watcher: %v", rw.id, err)
		}
		return
	}
	g.reg.Store(r)
	g.mu.Lock()
	probed := g.probed
	g.mu.Unlock()
	if !probed {
		rw.run.violation("watcher %d: AddHandlers returned without attaching its handlers", rw.id)
		return
	}
	l.mu.Lock()
	l.regs = append(l.regs, g)
	l.mu.Unlock()
}

// startLoop ranges over w.Events in a goroutine of its own.
func (rw *robustWatcher) startLoop(l *life, w *kvwatchimpl.Watcher, plan regPlan) {
	l.mu.Lock()
	no := l.noRegs
	l.mu.Unlock()
	if no {
		return
	}
	g := newRReg(plan)
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel, g.done = cancel, make(chan struct{})
	l.mu.Lock()
	l.regs = append(l.regs, g)
	l.mu.Unlock()
	go func() {
		defer close(g.done)
		for ev := range w.Events(ctx, l.routes, l.configs, kvwatchimpl.ProbeBinding(g.probe(l))) {
			switch ev := ev.(type) {
			case kvwatch.Event[routeKey, route]:
				g.handle(newRevent(ev.Key.String(), ev.Op, ev.Value, ev.Revision, ev.Initial, ev.LeftScope, ev.FinalStateUnknown))
			case kvwatch.Event[vpcKey, vpcConfig]:
				g.handle(newRevent(ev.Key.String(), ev.Op, ev.Value, ev.Revision, ev.Initial, ev.LeftScope, ev.FinalStateUnknown))
			case kvwatch.SyncedEvent:
				g.synced()
			default:
				g.note("an event of type %T", ev)
			}
			g.mu.Lock()
			g.loopItems++
			g.loopBroke = plan.breakAfter > 0 && g.loopItems >= plan.breakAfter
			broke := g.loopBroke
			g.mu.Unlock()
			if plan.slow {
				time.Sleep(200 * time.Microsecond) // its queue grows meanwhile
			}
			rw.calls(fromLoop, l, w)
			if broke {
				break
			}
		}
	}()
}

// endLoop ends a loop (its context) and waits for it.
func (rw *robustWatcher) endLoop(g *rreg) {
	g.cancel()
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		rw.run.violation("watcher %d: loop %d over Events still running 10 s after its context ended", rw.id, g.id)
	}
}

// endLoops ends every loop over the events of life l.
func (rw *robustWatcher) endLoops(l *life) {
	for _, g := range l.registrations() {
		if g.plan.how == regLoop {
			rw.endLoop(g)
		}
	}
}

func (l *life) registrations() []*rreg {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.regs)
}

// live reports whether g is a registration neither removed nor a loop.
func (g *rreg) live() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.plan.how != regLoop && g.removedAt < 0 && g.selfRemovedAt < 0
}

// running reports whether g is a loop still running.
func (g *rreg) running() bool {
	if g.plan.how != regLoop {
		return false
	}
	select {
	case <-g.done:
		return false
	default:
		return true
	}
}

// remove removes g from the driver, recording how far the watcher's own
// log was first: every event before its last entry then had been handed
// to the registration's handlers.
func (g *rreg) remove(l *life) {
	l.mu.Lock()
	at := len(l.events)
	l.mu.Unlock()
	g.mu.Lock()
	g.removedAt = at
	g.mu.Unlock()
	g.reg.Load().Remove()
}

// rentry is a cached entry as events tell it.
type rentry struct {
	rev      uint64
	value    string
	restored bool // from the checkpoint the watcher resumed from, no event since
}

// rstate is the caches as a sequence of events (and data errors) makes
// them.
type rstate map[string]rentry

func (s rstate) apply(e revent) {
	switch {
	case e.sync, e.rewound:
	case e.dropped || e.op != kvwatch.OpPut:
		delete(s, e.key)
	default:
		s[e.key] = rentry{rev: e.rev, value: e.value}
	}
}

// cache returns s as stateDiffOf compares caches.
func (s rstate) cache() map[string]string {
	out := make(map[string]string, len(s))
	for k, e := range s {
		out[k] = fmt.Sprintf("%d %s", e.rev, e.value)
	}
	return out
}

// restoredState returns what a life's caches held before its first event:
// the entries of the checkpoint it resumed from within its scopes.
func (l *life) restoredState() rstate {
	s := rstate{}
	if l.resumed == nil {
		return s
	}
	add := func(key string, value any, rev uint64) {
		if inFilters(l.startFilters, key) {
			v, _ := json.Marshal(value)
			s[key] = rentry{rev: rev, value: string(v), restored: true}
		}
	}
	for _, e := range kvwatchimpl.EntriesOf(*l.resumed, &routeKind) {
		add(e.Key.String(), e.Value, e.Revision)
	}
	for _, e := range kvwatchimpl.EntriesOf(*l.resumed, &vpcKind) {
		add(e.Key.String(), e.Value, e.Revision)
	}
	return s
}

// mapDiff lists up to 5 differences between two caches.
func mapDiff(got, want map[string]string) []string {
	var diffs []string
	for k, g := range got {
		if w, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s %s, absent from the watcher's", k, g))
		} else if w != g {
			diffs = append(diffs, fmt.Sprintf("%s %s, the watcher's %s", k, g, w))
		}
	}
	for k, w := range want {
		if _, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s missing, the watcher's %s", k, w))
		}
	}
	slices.Sort(diffs)
	return diffs[:min(len(diffs), 5)]
}

// sameEvent reports whether a registration's event is the watcher's.
func sameEvent(a, b revent) bool {
	return a.key == b.key && a.op == b.op && a.value == b.value && a.rev == b.rev && a.initial == b.initial &&
		a.left == b.left && a.unknown == b.unknown
}

func (e revent) String() string {
	s := fmt.Sprintf("%s %s@%d", e.key, e.op, e.rev)
	if e.op == kvwatch.OpPut {
		s += " " + e.value
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{e.initial, "initial"}, {e.left, "left"}, {e.unknown, "unknown"}, {e.dropped, "data error"}} {
		if f.on {
			s += " " + f.name
		}
	}
	if e.sync {
		s = fmt.Sprintf("sync point @%d %v", e.rev, e.filters)
	}
	return s
}

// lifeSeq is a life's own log, for the checks of its registrations.
type lifeSeq struct {
	l     *life
	hist  *history
	epoch int
	items []revent // the life's log: events, data errors, sync points
	m     []int    // the indices in items of the events and data errors (the applies, in order)
	mpos  []int    // mpos[x]: how many of m are below x (0 ≤ x ≤ len(items))
	// firstSync is the index in items of the first sync point, -1 if none.
	firstSync int
	init      rstate
}

func newLifeSeq(hist *history, l *life) *lifeSeq {
	l.mu.Lock()
	items := slices.Clone(l.events)
	l.mu.Unlock()
	q := &lifeSeq{l: l, hist: hist, epoch: l.readEpoch(), items: items, mpos: make([]int, len(items)+1), firstSync: -1, init: l.restoredState()}
	for x, e := range items {
		q.mpos[x] = len(q.m)
		if e.sync {
			if q.firstSync < 0 {
				q.firstSync = x
			}
			continue
		}
		q.m = append(q.m, x)
	}
	q.mpos[len(items)] = len(q.m)
	return q
}

// stateAt returns the caches as the life's events make them before its
// apply number p.
func (q *lifeSeq) stateAt(p int) rstate {
	s := maps2(q.init)
	for _, x := range q.m[:p] {
		s.apply(q.items[x])
	}
	return s
}

func maps2(s rstate) rstate {
	out := make(rstate, len(s))
	for k, v := range s {
		out[k] = v
	}
	return out
}

// checkSyncPoints checks that the life's events and data errors make its
// caches at every sync point (the checkpoint there): what the
// registrations' checks build on. Sync points once Stop was called are
// left out: handlers no longer run then.
func (q *lifeSeq) checkSyncPoints(fail func(string, ...any)) {
	s := maps2(q.init)
	i := 0
	for x, e := range q.items {
		if !e.sync {
			s.apply(e)
			continue
		}
		i++
		if i == 1 && q.l.syncedAt >= 0 && q.l.syncedAt != x+1 {
			fail("its OnSynced ran at %d in its log, not right after its first sync point (%d)", q.l.syncedAt, x)
		}
		if q.l.stopAt >= 0 && x >= q.l.stopAt {
			return
		}
		if i > len(q.l.syncs) {
			fail("more sync points in its log than checkpoints")
			return
		}
		if d := mapDiff(s.cache(), cacheOf(q.l.syncs[i-1])); len(d) > 0 {
			fail("its events and data errors do not make its caches at the sync point at %d: %v", e.rev, d)
		}
	}
}

// regStats counts what the registrations' checks covered.
type regStats struct {
	regs, removed, loops, events int
	// Registrations added while the watcher was synced (their replay
	// checked against the history at R), while it caught up (before it
	// was synced, or re-scoping); splits after applies in flight; replays
	// cut short by the end of a watch or loop; sync points and final
	// states checked on registrations; OnSynced checked.
	atR, catchingUp, inFlight, cut, syncPoints, finals, onSynced int
}

func (a *regStats) add(b regStats) {
	a.regs += b.regs
	a.removed += b.removed
	a.loops += b.loops
	a.events += b.events
	a.atR += b.atR
	a.catchingUp += b.catchingUp
	a.inFlight += b.inFlight
	a.cut += b.cut
	a.syncPoints += b.syncPoints
	a.finals += b.finals
	a.onSynced += b.onSynced
}

func (a regStats) String() string {
	return fmt.Sprintf("%d added while synced (replay checked at R), %d while catching up; %d splits after applies in flight; %d replays cut short; "+
		"%d sync points, %d OnSynced and %d final states checked", a.atR, a.catchingUp, a.inFlight, a.cut, a.syncPoints, a.onSynced, a.finals)
}

// checkRegistrations checks every registration and loop of a life; it
// returns the violations.
func checkRegistrations(hist *history, bucketHistory int, id, n int, l *life, mirror bool, st *regStats) []string {
	var bad []string
	fail := func(format string, args ...any) {
		bad = append(bad, fmt.Sprintf("watcher %d life %d (epoch %d): ", id, n, l.epoch)+fmt.Sprintf(format, args...))
	}
	q := newLifeSeq(hist, l)
	q.checkSyncPoints(fail)
	for _, g := range l.registrations() {
		if g.plan.how == regLoop {
			select {
			case <-g.done:
			case <-time.After(10 * time.Second):
				fail("loop %d over Events still running 10 s after its watcher ended", g.id)
				continue
			}
		}
		var regBad []string
		q.checkReg(g, bucketHistory, mirror, st, func(format string, args ...any) {
			regBad = append(regBad, fmt.Sprintf("registration %d (%s): ", g.id, g.plan.how)+fmt.Sprintf(format, args...))
		})
		for _, b := range regBad {
			fail("%s", b)
		}
	}
	return bad
}

// checkReg checks one registration against the life's own log and the
// history.
func (q *lifeSeq) checkReg(g *rreg, bucketHistory int, mirror bool, st *regStats, fail func(string, ...any)) {
	g.mu.Lock()
	events, state, logAt := slices.Clone(g.events), g.state, min(max(0, g.logAt-q.l.logShift), len(q.items))
	syncedAt, selfRemovedAt, removedAt := g.syncedAt, g.selfRemovedAt, g.removedAt
	if removedAt >= 0 {
		removedAt = max(0, removedAt-q.l.logShift)
	}
	probed, odd, loopItems := g.probed, slices.Clone(g.odd), g.loopItems
	g.mu.Unlock()
	l, hist := q.l, q.hist
	for _, o := range odd {
		fail("%s", o)
	}
	if !probed {
		// A loop whose AddHandlers failed: the watch had ended.
		if len(events) > 0 || syncedAt >= 0 {
			fail("events without a registration")
		}
		return
	}
	st.regs++
	st.events += len(events)
	if g.plan.how == regLoop {
		st.loops++
		recorded := len(events)
		if syncedAt >= 0 {
			recorded++ // SyncedEvent
		}
		if loopItems != recorded {
			fail("the loop counted %d events, recorded %d", loopItems, recorded)
		}
	} else if selfRemovedAt >= 0 || removedAt >= 0 {
		st.removed++
	}

	// The replay: every cached entry once, as a put flagged Initial.
	nReplay := state.Cached
	complete := len(events) >= nReplay
	replay := events[:min(nReplay, len(events))]
	var live []revent
	if complete {
		live = events[nReplay:]
	}
	replayed := rstate{}
	for _, e := range replay {
		if !e.initial || e.op != kvwatch.OpPut || e.inferred {
			fail("replayed as %v: not an initial put", e)
		}
		if _, dup := replayed[e.key]; dup {
			fail("%s replayed twice", e.key)
		}
		replayed.apply(e)
	}

	// The split: after the applies the watcher's log had when the
	// snapshot was taken (lo), and after those queued for its own
	// handlers then, which the snapshot holds and the registration does
	// not get.
	lo := q.mpos[logAt]
	R := state.Revision
	synced := state.Synced && !state.Rescoping
	// inFlight: a change applied in the live tail (Synced, not
	// re-scoping: nothing else applies then), at or below R.
	inFlight := func(e revent) bool { return !e.initial && !e.inferred && e.rev <= R }
	splitOK := func(s int) string {
		if synced {
			for _, x := range q.m[lo:s] {
				if e := q.items[x]; e.rev > R {
					return fmt.Sprintf("%v before the split is after R %d", e, R)
				}
			}
			if s < len(q.m) && inFlight(q.items[q.m[s]]) {
				return fmt.Sprintf("%v after the split is a change of the live tail at or below %d", q.items[q.m[s]], R)
			}
		}
		return ""
	}
	replayMatches := func(fold rstate) bool {
		if complete && len(fold) != len(replayed) {
			return false
		}
		for k, e := range replayed {
			if f, ok := fold[k]; !ok || f.rev != e.rev || f.value != e.value {
				return false
			}
		}
		return true
	}
	// Stop ends every listener where it is: the watcher's own handlers
	// may be cut before the registration's (each runs behind the caches
	// by its own queue), whose last events are then checked against the
	// history alone (below).
	ownCut := l.stopAt >= 0 && !l.quiet
	// Candidates: with events after the replay, s is at most the first
	// watcher event equal to the first of them, after the event before it.
	from, to := lo, len(q.m)
	if len(live) > 0 {
		e0 := -1
		for i := lo; i < len(q.m); i++ {
			if e := q.items[q.m[i]]; !e.dropped && sameEvent(live[0], e) {
				e0 = i
				break
			}
		}
		switch {
		case e0 < 0 && ownCut:
			// The watcher's own handlers stopped before it: the split is
			// anywhere after lo.
		case e0 < 0:
			fail("its first event after the replay, %v, is none of the watcher's after the snapshot (R %d, its log at %d)", live[0], R, logAt)
			return
		default:
			to = e0
		}
		for i := to - 1; i >= lo && e0 >= 0; i-- {
			if !q.items[q.m[i]].dropped {
				from = i + 1 // the split is after the last event it does not have
				break
			}
		}
	}
	fold := q.stateAt(from)
	s := -1
	var why string
	for c := from; c <= to; c++ {
		if c > from {
			fold.apply(q.items[q.m[c-1]])
		}
		if w := splitOK(c); w != "" {
			if why == "" {
				why = w
			}
			continue
		}
		if !replayMatches(fold) {
			if why == "" {
				why = fmt.Sprintf("its replay is not the watcher's state there: %v", mapDiff(replayed.cache(), fold.cache()))
			}
			continue
		}
		s = c
		if len(live) > 0 {
			break
		}
	}
	beyondOwn := false // the split lies past where Stop cut the watcher's own handlers
	switch {
	case s < 0 && ownCut:
		s, beyondOwn = len(q.m), true
	case s < 0:
		fail("no split of the watcher's log fits it (R %d, synced %v, re-scoping %v, its log at %d, %d replayed of %d): %s",
			R, state.Synced, state.Rescoping, logAt, len(replay), nReplay, why)
		return
	}
	fold = q.stateAt(s)
	if beyondOwn {
		fold = maps2(replayed) // what it knows where it starts is its replay
	}
	if s > lo {
		st.inFlight++
	}
	if !complete {
		st.cut++
	}
	if synced {
		st.atR++
	} else {
		st.catchingUp++
	}

	// The events after the replay: the watcher's after the split, in
	// order, none missing, none added.
	var after []int // indices in items of the watcher's events after the split
	for _, x := range q.m[s:] {
		if !q.items[x].dropped {
			after = append(after, x)
		}
	}
	for j, e := range live {
		if j >= len(after) && ownCut {
			break
		}
		if j >= len(after) {
			fail("%d events after the replay, the watcher had %d after the split; the first extra: %v", len(live), len(after), e)
			return
		}
		if !sameEvent(e, q.items[after[j]]) {
			fail("event %d after the replay is %v, the watcher's there %v", j, e, q.items[after[j]])
			return
		}
	}
	if selfRemovedAt >= 0 && len(events) != selfRemovedAt {
		fail("%d events after it removed itself from its handler", len(events)-selfRemovedAt)
	}
	if complete && g.plan.how != regLoop && removedAt < 0 && (l.stopAt < 0 || (l.quiet && !l.lateChange)) {
		// What it must have had: all, up to its own removal, unless Stop
		// or the driver's removal cut it short (it runs behind the
		// watcher's own handlers by what it has queued); Stop after the
		// end of the run cuts nothing (quiesce).
		must := len(after)
		if selfRemovedAt >= 0 {
			must = min(must, selfRemovedAt-nReplay)
		}
		if len(live) < must {
			fail("%d events after the replay, but %d were due (removed by the driver: %v, by itself: %v, stopped: %v); the first missing: %v",
				len(live), must, removedAt >= 0, selfRemovedAt >= 0, l.stopAt >= 0, q.items[after[len(live)]])
		}
	}

	// OnSynced: at the watcher's sync point (or right after the replay
	// when that came before the split); every event before it flagged
	// Initial.
	msync := -1
	if q.firstSync >= 0 {
		msync = q.mpos[q.firstSync]
	}
	beforeSync := 0 // its events after the replay that come before the sync point
	for _, x := range after {
		if msync >= 0 && q.mpos[x] < msync {
			beforeSync++
		}
	}
	if msync < 0 {
		beforeSync = len(after)
	}
	if syncedAt >= 0 {
		st.onSynced++
		switch k := syncedAt - nReplay; {
		case !complete:
			fail("OnSynced with its replay cut short")
		case (msync < 0 && ownCut) || beyondOwn:
			// The watcher's own handlers stopped before its sync point, or
			// before its split: nothing to place it by.
		case msync < 0:
			fail("OnSynced, the watcher never synced")
		case k != beforeSync:
			fail("OnSynced after %d events after its replay, the watcher's sync point after %d", k, beforeSync)
		}
	} else if msync >= 0 && len(live) > beforeSync {
		fail("no OnSynced, but %d events after the watcher's sync point", len(live)-beforeSync)
	}
	for j, e := range live {
		if j < beforeSync && !e.initial {
			fail("%v before its OnSynced, not flagged Initial", e)
			break
		}
	}

	// Against the history. The replay at R: the caches' state then, as
	// the history says, within the filters (a key behind as the live
	// tail leaves it excused), when the watcher was not catching up.
	if complete && synced {
		excuse := func(key, cached string) bool {
			return lagging(hist, q.epoch, bucketHistory, l.reported, R, key, cached)
		}
		for _, d := range stateDiffOf(hist, q.epoch, R, state.Filters, replayed.cache(), excuse) {
			fail("its replay at %d: %s", R, d)
		}
	}
	if !complete {
		return // nothing after a replay cut short
	}

	// Its events as checkLife checks a life's, from the replay on, with
	// the watcher's sync points and data errors from the split's last
	// apply on, as far as its events go, and those past where Stop cut the
	// watcher's own handlers (ownCut). When synced, until the next sync
	// point (the scopes may change after it, and a SetScopes from no scope
	// at all may take the revision back): live events after R, and no
	// write after R missing before the first event of a key in scope.
	// Sync points once Stop was called are left out: handlers no longer
	// run then.
	seq := evSeq{hist: hist, epoch: q.epoch, bucketHistory: bucketHistory, reported: l.reported, start: fold,
		forget: l.resumed != nil && l.resumedEpoch != q.epoch && !state.Synced, exact: true, mirror: mirror}
	if synced {
		seq.floor = &evFloor{rev: R, live: true, what: "live event at or below R %d, the revision of its replay", seed: true, filters: state.Filters}
	}
	j := 0
	start := 0
	if s > 0 {
		start = q.m[s-1] + 1 // with the sync points between the split's last apply and the next
	}
items:
	for x := start; x < len(q.items); x++ {
		switch e := q.items[x]; {
		case e.sync && l.stopAt >= 0 && x >= l.stopAt:
		case e.sync || e.dropped:
			seq.items = append(seq.items, e)
		case j < len(live):
			seq.items = append(seq.items, live[j]) // the watcher's event there (above)
			j++
		default:
			break items // its events end before this one
		}
	}
	seq.unlogged = live[j:]
	view, syncPoints := checkEvents(seq, fail)
	st.syncPoints += syncPoints

	// The final state, for a registration that lived to the end of the
	// run and had every event of the watcher's after the split.
	if l.final != nil && l.quiet && g.plan.how != regLoop && removedAt < 0 && selfRemovedAt < 0 && len(live) == len(after) {
		st.finals++
		for _, d := range stateDiffOf(hist, q.epoch, ^uint64(0), l.final.Filters, view.cache(), nil) {
			fail("at the end: %s", d)
		}
	}
}

// undecodable returns reported with the revisions of the puts of epoch
// whose values do not decode added.
func undecodable(hist *history, epoch int, reported map[uint64]bool) map[uint64]bool {
	out := maps.Clone(reported)
	for _, w := range hist.epochWrites(epoch) {
		if w.op == "PUT" && canonical(w.key, w.value) == "undecodable" {
			out[w.rev] = true
		}
	}
	return out
}

// describeRegs summarizes a life's registrations for a failure's log.
func describeRegs(l *life) string {
	var b strings.Builder
	for _, g := range l.registrations() {
		g.mu.Lock()
		fmt.Fprintf(&b, "registration %d (%s): probe %+v at log %d, %d events, synced at %d, removed at %d/%d\n",
			g.id, g.plan.how, g.state, g.logAt, len(g.events), g.syncedAt, g.removedAt, g.selfRemovedAt)
		g.mu.Unlock()
	}
	return b.String()
}
