package kvwatch

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// dispatcher is the part of a watcher the event goroutine uses to deliver:
// handler calls with panic recovery, and error reports. Only the event
// goroutine calls its methods.
type dispatcher struct {
	cfg   *config
	stats *counters
	// stopped is set once the watch is ending (Stop, the context): no
	// handler runs after that, even for entries already in hand.
	stopped atomic.Bool
}

// counters are the watcher-wide statistics, updated by the event goroutine
// and read by Stats from any goroutine.
type counters struct {
	unknownKeys    atomic.Uint64
	handlerPanics  atomic.Uint64
	consumerResets atomic.Uint64
	pending        atomic.Uint64
	received       atomic.Uint64
}

// kindCounters are the statistics of one kind.
type kindCounters struct {
	puts, deletes, purges, dataErrors atomic.Uint64
}

func (k *kindCounters) count(op Op) {
	switch op {
	case OpPut:
		k.puts.Add(1)
	case OpDelete:
		k.deletes.Add(1)
	case OpPurge:
		k.purges.Add(1)
	}
}

// call runs a handler, turning a panic into a *HandlerError report.
func (d *dispatcher) call(kind string, e *rawEntry, handler func()) {
	if d.stopped.Load() {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			d.stats.handlerPanics.Add(1)
			d.report(&HandlerError{Kind: kind, Key: e.key, Revision: e.revision, Panic: p})
		}
	}()
	handler()
}

// callHandler runs handler(ev), turning a panic into a *HandlerError
// report. It is call without the closure (which would allocate per event).
func callHandler[E any](d *dispatcher, kind string, e *rawEntry, handler func(E), ev E) {
	if d.stopped.Load() {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			d.stats.handlerPanics.Add(1)
			d.report(&HandlerError{Kind: kind, Key: e.key, Revision: e.revision, Panic: p})
		}
	}()
	handler(ev)
}

// reportData reports an entry that could not be typed.
func (d *dispatcher) reportData(err error) {
	if _, ok := err.(*UnknownKeyError); ok {
		d.stats.unknownKeys.Add(1)
	}
	d.report(err)
}

// report logs an entry the watch skipped and passes err to OnError.
func (d *dispatcher) report(err error) {
	d.cfg.logger.LogAttrs(context.Background(), slog.LevelWarn, "kvwatch: skipped", slog.Any("error", err))
	d.notify(err)
}

// notify passes err to the OnError callback. A panic in the callback
// itself is logged and swallowed.
func (d *dispatcher) notify(err error) {
	if d.cfg.onError == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			d.cfg.logger.LogAttrs(context.Background(), slog.LevelError, "kvwatch: OnError panicked", slog.Any("panic", p))
		}
	}()
	d.cfg.onError(err)
}
