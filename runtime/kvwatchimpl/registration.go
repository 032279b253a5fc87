package kvwatchimpl

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is one watcher shared by several components of a node, as
// client-go's SharedInformer is: each adds its handlers to the running
// watcher (AddHandlers) instead of starting a watcher, and a consumer, of
// its own. A registration gets the caches replayed as initial events, then
// every change after them, with its own OnSynced once the watcher is
// synced; it can be removed. The watcher's own handlers and each Events
// loop are registrations too, inside.

// Registration is a set of handlers added to a running watcher with
// AddHandlers, a listener of its own (listener.go): its handlers run one at
// a time, on a goroutine of the registration's, in the watcher's event
// order: first the replay of the caches as they were when it was added
// (events flagged Initial), then the changes applied after that, then its
// OnSynced once the watcher is synced (right after the replay when it is
// already), then live changes. A registration that falls behind by more
// than 256 changes holds the watcher back (backpressure:
// nothing is lost); it never holds up other registrations' handlers
// otherwise. Each handler owns the values of its events (a deep copy of
// its own). Its methods are safe for concurrent use, from its own handlers
// too.
type Registration struct {
	w        *Watcher
	l        *listener
	onSynced func()
	onError  func(error)
	synced   chan struct{}
	syncOnce sync.Once
	removed  atomic.Bool
	gone     chan struct{} // closed by Remove
	handlers []AnyHandler  // guarded by the watcher's state lock
}

// For generated code. AnyHandler is the handler of one kind for
// AddHandlers, made by HandlerOf.
type AnyHandler interface {
	// attachLocked adds the handler to its binding, with the state lock
	// held, and returns the replay of the binding's cache as it is (nil
	// when there is nothing to replay).
	attachLocked(r *Registration) (replay func())
	detachLocked(r *Registration)
}

// For generated code. HandlerOf makes the handler h of b's kind for
// AddHandlers; h may be nil (the registration ignores the kind).
func HandlerOf[K comparable, V any](b *Binding[K, V], h func(kvwatch.Event[K, V])) AnyHandler {
	return &handlerOf[K, V]{b: b, h: h}
}

type handlerOf[K comparable, V any] struct {
	b *Binding[K, V]
	h func(kvwatch.Event[K, V])
}

// regHandler is one registration's handler of a binding's kind.
type regHandler[K comparable, V any] struct {
	reg *Registration
	h   func(kvwatch.Event[K, V])
}

func (a *handlerOf[K, V]) attachLocked(r *Registration) func() {
	if a.h == nil {
		return nil
	}
	b := a.b
	// Copy on write: the event goroutine may be iterating the old slice.
	b.regs = append(slices.Clip(b.regs), regHandler[K, V]{reg: r, h: a.h})
	entries := b.cache.listLocked(nil) // values shared with the cache, which never modifies them
	if len(entries) == 0 {
		return nil
	}
	return func() {
		for _, e := range entries {
			if !r.l.calling() {
				return // removed, or the watch stopped, during the replay
			}
			ev := kvwatch.Event[K, V]{Op: kvwatch.OpPut, Key: e.Key, Value: b.kind.Copy(e.Value), Revision: e.Revision, Created: e.Created, Initial: true}
			callHandler(r, b.kind.Name, b.kind.FormatKey(e.Key), e.Revision, a.h, ev)
		}
	}
}

func (a *handlerOf[K, V]) detachLocked(r *Registration) {
	b := a.b
	b.regs = slices.DeleteFunc(slices.Clone(b.regs), func(x regHandler[K, V]) bool { return x.reg == r })
}

// For generated code. AddHandlers adds handlers to the running watcher
// (see Registration): the generated watcher's AddHandlers, with one
// handler per kind. onSynced runs once, after the initial events; onError
// receives the panics of the registration's handlers (*HandlerError). It
// returns at once, from anywhere (a handler too): the replay runs on the
// registration's goroutine. It fails with ErrStopped (or the error that
// ended the watch) once the watch is stopped or over.
func (w *Watcher) AddHandlers(handlers []AnyHandler, onSynced func(), onError func(error)) (*Registration, error) {
	r := w.newRegistration(onSynced, onError)
	if err := w.register(r, handlers, true, true); err != nil {
		return nil, err
	}
	return r, nil
}

func (w *Watcher) newRegistration(onSynced func(), onError func(error)) *Registration {
	return &Registration{w: w, l: newListener(), onSynced: onSynced, onError: onError,
		synced: make(chan struct{}), gone: make(chan struct{})}
}

// register attaches r's handlers to the watcher, in one critical section
// of the state lock: every change applied before is in the replay (when
// replay is set; the watcher's own handlers have none), every change after
// goes to r. With goroutine set, r gets a goroutine that runs its
// deliveries (the Events loop runs its own).
func (w *Watcher) register(r *Registration, handlers []AnyHandler, replay, goroutine bool) error {
	w.state.mu.Lock()
	defer w.state.mu.Unlock()
	if !w.admit(r.l, goroutine) {
		return w.stoppedErr()
	}
	for _, h := range handlers {
		if f := h.attachLocked(r); f != nil && replay {
			r.l.add(call(f)) // queued under the lock: before any change applied after it
		}
	}
	r.handlers = handlers
	regs := append(slices.Clip(*w.listening.Load()), r)
	w.listening.Store(&regs)
	if w.regsSynced {
		r.markSynced(nil)
	}
	return nil
}

// callHandler runs h(ev), turning a panic into a *HandlerError for r's
// onError.
func callHandler[K comparable, V any](r *Registration, kind, key string, revision uint64, h func(kvwatch.Event[K, V]), ev kvwatch.Event[K, V]) {
	defer func() {
		if p := recover(); p != nil {
			r.w.stats.handlerPanics.Add(1)
			r.report(&kvwatch.HandlerError{Kind: kind, Key: key, Revision: revision, Panic: p})
		}
	}()
	h(ev)
}

// markSynced marks r synced and queues its OnSynced, once; the watcher is
// synced, and everything before its sync point is queued for r. reached,
// if not nil, is closed once r has run its OnSynced (synced.go).
func (r *Registration) markSynced(reached chan struct{}) {
	if queue := r.becomeSynced(reached); queue != nil {
		queue()
	}
}

// becomeSynced marks r synced, once, and returns what queues its
// OnSynced (nil when there is nothing to queue, or r was synced before):
// the watcher's sync point marks every registration synced before it
// closes its own synced, and queues their OnSynced after, so that no
// OnSynced runs while the watcher is not synced yet (synced.go).
func (r *Registration) becomeSynced(reached chan struct{}) (queue func()) {
	r.syncOnce.Do(func() {
		close(r.synced)
		if r.onSynced != nil || reached != nil {
			queue = func() { r.l.add(call(func() { r.runOnSynced(reached) })) }
		}
	})
	return queue
}

func (r *Registration) runOnSynced(reached chan struct{}) {
	if reached != nil {
		defer close(reached)
	}
	if r.onSynced == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.w.stats.handlerPanics.Add(1)
			r.report(&kvwatch.HandlerError{Kind: "OnSynced", Panic: p})
		}
	}()
	r.onSynced()
}

// report passes err to onError; a panic there is logged and swallowed.
func (r *Registration) report(err error) {
	if r.onError == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.w.cfg.Logger.LogAttrs(context.Background(), slog.LevelError, "kvwatch: OnError panicked", slog.Any("panic", p))
		}
	}()
	r.onError(err)
}

// Synced reports whether the registration is synced: the watcher is
// synced, and every initial event is queued for its handlers (its OnSynced
// runs right after them). It does not block.
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
// removed (ErrRemoved). From the registration's own handlers too: the
// watcher does not wait for them to be synced.
func (r *Registration) WaitSynced(ctx context.Context) error {
	if r.Synced() {
		return nil
	}
	defer r.w.waiting(false)()
	select {
	case <-r.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-r.gone:
		if r.Synced() {
			return nil
		}
		return kvwatch.ErrRemoved
	case <-r.w.ended:
		if r.Synced() {
			return nil
		}
		return r.w.stoppedErr()
	}
}

// Remove takes the handlers off the watcher: none of them starts after
// Remove returns (one running may finish). It returns at once, from
// anywhere, and is safe to call more than once.
func (r *Registration) Remove() {
	if r.removed.Swap(true) {
		return
	}
	r.l.end(r.w)
	close(r.gone)
	w := r.w
	w.state.mu.Lock()
	for _, h := range r.handlers {
		h.detachLocked(r)
	}
	regs := slices.DeleteFunc(slices.Clone(*w.listening.Load()), func(x *Registration) bool { return x == r })
	w.listening.Store(&regs)
	w.state.mu.Unlock()
}

// dispatch queues ev for the binding's handlers regs (taken with the
// state lock when the change was applied): the first gets ev's values,
// every other a deep copy of its own, made now, before any handler can
// modify them.
func (b *Binding[K, V]) dispatch(e *rawEntry, ev kvwatch.Event[K, V], regs []regHandler[K, V]) {
	for i, rh := range regs {
		c := ev
		if i > 0 {
			c.Value, c.Prev = b.kind.Copy(ev.Value), b.kind.Copy(ev.Prev)
		}
		call, _ := b.calls.Get().(*eventCall[K, V])
		if call == nil {
			call = new(eventCall[K, V])
		}
		*call = eventCall[K, V]{b: b, rh: rh, key: e.key, revision: e.revision, ev: c}
		rh.reg.l.add(call)
	}
}

// eventCall is the call of a registration's handler with one event, for
// its listener's queue. Run, it goes back to its binding's pool: an event
// holds two values, and an allocation of its size for every event and
// listener made a drain of a backlog a fifth slower, in garbage
// collection (BENCHMARKS.md, throughput).
type eventCall[K comparable, V any] struct {
	b        *Binding[K, V]
	rh       regHandler[K, V]
	key      string
	revision uint64
	ev       kvwatch.Event[K, V]
}

func (c *eventCall[K, V]) run() {
	callHandler(c.rh.reg, c.b.kind.Name, c.key, c.revision, c.rh.h, c.ev)
	b := c.b
	*c = eventCall[K, V]{} // nothing of the event stays reachable from the pool
	b.calls.Put(c)
}
