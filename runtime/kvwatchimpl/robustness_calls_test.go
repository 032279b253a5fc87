package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file is the robustness test's calls from user code: the driver
// asks a watcher's own handler, one of its registrations' handlers or the
// body of one of its Events loops to call a method of the watcher (or of
// a registration) the next time it runs. Each call must return (README,
// Watch guarantees 7: none waits for a delivery to the code that called
// it) and do what it says; what it changes is then checked against the
// history like everything else.

// callee is where a call is made from.
type callee int

const (
	fromHandler callee = iota // the watcher's own handler
	fromReg                   // a registration's handler
	fromLoop                  // the body of an Events loop
	callees
)

func (c callee) String() string {
	return [...]string{"a handler", "a registration's handler", "an Events loop body"}[c]
}

// callKind is the method called.
type callKind int

const (
	callSetScopes callKind = iota
	callWaitSynced
	callWaitRevision
	callAddHandlers
	callRemove
	callCheckpoint
	callStop
	callKinds
)

func (k callKind) String() string {
	return [...]string{"SetScopes", "WaitSynced", "WaitRevision", "AddHandlers", "Remove", "Checkpoint", "Stop"}[k]
}

// callPlan is a call the driver chose.
type callPlan struct {
	kind   callKind
	scopes kvwatchimpl.Scopes // SetScopes'
	reg    regPlan            // AddHandlers'
}

// callsMade counts the calls made from user code, by where and what.
type callsMade [callees][callKinds]int

func (a *callsMade) add(b callsMade) {
	for i := range a {
		for j := range a[i] {
			a[i][j] += b[i][j]
		}
	}
}

func (a callsMade) String() string {
	s := ""
	for i := range a {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("from %s:", callee(i))
		for j, n := range a[i] {
			s += fmt.Sprintf(" %s %d", callKind(j), n)
		}
	}
	return s
}

// callWithin is how long a call from user code may take: far more than
// a re-scope or a catch-up takes through any fault of the run, far less
// than a hang.
const callWithin = 30 * time.Second

// callInCallback makes the next callback of a random kind of rw's call a
// random method.
func (d *robustDriver) callInCallback(rw *robustWatcher) {
	p := &callPlan{kind: callKind(d.rng.IntN(int(callKinds)))}
	switch p.kind {
	case callSetScopes:
		p.scopes = randomScopes(d.rng, 8)
	case callAddHandlers:
		p.reg = regPlan{how: regInHandler}
		if d.rng.IntN(3) == 0 {
			p.reg.removeAfter = 1 + d.rng.IntN(400)
		}
	case callStop:
		if d.rng.IntN(3) > 0 {
			p.kind = callCheckpoint // Stop ends a life: less often
		}
	}
	rw.inCall[d.rng.IntN(int(callees))].Store(p)
}

// calls makes the call the driver asked of a callback of where, if any,
// on w, the watcher of life l.
func (rw *robustWatcher) calls(where callee, l *life, w *kvwatchimpl.Watcher) {
	p := rw.inCall[where].Swap(nil)
	if p == nil || w == nil {
		return
	}
	l.log.note(fmt.Sprintf("%s calls %s", where, p.kind))
	rw.mu.Lock()
	rw.made[where][p.kind]++
	rw.mu.Unlock()
	hang := time.AfterFunc(callWithin, func() {
		rw.run.violation("watcher %d: %s from %s did not return within %s", rw.id, p.kind, where, callWithin)
	})
	defer hang.Stop()
	ctx, cancel := context.WithTimeout(rw.run.callsCtx, callWithin)
	defer cancel()
	// ended reports whether an error is the watch's end (the driver
	// stopped it, or the bucket went away), or the run's: no fault of the
	// call.
	ended := func(err error) bool {
		if rw.run.callsCtx.Err() != nil {
			return true
		}
		select {
		case <-w.Done():
			return true
		default:
		}
		return errors.Is(err, kvwatch.ErrStopped) || errors.Is(err, jetstream.ErrBucketNotFound) || w.Err() != nil
	}
	switch p.kind {
	case callSetScopes:
		err := w.SetScopes(ctx, p.scopes)
		if err != nil && !ended(err) {
			rw.run.violation("watcher %d: SetScopes from %s: %v", rw.id, where, err)
		}
		if err != nil && rw.run.callsCtx.Err() != nil {
			// Cut short by the end of the run: the change still applies,
			// maybe after the watcher was found quiet (checkReg).
			l.mu.Lock()
			l.lateChange = true
			l.mu.Unlock()
		}
	case callWaitSynced:
		err := w.WaitSynced(ctx)
		switch {
		case err == nil && !w.Synced():
			rw.run.violation("watcher %d: WaitSynced from %s returned, not synced", rw.id, where)
		case err != nil && !ended(err):
			rw.run.violation("watcher %d: WaitSynced from %s: %v", rw.id, where, err)
		case err == nil:
			// The sync point is one step: every registration there was
			// when WaitSynced returned is synced (docs/watching.md).
			for _, g := range l.registrations() {
				if r := g.reg.Load(); r != nil && g.live() && !r.Synced() {
					rw.run.violation("watcher %d: WaitSynced from %s returned, a registration (%s) not synced", rw.id, where, g.plan.how)
				}
			}
		}
	case callWaitRevision:
		epoch, rev := rw.run.hist.newest()
		err := w.WaitRevision(ctx, rev)
		switch {
		case err == nil && w.Stats().LastRevision < rev:
			rw.run.violation("watcher %d: WaitRevision(%d) from %s returned at revision %d", rw.id, rev, where, w.Stats().LastRevision)
		case err != nil && !ended(err) && epoch == rw.run.hist.currentEpoch() && !errors.Is(err, kvwatch.ErrStreamWentBack):
			rw.run.violation("watcher %d: WaitRevision(%d) from %s: %v", rw.id, rev, where, err)
		}
	case callAddHandlers:
		rw.addRegistration(l, w, p.reg)
	case callRemove:
		for _, g := range l.registrations() {
			if g.live() {
				g.remove(l)
				break
			}
		}
	case callCheckpoint:
		rw.save()
	case callStop:
		l.mu.Lock()
		if l.stopAt < 0 {
			l.stopAt = len(l.events)
		}
		l.mu.Unlock()
		noteConsumerOf(w, l)
		w.Stop()
		healthy := rw.run.healthy.Load()
		go rw.checkConsumersGone(l, healthy) // as the driver's stop does; reviveEnded starts the next life
	}
}
