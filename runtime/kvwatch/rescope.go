package kvwatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
)

// This file is live re-scoping: SetScopes changes what a running watcher
// watches, still with at most one consumer, at a cost proportional to the
// scopes added, not to everything watched.

// rescopeRequest is a SetScopes call handed to the event goroutine.
type rescopeRequest struct {
	scopeFilters []string
	filters      []string
	widened      bool
	done         chan error // receives the outcome, once
}

// errRescope ends the tail so that the event goroutine can apply req.
type errRescope struct{ req *rescopeRequest }

func (e *errRescope) Error() string { return "kvwatch: re-scoping" }

// SetScopes changes the watcher's scopes while it runs. It waits until the
// watcher is synced, then, on the event goroutine:
//
//  1. the consumer is deleted (the watcher never holds two);
//  2. keys of scopes no longer watched leave the cache: each is delivered
//     as an OpDelete with LeftScope set and its last value in Prev (the
//     key still exists in the bucket; the watcher stops watching it);
//  3. the scopes added are read at the watcher's current revision R, their
//     entries delivered as initial events (only they are read: the cost
//     is proportional to what was added);
//  4. one consumer with the new filter set starts at R+1, so that no
//     change to any scope is lost or delivered twice.
//
// It returns once that is done, or with ctx's error (the change then still
// completes in the background). Values are checked first (*ScopeError).
// Setting the current scopes again does nothing; empty scopes leave the
// watcher with no consumer. Do not call it from a handler.
func (w *Watcher) SetScopes(ctx context.Context, scopes Scopes) error {
	scopeFilters, err := w.scopeSubjects(scopes)
	if err != nil {
		return err
	}
	filters, widened := NormalizeFilters(scopeFilters)
	if err := w.WaitSynced(ctx); err != nil {
		return err
	}
	w.setMu.Lock()
	defer w.setMu.Unlock()
	if slices.Equal(filters, w.currentFilters()) && !widened && !w.isWidened() {
		return nil
	}
	req := &rescopeRequest{scopeFilters: scopeFilters, filters: filters, widened: widened, done: make(chan error, 1)}
	select {
	case w.rescope <- req:
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

// applyRescope carries out req on the event goroutine, the old consumer
// being gone, and returns where the tail must start.
func (w *Watcher) applyRescope(req *rescopeRequest) (snapshotResult, error) {
	old := w.currentFilters()
	rev := w.revision()
	w.setFilters(req.scopeFilters, req.filters, req.widened)
	w.cfg.logger.LogAttrs(w.ctx, slog.LevelInfo, "kvwatch: re-scoping", slog.String("bucket", w.spec.Bucket),
		slog.Int("filters_before", len(old)), slog.Int("filters_after", len(req.filters)), slog.Uint64("revision", rev))

	inScope := w.matchesScopes
	if len(req.filters) == 0 {
		inScope = func(string) bool { return false }
	}
	for _, b := range w.bindings {
		b.leaveScope(w, inScope, rev)
	}
	if len(req.filters) == 0 {
		return snapshotResult{upTo: rev, catchUp: rev}, nil
	}
	var added []string
	for _, f := range req.filters {
		if !filtersCover(old, []string{f}) {
			added = append(added, f)
		}
	}
	if len(added) == 0 {
		return snapshotResult{upTo: rev, catchUp: rev}, nil
	}
	stream, err := w.js.Stream(w.ctx, w.stream)
	if err != nil {
		return snapshotResult{}, w.streamErr(err)
	}
	if len(old) == 0 {
		// Nothing was watched: there is no tail position to keep, so the
		// new scopes are read like a new watcher's.
		return w.readState(w.ctx, stream, added, 0, stream.CachedInfo().State.LastSeq)
	}
	snap, err := w.readState(w.ctx, stream, added, rev, rev)
	if errors.Is(err, errNoDirectGet) {
		return snapshotResult{}, fmt.Errorf("kvwatch: bucket %s: adding scopes to a running watcher needs direct get on the stream (AllowDirect)", w.spec.Bucket)
	}
	return snap, err
}

// finishRescope reports the outcome of req to its SetScopes call.
func finishRescope(req *rescopeRequest, err error) {
	req.done <- err
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

func (w *Watcher) isWidened() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.widened
}

// setFilters replaces the watcher's filters (event goroutine only; other
// goroutines read them under mu).
func (w *Watcher) setFilters(scopeFilters, filters []string, widened bool) {
	w.mu.Lock()
	w.scopeFilters, w.filters, w.widened = scopeFilters, filters, widened
	w.mu.Unlock()
}
