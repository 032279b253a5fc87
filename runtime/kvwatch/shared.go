package kvwatch

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
)

// This file is one watcher shared by several components of a node, as
// client-go's SharedInformer is: each adds its handlers to the running
// watcher (AddHandlers) instead of starting a watcher, and a consumer, of
// its own. A registration gets the caches replayed as initial events, then
// every change after them, then its own OnSynced once the watcher is
// synced; it can be removed.

// Registration is a set of handlers added to a running watcher with
// AddHandlers. Its handlers run one at a time, in the watcher's event
// order: first the replay of the caches as they were when it was added
// (events flagged Initial), on the goroutine that called AddHandlers; then
// the changes after that, on the watcher's event goroutine, where they
// hold it up as any handler does (backpressure: nothing is lost). Each
// handler owns the values of its events (a deep copy of its own). Its
// methods are safe for concurrent use.
type Registration struct {
	w        *Watcher
	onSynced func()
	onError  func(error)
	synced   chan struct{}
	syncOnce sync.Once
	removed  atomic.Bool
	gone     chan struct{} // closed by Remove
	handlers []AnyHandler  // guarded by the watcher's state lock

	// mu guards replaying and queue: while AddHandlers replays the
	// caches, the event goroutine queues what comes after, and the replay
	// then runs the queue, so that no event overtakes the replay.
	mu        sync.Mutex
	replaying bool
	queue     []func()
}

// ErrRemoved is returned by a Registration's WaitSynced once it was
// removed before it was synced.
var ErrRemoved = errors.New("kvwatch: handlers removed")

// For generated code. AnyHandler is the handler of one kind for
// AddHandlers, made by HandlerOf.
type AnyHandler interface {
	// attachLocked adds the handler to its binding, with the state lock
	// held, and returns the replay of the binding's cache as it is.
	attachLocked(r *Registration) (replay func())
	detachLocked(r *Registration)
}

// For generated code. HandlerOf makes the handler h of b's kind for
// AddHandlers; h may be nil (the registration ignores the kind).
func HandlerOf[K comparable, V any](b *Binding[K, V], h func(Event[K, V])) AnyHandler {
	return &handlerOf[K, V]{b: b, h: h}
}

type handlerOf[K comparable, V any] struct {
	b *Binding[K, V]
	h func(Event[K, V])
}

// regHandler is one registration's handler of a binding's kind.
type regHandler[K comparable, V any] struct {
	reg *Registration
	h   func(Event[K, V])
}

func (a *handlerOf[K, V]) attachLocked(r *Registration) func() {
	if a.h == nil {
		return nil
	}
	b := a.b
	entries := b.cache.listLocked(nil) // values shared with the cache, which never modifies them
	// Copy on write: the event goroutine may be iterating the old slice.
	b.regs = append(slices.Clip(b.regs), regHandler[K, V]{reg: r, h: a.h})
	return func() {
		for _, e := range entries {
			ev := Event[K, V]{Op: OpPut, Key: e.Key, Value: b.kind.Copy(e.Value), Revision: e.Revision, Created: e.Created, Initial: true}
			call(r, b.kind.Name, b.kind.FormatKey(e.Key), e.Revision, a.h, ev)
		}
	}
}

func (a *handlerOf[K, V]) detachLocked(r *Registration) {
	b := a.b
	b.regs = slices.DeleteFunc(slices.Clone(b.regs), func(x regHandler[K, V]) bool { return x.reg == r })
}

// For generated code. AddHandlers adds handlers to the running watcher
// (see Registration): the generated watcher's AddHandlers, with one
// handler per kind. onSynced runs once, after the replay when the watcher
// is synced already, else when it is; onError receives the panics of the
// registration's handlers (*HandlerError). It fails with ErrStopped once
// the watch has ended. Called from a handler, the replay runs there.
func (w *Watcher) AddHandlers(handlers []AnyHandler, onSynced func(), onError func(error)) (*Registration, error) {
	select {
	case <-w.done:
		return nil, w.stoppedErr()
	default:
	}
	r := &Registration{w: w, onSynced: onSynced, onError: onError, synced: make(chan struct{}), gone: make(chan struct{}), replaying: true}
	var replays []func()
	w.state.mu.Lock()
	for _, h := range handlers {
		if replay := h.attachLocked(r); replay != nil {
			replays = append(replays, replay)
		}
	}
	r.handlers = handlers
	w.regs = append(slices.Clip(w.regs), r)
	synced := w.regsSynced // after the watcher's own OnSynced
	w.state.mu.Unlock()

	for _, replay := range replays {
		replay()
	}
	if synced {
		r.markSynced()
	}
	// What came while replaying, then live.
	for {
		r.mu.Lock()
		queue := r.queue
		r.queue = nil
		if len(queue) == 0 {
			r.replaying = false
			r.mu.Unlock()
			return r, nil
		}
		r.mu.Unlock()
		for _, f := range queue {
			f()
		}
	}
}

// run calls f on the event goroutine, or queues it while the replay runs.
func (r *Registration) run(f func()) {
	if r.removed.Load() {
		return
	}
	r.mu.Lock()
	if r.replaying {
		r.queue = append(r.queue, f)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	f()
}

// call runs h(ev), turning a panic into a *HandlerError for onError.
func call[K comparable, V any](r *Registration, kind, key string, revision uint64, h func(Event[K, V]), ev Event[K, V]) {
	if r.removed.Load() || r.w.disp.stopped.Load() {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.w.stats.handlerPanics.Add(1)
			r.report(&HandlerError{Kind: kind, Key: key, Revision: revision, Panic: p})
		}
	}()
	h(ev)
}

// markSynced closes synced and calls onSynced, once.
func (r *Registration) markSynced() {
	r.syncOnce.Do(func() {
		close(r.synced)
		if r.onSynced == nil || r.removed.Load() || r.w.disp.stopped.Load() {
			return
		}
		defer func() {
			if p := recover(); p != nil {
				r.w.stats.handlerPanics.Add(1)
				r.report(&HandlerError{Kind: "OnSynced", Panic: p})
			}
		}()
		r.onSynced()
	})
}

// report passes err to onError; a panic there is swallowed.
func (r *Registration) report(err error) {
	if r.onError == nil {
		return
	}
	defer func() { _ = recover() }()
	r.onError(err)
}

// Synced reports whether the registration has had its initial events (its
// OnSynced runs right after it turns true, as a watcher's does). It does
// not block.
func (r *Registration) Synced() bool {
	select {
	case <-r.synced:
		return true
	default:
		return false
	}
}

// WaitSynced blocks until the registration is synced (nil), ctx ends, the
// watch ends first (its error, or ErrStopped), or the registration is
// removed (ErrRemoved).
func (r *Registration) WaitSynced(ctx context.Context) error {
	select {
	case <-r.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.gone:
		if r.Synced() {
			return nil
		}
		return ErrRemoved
	case <-r.w.done:
		if r.Synced() {
			return nil
		}
		return r.w.stoppedErr()
	}
}

// Remove takes the handlers off the watcher: none of them starts after
// Remove returns (one running may finish). It is safe to call more than
// once, and from a handler.
func (r *Registration) Remove() {
	if r.removed.Swap(true) {
		return
	}
	close(r.gone)
	w := r.w
	w.state.mu.Lock()
	for _, h := range r.handlers {
		h.detachLocked(r)
	}
	w.regs = slices.DeleteFunc(slices.Clone(w.regs), func(x *Registration) bool { return x == r })
	w.state.mu.Unlock()
}

// dispatch delivers ev to the binding's handler and to the registrations
// regs (taken with the state lock when the change was applied), each with
// its own deep copy, made before any handler can modify ev's values.
func (b *Binding[K, V]) dispatch(w *Watcher, e *rawEntry, ev Event[K, V], regs []regHandler[K, V]) {
	if len(regs) == 0 {
		if b.handler != nil {
			callHandler(&w.disp, b.kind.Name, e, b.handler, ev)
		}
		return
	}
	copies := make([]Event[K, V], len(regs))
	for i := range regs {
		c := ev
		c.Value, c.Prev = b.kind.Copy(ev.Value), b.kind.Copy(ev.Prev)
		copies[i] = c
	}
	if b.handler != nil {
		callHandler(&w.disp, b.kind.Name, e, b.handler, ev)
	}
	b.dispatchRegs(e, regs, copies)
}

// dispatchRegs runs the registrations' handlers. Apart from dispatch, so
// that the closures' captures cost nothing to a watcher without
// registrations.
func (b *Binding[K, V]) dispatchRegs(e *rawEntry, regs []regHandler[K, V], copies []Event[K, V]) {
	key, revision := e.key, e.revision
	for i, rh := range regs {
		ev := copies[i]
		rh.reg.run(func() { call(rh.reg, b.kind.Name, key, revision, rh.h, ev) })
	}
}

// syncRegistrations runs the OnSynced of every registration, after the
// watcher's own.
func (w *Watcher) syncRegistrations() {
	w.state.mu.Lock()
	w.regsSynced = true
	regs := w.regs
	w.state.mu.Unlock()
	for _, r := range regs {
		r.run(r.markSynced)
	}
}
