package kvwatchimpl

import (
	"context"
	"log/slog"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is what being synced means to callers: the moment a catch-up
// plan (catchup.go) finishes, OnSynced, and the calls that wait for it.

// markSynced takes the watcher to its first sync point, once, and holds
// the caches there until every listener has run its OnSynced
// (holdSyncPoint).
//
// The sync point is one step for every caller (docs/watching.md, "The
// sync point"): under one write lock of the state, with the caches exact
// at the watcher's revision, every registration and then the watcher
// become synced, and then each registration's OnSynced is queued after
// its initial events (an OnSynced never runs before the watcher is
// synced). So no caller sees the watcher synced while a registration is
// not: WaitSynced returning means every registration then present is
// synced, and one added after is synced when AddHandlers returns (its
// replay, then its OnSynced). The test hook's call (syncPoint) is queued
// first, before the watcher's own OnSynced.
func (w *Watcher) markSynced() {
	w.syncOnce.Do(func() {
		w.syncPoint()
		w.holdSyncPoint(w.reachSyncPoint())
	})
}

// reachSyncPoint is the step of markSynced under the state lock. It
// returns the registrations and, for each, a channel closed once it has
// run its OnSynced.
func (w *Watcher) reachSyncPoint() ([]*Registration, []chan struct{}) {
	w.state.mu.Lock()
	w.regsSynced = true
	regs := *w.listening.Load()
	reached := make([]chan struct{}, len(regs))
	queues := make([]func(), 0, len(regs))
	for i, r := range regs {
		reached[i] = make(chan struct{})
		if q := r.becomeSynced(reached[i]); q != nil {
			queues = append(queues, q)
		}
	}
	w.stats.pending.Store(0)
	close(w.synced)
	for _, q := range queues { // after: an OnSynced runs on its own goroutine
		q()
	}
	rev := w.state.revision
	w.state.mu.Unlock()
	// After the lock: a logger may call the watcher's methods.
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: synced", slog.String("bucket", w.bucket), slog.Uint64("revision", rev))
	return regs, reached
}

// holdSyncPoint keeps the caches at the sync point until every listener
// has run its OnSynced (after every initial event): OnSynced sees them
// exact, the bucket's state at Stats().LastRevision (docs/guarantees.md,
// guarantee 4), as it would if it ran on the event goroutine. It gives way
// when a caller needs the watcher to move on (SetScopes, WaitRevision past
// its revision: OnSynced itself may be that caller), when a listener is
// removed, and when the watch ends.
func (w *Watcher) holdSyncPoint(regs []*Registration, reached []chan struct{}) {
	for i, ch := range reached {
		for wait := true; wait; {
			if w.movers.Load() > 0 {
				return
			}
			select {
			case <-ch:
				wait = false
			case <-regs[i].gone:
				wait = false
			case <-w.waiterCame:
			case <-w.ctx.Done():
				return
			}
		}
	}
}

// syncPoint tells a test hook (WithSyncPointHook in export_test.go) the
// caches at a sync point, which must be the bucket's state at their
// revision; what the hook returns runs in order with the events of the
// watcher's own handlers, which have then had every event up to it.
func (w *Watcher) syncPoint() {
	f := w.cfg.OnSyncPoint
	if f == nil {
		return
	}
	cp, err := w.checkpoint()
	if err != nil {
		return
	}
	inOrder := f(cp)
	switch {
	case inOrder == nil:
	case w.own != nil:
		w.own.l.add(call(inOrder))
	default:
		inOrder()
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
// held) out of the caches under one lock, and queues the deletes: no cache
// reader, checkpoint or handler added meanwhile sees some kinds' removals
// without the others'.
func (w *Watcher) removeAll(take func(AnyBinding) func()) {
	var deliver []func()
	w.state.mu.Lock()
	defer w.state.mu.Unlock()
	for _, b := range w.bindings {
		if f := take(b); f != nil {
			deliver = append(deliver, f)
		}
	}
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

// Synced reports whether the watcher is synced: its caches hold the
// initial state, exact, and every initial event is queued for the
// handlers (OnSynced runs right after them). It does not block.
func (w *Watcher) Synced() bool { return w.isSynced() }

// WaitSynced blocks until the watcher is synced (nil), ctx ends (its
// error), or the watch ends first (its terminal error, or ErrStopped).
// From a handler or an Events loop body too: the watcher reads on while a
// caller waits, even past the changes that caller's handlers hold back.
func (w *Watcher) WaitSynced(ctx context.Context) error {
	select {
	case <-w.synced:
		return nil
	default:
	}
	defer w.waiting(false)()
	select {
	case <-w.synced:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-w.ended:
		if w.isSynced() {
			return nil
		}
		if err := w.Err(); err != nil {
			return err
		}
		return kvwatch.ErrStopped
	}
}
