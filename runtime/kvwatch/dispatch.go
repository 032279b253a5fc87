package kvwatch

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// dispatcher is the part of a watcher the event goroutine uses to deliver:
// handler calls with panic recovery, error reports and counters. Only the
// event goroutine calls its methods; the counters are read concurrently.
type dispatcher struct {
	cfg   *config
	stats *counters
}

// counters are the watcher's statistics, updated by the event goroutine
// and read by Stats from any goroutine.
type counters struct {
	puts, deletes, purges atomic.Uint64
	dataErrors            atomic.Uint64
	unknownKeys           atomic.Uint64
	handlerPanics         atomic.Uint64
	lastRevision          atomic.Uint64
}

func (d *dispatcher) counted(kind string, op Op) {
	switch op {
	case OpPut:
		d.stats.puts.Add(1)
	case OpDelete:
		d.stats.deletes.Add(1)
	case OpPurge:
		d.stats.purges.Add(1)
	}
}

// call runs a handler, turning a panic into a *HandlerError report.
func (d *dispatcher) call(kind string, e *rawEntry, handler func()) {
	defer func() {
		if p := recover(); p != nil {
			d.stats.handlerPanics.Add(1)
			d.report(&HandlerError{Kind: kind, Key: e.key, Revision: e.revision, Panic: p})
		}
	}()
	handler()
}

// reportData reports an entry that could not be typed.
func (d *dispatcher) reportData(err error) {
	switch err.(type) {
	case *UnknownKeyError:
		d.stats.unknownKeys.Add(1)
	default:
		d.stats.dataErrors.Add(1)
	}
	d.report(err)
}

// report logs err and passes it to the OnError callback. A panic in the
// callback itself is logged and swallowed.
func (d *dispatcher) report(err error) {
	d.cfg.logger.LogAttrs(context.Background(), slog.LevelWarn, "kvwatch: skipped", slog.Any("error", err))
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
