package kvwatch

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// This file is live re-scoping: SetScopes changes what a running watcher
// watches, still with at most one consumer, at a cost proportional to the
// scopes added, not to everything watched.

// rescopeRequest is a SetScopes call handed to the event goroutine.
type rescopeRequest struct {
	filters  []string
	done     chan error    // receives the outcome, once
	finished chan struct{} // closed with the outcome
	once     sync.Once

	// Set by the first attempt of applyRescope, which switches the
	// filters; a retry after a transient error only reads again.
	switched bool
	old      []string // the filters before
	rev      uint64   // the revision the switch happened at
}

// added returns the filters of req that its old filters do not cover:
// the scopes to read. Valid once switched.
func (r *rescopeRequest) added() []string {
	var added []string
	for _, f := range r.filters {
		if !filtersCover(r.old, []string{f}) {
			added = append(added, f)
		}
	}
	return added
}

// finish reports the outcome to the SetScopes call; only the first
// outcome counts.
func (r *rescopeRequest) finish(err error) {
	r.once.Do(func() {
		r.done <- err
		close(r.finished)
	})
}

// errRescope ends the tail so that the event goroutine can apply req. The
// tail hands over its consumer, still on the server, with it: whether the
// consumer had anything left to deliver decides where the next one starts,
// and applyRescope deletes it.
type errRescope struct {
	req  *rescopeRequest
	cons jetstream.Consumer // nil when no consumer was running
}

func (e *errRescope) Error() string { return "kvwatch: re-scoping" }

// SetScopes changes the watcher's scopes while it runs. It waits until the
// watcher is synced (and until an earlier SetScopes has brought its scopes
// in), then, on the event goroutine:
//
//  1. the tail stops; keys of scopes no longer watched leave the cache:
//     each is delivered as an OpDelete with LeftScope set and its last
//     value in Prev (the key still exists in the bucket; the watcher stops
//     watching it);
//  2. the scopes added are read, their entries delivered as initial events
//     (only they are read: the cost is proportional to what was added);
//  3. the old consumer is deleted, then one consumer with the new filter
//     set starts where no change to any scope is lost or delivered twice:
//     after the read when the old consumer had nothing pending, otherwise
//     at the watcher's revision, replayed entries of the added scopes
//     being recognised by revision. The watcher never holds two.
//
// Without direct get on the stream, step 2 is the new consumer's own
// last-per-subject delivery of every scope instead: entries the cache holds
// at the same revision bring no event.
//
// It returns once the added scopes are synced (the consumer has caught up
// with the stream as it was when they were read), or with ctx's error (the
// change then still completes in the background). Transient failures are
// retried like the watch's: a key an attempt delivered that is gone when
// the next attempt reads is delivered as a delete (its own, replayed by
// the consumer, or one with FinalStateUnknown set when the stream no
// longer holds it). Values are checked first (*ScopeError).
// Setting the current scopes again does nothing; empty scopes leave the
// watcher with no consumer. Do not call it from a handler.
func (w *Watcher) SetScopes(ctx context.Context, scopes Scopes) error {
	filters, err := w.filtersFor(scopes)
	if err != nil {
		return err
	}
	if err := w.WaitSynced(ctx); err != nil {
		return err
	}
	w.setMu.Lock()
	defer w.setMu.Unlock()
	if prev := w.lastRescope; prev != nil {
		select { // an earlier call that returned on its context may still run
		case <-prev.finished:
		case <-ctx.Done():
			return ctx.Err()
		case <-w.done:
			return w.stoppedErr()
		}
	}
	if slices.Equal(filters, w.currentFilters()) {
		return nil
	}
	req := &rescopeRequest{filters: filters, done: make(chan error, 1), finished: make(chan struct{})}
	select {
	case w.rescope <- req:
		// Only a request the event goroutine took will finish: the next
		// call waits for this one.
		w.lastRescope = req
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return w.stoppedErr()
	}
	w.interruptTail()
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-w.done:
		return w.stoppedErr()
	}
}

// stoppedErr is what calls on a watcher that has ended return.
func (w *Watcher) stoppedErr() error {
	if err := w.Err(); err != nil {
		return err
	}
	return ErrStopped
}

// interruptTail stops the running consumer iterator, if any, so that the
// event goroutine picks up a pending request.
func (w *Watcher) interruptTail() {
	w.mu.Lock()
	stop := w.stopTail
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// pendingRescope returns a waiting SetScopes request as an errRescope, or
// nil.
func (w *Watcher) pendingRescope() error {
	select {
	case req := <-w.rescope:
		return &errRescope{req: req}
	default:
		return nil
	}
}

// applyRescope carries out req on the event goroutine and returns where
// the tail must start. oldCons is the consumer that was running (nil if
// none, or on a retry); it is deleted before applyRescope returns, so that
// the watcher never holds two. A retry after a transient error only reads
// again: the filters were switched and the left keys removed the first
// time.
func (w *Watcher) applyRescope(req *rescopeRequest, oldCons jetstream.Consumer) (snapshotResult, error) {
	if oldCons != nil {
		defer w.deleteConsumer(oldCons)
	}
	if !req.switched {
		w.switchScopes(req)
	}
	old, rev := req.old, req.rev
	added := req.added()
	if len(added) == 0 {
		return snapshotResult{upTo: rev, catchUp: rev}, nil
	}
	stream, err := w.js.Stream(w.ctx, w.stream)
	if err != nil {
		return snapshotResult{}, w.streamErr(err)
	}
	last := stream.CachedInfo().State.LastSeq
	// Read the added scopes as they are now (one atomic request where they
	// fit: a read pinned at an older revision makes the server scan for
	// the keys written since).
	snap, err := w.readState(w.ctx, stream, added, last)
	switch {
	case errors.Is(err, errNoDirectGet):
		// The consumer delivers the state of every scope itself; what the
		// cache already holds brings no event (see replayInitial).
		return snapshotResult{catchUp: last, viaConsumer: true, replayInitial: true, path: pathConsumer}, nil
	case err != nil:
		return snapshotResult{}, err
	case snap.upTo >= rev && (len(old) == 0 || w.caughtUpAt(oldCons, rev)):
		// Nothing was watched, or the old scopes had nothing after R even
		// now, after the read: every scope is exact at the revision its
		// request was answered at (S, the oldest of them, when the read
		// took several); go on from S+1, skipping what the read holds.
		w.setRevision(snap.upTo)
		w.dedupe = snap.marks.window(w, nil, 0)
		return snap, nil
	}
	// The old scopes may have changes after R: the consumer starts at
	// R+1, and the entries of (R, S] it replays for the added scopes,
	// already in the read, are recognised by revision and skipped. A read
	// answered as of a revision before R (by a replica lagging behind the
	// one that delivered R) starts the consumer there, and the old scopes'
	// entries up to R are skipped as well.
	start := min(rev, snap.upTo)
	win := snap.marks.window(w, added, snap.upTo)
	if start < rev && len(old) > 0 {
		win = win.with(&dedupeWindow{groups: []dedupeGroup{{keys: w.keyMatcher(old), upTo: rev}}, upTo: rev})
	}
	w.dedupe = win
	return snapshotResult{upTo: start, catchUp: max(snap.catchUp, snap.upTo, rev), path: snap.path}, nil
}

// switchScopes makes req's scopes the watcher's: it records the filters
// and revision it starts from, marks a re-scope in progress (no checkpoint
// until it is caught up), and takes the keys of the scopes left out of the
// cache, telling the handlers.
func (w *Watcher) switchScopes(req *rescopeRequest) {
	req.switched, req.old, req.rev = true, w.currentFilters(), w.revision()
	w.setRescoping(true)
	w.setFilters(req.filters)
	w.cfg.logger.LogAttrs(w.ctx, slog.LevelInfo, "kvwatch: re-scoping", slog.String("bucket", w.spec.Bucket),
		slog.Int("filters_before", len(req.old)), slog.Int("filters_after", len(req.filters)), slog.Uint64("revision", req.rev))
	inScope := w.matchesScopes
	if len(req.filters) == 0 {
		inScope = func(string) bool { return false }
	}
	for _, b := range w.bindings {
		b.leaveScope(w, inScope, req.rev)
	}
}

// setRescoping records whether a re-scope is being brought in, under the
// state lock that Checkpoint reads it with.
func (w *Watcher) setRescoping(on bool) {
	w.state.mu.Lock()
	w.state.rescoping = on
	w.state.mu.Unlock()
}

// caughtUpAt reports whether the old consumer, asked now, has delivered
// exactly up to rev (nothing the watcher dropped) and has nothing pending:
// no change to the old scopes after rev exists.
func (w *Watcher) caughtUpAt(cons jetstream.Consumer, rev uint64) bool {
	if cons == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.requestTimeout)
	defer cancel()
	info, err := cons.Info(ctx)
	return err == nil && info.NumPending == 0 && info.Delivered.Stream == rev
}

// revision returns the last revision applied.
func (w *Watcher) revision() uint64 {
	w.state.mu.RLock()
	defer w.state.mu.RUnlock()
	return w.state.revision
}

// currentFilters returns the normalized filters (shared: do not modify).
func (w *Watcher) currentFilters() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.filters
}

// setFilters replaces the watcher's filters (event goroutine only; other
// goroutines read them under mu).
func (w *Watcher) setFilters(filters []string) {
	w.mu.Lock()
	w.filters = filters
	w.scopeKeys = w.keyMatcher(filters)
	w.mu.Unlock()
}
