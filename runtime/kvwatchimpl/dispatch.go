package kvwatchimpl

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// counters are the watcher-wide statistics, updated by the event goroutine
// (and the listeners, for panics) and read by Stats from any goroutine.
type counters struct {
	unknownKeys    atomic.Uint64
	handlerPanics  atomic.Uint64
	consumerResets atomic.Uint64
	pending        atomic.Uint64
	received       atomic.Uint64
	wentBack       atomic.Uint64
}

// kindCounters are the statistics of one kind.
type kindCounters struct {
	puts, deletes, purges, dataErrors atomic.Uint64
}

func (k *kindCounters) count(op kvwatch.Op) {
	switch op {
	case kvwatch.OpPut:
		k.puts.Add(1)
	case kvwatch.OpDelete:
		k.deletes.Add(1)
	case kvwatch.OpPurge:
		k.purges.Add(1)
	}
}

// reportSkipped logs an entry the watch skipped, counts an unknown key,
// and queues err for OnError.
func (w *Watcher) reportSkipped(err error) {
	if _, ok := err.(*kvwatch.UnknownKeyError); ok {
		w.stats.unknownKeys.Add(1)
	}
	w.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn, "kvwatch: skipped", slog.Any("error", err))
	w.notify(err)
}

// notify queues err for OnError, in order with the events of the
// watcher's own handlers.
func (w *Watcher) notify(err error) {
	if r := w.own; r != nil && r.onError != nil {
		r.l.add(call(func() { r.report(err) }))
	}
}
