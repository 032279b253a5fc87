package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
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
// recording what it gets in a log of its own. Those logs are checked
// against the watcher's own events and against the history of writes in
// robustness_regcheck_test.go.

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
	wasSynced := w.Synced()
	onSynced := func() {
		g.synced()
		if !w.Synced() {
			g.note("its OnSynced ran, the watcher not synced")
		}
	}
	r, err := w.AddHandlers(g.handlers(rw, l, w), onSynced, func(err error) { g.note("its onError: %v", err) })
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
	probed, snapshotSynced := g.probed, g.state.Synced
	g.mu.Unlock()
	if !probed {
		rw.run.violation("watcher %d: AddHandlers returned without attaching its handlers", rw.id)
		return
	}
	if (wasSynced || snapshotSynced) && !r.Synced() {
		// The sync point is one step (docs/watching.md): a registration
		// added on a synced watcher is synced when AddHandlers returns.
		rw.run.violation("watcher %d: AddHandlers (%s) on a synced watcher returned a registration not synced", rw.id, plan.how)
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

// endLoop ends a loop (its context) and waits for it: for the call its
// body may be in (each bounded by callWithin, and checked to return by
// then: a WaitRevision on an edge whose mirror is cut off waits that long),
// and 10 s more for the loop to see its context ended.
func (rw *robustWatcher) endLoop(g *rreg) {
	g.cancel()
	select {
	case <-g.done:
	case <-time.After(callWithin + 10*time.Second):
		rw.run.violation("watcher %d: loop %d over Events still running %s after its context ended", rw.id, g.id, callWithin+10*time.Second)
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
