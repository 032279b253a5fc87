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
	unknownKeys       atomic.Uint64
	handlerPanics     atomic.Uint64
	consumerResets    atomic.Uint64
	creationRetries   atomic.Uint64
	silentConnections atomic.Uint64
	cutOffServers     atomic.Uint64
	pending           atomic.Uint64
	received          atomic.Uint64
	wentBack          atomic.Uint64
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

// reportSkipped logs an entry the watch skipped and queues err for
// OnError.
func (w *Watcher) reportSkipped(err error) {
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

// unknownKeys remembers the unknown keys a watcher reported, so that each
// is reported once and at most kvwatch.MaxUnknownKeysReported of them
// (then one more, the last: kvwatch.UnknownKeyError). The event goroutine
// owns it.
type unknownKeys struct {
	reported map[string]struct{}
	// over is set once the last report was made; reported is dropped
	// then.
	over bool
}

// report returns the error reporting an entry of key at revision that
// matches no template, or nil when it is only to be counted: its key was
// reported already, or the last report was made.
func (u *unknownKeys) report(key string, revision uint64) *kvwatch.UnknownKeyError {
	if u.over {
		return nil
	}
	if _, ok := u.reported[key]; ok {
		return nil
	}
	if len(u.reported) == kvwatch.MaxUnknownKeysReported {
		u.over, u.reported = true, nil
		return &kvwatch.UnknownKeyError{Key: key, Revision: revision, Last: true}
	}
	if u.reported == nil {
		u.reported = map[string]struct{}{}
	}
	u.reported[key] = struct{}{}
	return &kvwatch.UnknownKeyError{Key: key, Revision: revision}
}
