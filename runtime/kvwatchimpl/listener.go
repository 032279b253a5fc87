package kvwatchimpl

import (
	"context"
	"sync"
	"sync/atomic"
)

// This file is how user code is called, and why no call from it can wait
// for itself. The event goroutine never runs user code: it applies each
// change to the caches, then appends what every set of callbacks must
// hear of it to that set's own queue. A set of callbacks is a listener:
// the watcher's own handlers (with OnSynced and OnError), each
// registration of AddHandlers, each loop over Events. A listener's queue is
// run, in order, by a goroutine of its own, or by the loop itself, as
// client-go's shared informers give each listener its own buffer and
// goroutine.
//
// So a method called from user code (a handler, OnSynced, OnError, the
// body of an Events loop) never waits for a delivery to that code: the
// event goroutine it may wait for never waits for user code, but in two
// places, and both give way. Before it takes in more from the server, it
// waits while a listener has more than maxQueued changes it has not run
// (backpressure: a slow handler holds the backlog on the server, not in
// the client), unless a caller is waiting for the event goroutine
// (WaitSynced, WaitRevision, SetScopes, a registration's WaitSynced): that
// caller may be the very code holding the queue back, so the watcher then
// reads on, and the queue grows by what the caller waits for. At the sync
// point it holds until every listener has run its OnSynced (synced.go),
// unless a caller needs it to move on. Stop ends every listener: one idle
// runs nothing more, one inside a callback runs nothing after it. Stop
// waits for the event goroutine and for the idle listeners' goroutines,
// never for a callback (the caller may be that callback); Done waits for
// those too.
//
// The price of this design, against handlers run on the event goroutine:
// the caches may be ahead of a handler by up to maxQueued changes (as a
// client-go lister is ahead of its handlers), and a checkpoint is the
// caches', not the handlers'. nats.go's design (Stop signals, Closed
// waits) leaves WaitSynced and SetScopes from a callback waiting for
// themselves; etcd's (Close cancels) is this one with unbounded buffers.

// maxQueued is how many changes a listener may have waiting before the
// event goroutine stops taking in more; it takes in more again once the
// listener is down to half of it, so that neither side waits for the other
// at every change. Enough for the two to overlap: the bulk of a backlog
// waits on the server (docs/watching.md, The runtime's contract).
const maxQueued = 256

// Listener states: what its goroutine (or loop) is doing, and whether it
// must end.
const (
	listenerIdle    int32 = iota // waiting for a delivery, or between two
	listenerCalling              // inside a delivery: user code runs
	listenerEnding               // told to end while calling: ends after the call
	listenerEnded                // runs nothing more
)

// listener is one set of callbacks and the queue of what they have not
// run yet. The event goroutine (and AddHandlers, for a replay) adds to the
// queue; its goroutine or loop runs it.
type listener struct {
	mu    sync.Mutex
	items []delivery // guarded by mu
	spare []delivery // the slice run last, reused
	wake  chan struct{}
	// queued counts the deliveries added and not yet run: the event
	// goroutine's backpressure reads it.
	queued atomic.Int64
	state  atomic.Int32
	// exited is closed when the listener's goroutine has returned (never
	// for a loop's).
	exited chan struct{}
}

func newListener() *listener {
	return &listener{wake: make(chan struct{}, 1), exited: make(chan struct{})}
}

// delivery is one call of user code a listener runs.
type delivery interface{ run() }

// call is a delivery of a function (a func value in an interface costs no
// allocation).
type call func()

func (f call) run() { f() }

// add queues a delivery.
func (l *listener) add(d delivery) {
	l.mu.Lock()
	l.items = append(l.items, d)
	first := len(l.items) == 1
	l.mu.Unlock()
	l.queued.Add(1)
	if first {
		l.poke()
	}
}

func (l *listener) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// next waits for deliveries and returns them, oldest first; false when
// the listener must end: it was ended, the watch is over (ended) and
// everything queued has run, or done ends (a loop's context) while
// nothing is queued (with deliveries queued, the loop sees its context
// before each event it would yield: Events).
func (l *listener) next(ended, done <-chan struct{}) ([]delivery, bool) {
	for {
		if l.state.Load() >= listenerEnding {
			return nil, false
		}
		l.mu.Lock()
		items := l.items
		if len(items) > 0 {
			l.items = l.spare[:0]
			l.spare = nil
		}
		l.mu.Unlock()
		if len(items) > 0 {
			return items, true
		}
		select {
		case <-ended:
			// Nothing queued when it ended? Then nothing more will be.
			l.mu.Lock()
			empty := len(l.items) == 0
			l.mu.Unlock()
			if empty {
				return nil, false
			}
		case <-done:
			return nil, false
		case <-l.wake:
		}
	}
}

// done hands back the slice of a batch next returned, once run.
func (l *listener) done(items []delivery) {
	clear(items)
	l.mu.Lock()
	if l.spare == nil {
		l.spare = items[:0]
	}
	l.mu.Unlock()
}

// begin marks the listener inside a delivery; false when it must end.
func (l *listener) begin() bool {
	return l.state.CompareAndSwap(listenerIdle, listenerCalling)
}

// finish marks the delivery begin started as run; false when the
// listener was told to end meanwhile. It wakes the event goroutine when
// the queue falls to half of maxQueued.
func (l *listener) finish(w *Watcher) bool {
	if l.queued.Add(-1) == maxQueued/2 {
		w.roomMade()
	}
	if l.state.CompareAndSwap(listenerCalling, listenerIdle) {
		return true
	}
	l.state.Store(listenerEnded)
	return false
}

// calling reports whether the listener is still inside a delivery it may
// finish: a long one (a replay) checks it between events.
func (l *listener) calling() bool { return l.state.Load() == listenerCalling }

// end makes the listener run nothing more: at once when idle, after the
// call in progress otherwise. It returns the state it left: listenerEnded
// (its goroutine, if any, exits without running anything more) or
// listenerEnding (a callback is running; nothing runs after it).
func (l *listener) end(w *Watcher) int32 {
	for {
		s, to := l.state.Load(), int32(listenerEnded)
		if s == listenerCalling || s == listenerEnding {
			to = listenerEnding
		}
		if s == to || l.state.CompareAndSwap(s, to) {
			w.roomMade() // what it holds no longer counts
			l.poke()
			return to
		}
	}
}

// drain is a listener's goroutine: it runs the deliveries as they come
// until the listener ends.
func (l *listener) drain(w *Watcher) {
	defer w.drainers.Done()
	defer close(l.exited)
	for {
		items, ok := l.next(w.ended, nil)
		if !ok {
			return
		}
		for _, d := range items {
			if !l.begin() {
				return
			}
			d.run()
			if !l.finish(w) {
				return
			}
		}
		l.done(items)
	}
}

// waiting registers a caller waiting for the event goroutine (see the
// file's comment): until the returned function is called, the event
// goroutine takes in changes however many listeners have queued. A caller
// that needs it past where it is (moveOn: SetScopes, WaitRevision) also
// ends the hold of a sync point (synced.go).
func (w *Watcher) waiting(moveOn bool) (done func()) {
	w.waiters.Add(1)
	if moveOn {
		w.movers.Add(1)
	}
	select {
	case w.waiterCame <- struct{}{}:
	default:
	}
	return func() {
		w.waiters.Add(-1)
		if moveOn {
			w.movers.Add(-1)
		}
	}
}

// roomMade wakes the event goroutine waiting for room in the queues.
func (w *Watcher) roomMade() {
	select {
	case w.room <- struct{}{}:
	default:
	}
}

// waitForRoom is the event goroutine's backpressure: before it takes in
// more from the server, it waits while a listener has more than maxQueued
// deliveries waiting (then until it is down to half), unless a caller
// waits for it or the watch ends.
func (w *Watcher) waitForRoom() {
	if !w.crowded() {
		return
	}
	for w.waiters.Load() == 0 && w.ctx.Err() == nil && w.queuedMost() > maxQueued/2 {
		select {
		case <-w.room:
		case <-w.waiterCame:
		case <-w.ctx.Done():
		}
	}
}

// crowded reports whether a listener has more than maxQueued deliveries
// waiting.
func (w *Watcher) crowded() bool { return w.queuedMost() > maxQueued }

// queuedMost returns the most deliveries a listener that has not ended
// has waiting (Stats.Queued).
func (w *Watcher) queuedMost() uint64 {
	most := int64(0)
	for _, r := range *w.listening.Load() {
		if r.l.state.Load() < listenerEnding {
			most = max(most, r.l.queued.Load())
		}
	}
	return uint64(most)
}

// halt ends the watch from outside: no callback starts from now on, and
// the event goroutine ends. It returns the listeners whose goroutines run
// no callback, which exit at once: Stop waits for those. Idempotent.
func (w *Watcher) halt() []*listener {
	w.mu.Lock()
	w.halted = true
	all := w.drainerList
	w.mu.Unlock()
	var idle []*listener
	for _, l := range all {
		if l.end(w) == listenerEnded {
			idle = append(idle, l)
		}
	}
	for _, r := range *w.listening.Load() {
		r.l.end(w) // loops too
	}
	w.cancel()
	return idle
}

// admit lets a new listener in, and starts its goroutine when it has
// one; false once the watch is halted or over.
func (w *Watcher) admit(l *listener, goroutine bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.halted || w.over {
		return false
	}
	if goroutine {
		w.drainers.Add(1)
		w.drainerList = append(w.drainerList, l)
		go l.drain(w)
	}
	return true
}

// waitDrainers waits, once the event goroutine has ended, for every
// listener's goroutine, then closes done.
func (w *Watcher) waitDrainers() {
	w.mu.Lock()
	w.over = true // no goroutine starts after this: drainers.Add happens before Wait
	w.mu.Unlock()
	w.drainers.Wait()
	close(w.done)
}

// watchCallerContext halts the watch when the context given to Start ends,
// as Stop does.
func (w *Watcher) watchCallerContext(ctx context.Context) {
	context.AfterFunc(ctx, func() { w.halt() })
}
