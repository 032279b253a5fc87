package kvwatch

import (
	"context"
	"log/slog"
)

// This file is what being synced means to callers: the moment a catch-up
// plan (catchup.go) finishes, OnSynced, and the calls that wait for it.

// markSynced records that the watcher is synced, once, and runs OnSynced.
func (w *Watcher) markSynced() {
	w.syncOnce.Do(func() {
		rev := w.revision()
		w.stats.pending.Store(0)
		close(w.synced)
		w.cfg.logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: synced", slog.String("bucket", w.bucket), slog.Uint64("revision", rev))
		w.syncPoint()
		if w.cfg.onSynced != nil {
			w.disp.call("OnSynced", &rawEntry{}, w.cfg.onSynced)
		}
		w.syncRegistrations()
	})
}

// syncPoint tells a test hook (WithSyncPointHook in export_test.go) the
// caches at a sync point: they must be the bucket's state at their
// revision.
func (w *Watcher) syncPoint() {
	if w.cfg.onSyncPoint == nil {
		return
	}
	cp, err := w.Checkpoint()
	if err == nil {
		w.cfg.onSyncPoint(cp)
	}
}

// beginRelist marks the cached keys that match (all when match is nil)
// unconfirmed: a read that does not deliver them again before the
// catch-up is done shows they are gone (endRelist).
func (w *Watcher) beginRelist(match func(raw string) bool) {
	for _, b := range w.bindings {
		b.beginRelist(match)
	}
}

// endRelist delivers a delete with FinalStateUnknown for every key a
// re-list did not confirm; nothing when no re-list runs.
func (w *Watcher) endRelist() {
	rev := w.revision()
	w.removeAll(func(b AnyBinding) func() { return b.endRelistLocked(w, rev) })
}

// removeAll takes what each binding removes (take, with the state lock
// held) out of the caches under one lock, then delivers it: no cache
// reader, checkpoint or handler added meanwhile sees some kinds' removals
// without the others'.
func (w *Watcher) removeAll(take func(AnyBinding) func()) {
	var deliver []func()
	w.state.mu.Lock()
	for _, b := range w.bindings {
		if f := take(b); f != nil {
			deliver = append(deliver, f)
		}
	}
	w.state.mu.Unlock()
	for _, f := range deliver {
		f()
	}
}

func (w *Watcher) isSynced() bool {
	select {
	case <-w.synced:
		return true
	default:
		return false
	}
}

// Synced reports whether the initial state has been delivered. It does not
// block.
func (w *Watcher) Synced() bool { return w.isSynced() }

// WaitSynced blocks until the watcher is synced (nil), ctx ends (its
// error), or the watch ends first (its terminal error, or ErrStopped).
// From a handler, before the watcher is synced, it returns ErrInHandler at
// once: the handler runs on the goroutine that syncs it.
func (w *Watcher) WaitSynced(ctx context.Context) error {
	select {
	case <-w.synced:
		return nil
	default:
	}
	if w.onEventGoroutine() {
		return ErrInHandler
	}
	select {
	case <-w.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		if w.isSynced() {
			return nil
		}
		if err := w.Err(); err != nil {
			return err
		}
		return ErrStopped
	}
}
