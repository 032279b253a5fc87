package kvwatchimpl

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is live re-scoping: SetScopes changes what a running watcher
// watches, still with at most one consumer, at a cost proportional to the
// scopes added, not to everything watched.

// rescopeRequest is one SetScopes call.
type rescopeRequest struct {
	filters  []string
	err      error         // the outcome, set before finished is closed
	finished chan struct{} // closed with the outcome
	once     sync.Once
}

// finish reports the outcome to the SetScopes call; only the first
// outcome counts.
func (r *rescopeRequest) finish(err error) {
	r.once.Do(func() {
		r.err = err
		close(r.finished)
	})
}

// rescopeQueue holds the SetScopes calls the event goroutine has not taken
// yet, in order.
type rescopeQueue struct {
	// queued is the number of waiting requests, read without the lock
	// between messages of the tail.
	queued  atomic.Int32
	mu      sync.Mutex
	waiting []*rescopeRequest
	// applying is the batch the event goroutine works on, if any: a call
	// for the same filters waits for it instead of queueing again.
	applying []*rescopeRequest
	wake     chan struct{} // a request was queued (capacity 1)
}

// add queues a request for filters, or returns the request already queued
// (or being applied last) for the same filters; nil when the watcher's
// filters are these and nothing is queued.
func (q *rescopeQueue) add(filters, current []string) *rescopeRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	newest := q.newestLocked()
	switch {
	case newest != nil && slices.Equal(newest.filters, filters):
		return newest
	case newest == nil && slices.Equal(current, filters):
		return nil
	}
	req := &rescopeRequest{filters: filters, finished: make(chan struct{})}
	q.waiting = append(q.waiting, req)
	q.queued.Store(int32(len(q.waiting)))
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return req
}

func (q *rescopeQueue) newestLocked() *rescopeRequest {
	switch {
	case len(q.waiting) > 0:
		return q.waiting[len(q.waiting)-1]
	case len(q.applying) > 0:
		return q.applying[len(q.applying)-1]
	}
	return nil
}

// take returns the waiting requests, oldest first, and marks them being
// applied: only the last one's filters matter, the others were replaced
// by it before the watcher got to them.
func (q *rescopeQueue) take() []*rescopeRequest {
	q.mu.Lock()
	defer q.mu.Unlock()
	reqs := q.waiting
	q.waiting = nil
	q.queued.Store(0)
	if len(reqs) > 0 {
		q.applying = reqs
	}
	return reqs
}

// waitingAny reports whether a request waits to be taken.
func (q *rescopeQueue) waitingAny() bool { return q.queued.Load() > 0 }

// finish reports err to every request taken or waiting that is done:
// those of the batch being applied (applied is true), or all of them
// (the watch ended).
func (q *rescopeQueue) finish(err error, all bool) {
	q.mu.Lock()
	reqs := q.applying
	q.applying = nil
	if all {
		reqs = append(reqs, q.waiting...)
		q.waiting = nil
		q.queued.Store(0)
	}
	q.mu.Unlock()
	for _, r := range reqs {
		r.finish(err)
	}
}

// errRescope ends the tail so that the event goroutine can apply the
// requests it took.
type errRescope struct{ reqs []*rescopeRequest }

func (e *errRescope) Error() string { return "kvwatch: re-scoping" }

// SetScopes changes the watcher's scopes while it runs. On the event
// goroutine, once the watcher is synced (and an earlier SetScopes has
// brought its scopes in):
//
//  1. the tail stops; keys of scopes no longer watched leave the cache:
//     each is delivered as an OpDelete with LeftScope set and its last
//     value in Prev (the key still exists in the bucket; the watcher stops
//     watching it);
//  2. the scopes added are read, their entries delivered as initial events
//     (only they are read: the cost is proportional to what was added);
//  3. the old consumer is deleted, then one consumer with the new filter
//     set starts at the watcher's revision (or the read's, when a replica
//     behind answered it), skipping what the read delivered, and the
//     change is sealed like the initial sync (see
//     catchup.go): no change to any scope is lost or delivered twice, and
//     the caches are then exact. The watcher never holds two consumers.
//
// Without direct get on the stream, step 2 is the new consumer's own
// last-per-subject delivery of every scope instead: entries the cache holds
// at the same revision bring no event.
//
// It returns once the change is applied and sealed, or with ctx's error
// (the change then still completes in the background), from anywhere: a
// handler or an Events loop body too, whose own events of the change
// (the deletes of step 1, the initial events of step 2) come after it
// returns. Calls that overlap are applied in order, and a call replaced by a later one before the watcher got to it
// returns when the later one is applied. Transient failures are retried
// like the watch's: a key an attempt delivered that is gone when the next
// attempt reads is delivered as a delete with FinalStateUnknown set.
// Values are checked first (*ScopeError). Setting the current scopes
// again does nothing; empty scopes leave the watcher with no consumer.
func (w *Watcher) SetScopes(ctx context.Context, scopes Scopes) error {
	filters, err := w.filtersFor(scopes)
	if err != nil {
		return err
	}
	select {
	case <-w.ended:
		return w.stoppedErr()
	default:
	}
	req := w.rescopes.add(filters, w.currentFilters())
	if req == nil {
		return nil
	}
	defer w.waiting(true)()
	w.interruptTail()
	select {
	case <-req.finished:
		return req.err
	case <-ctx.Done():
		return ctx.Err()
	case <-w.ended:
		select {
		case <-req.finished:
			return req.err
		default:
			return w.stoppedErr()
		}
	}
}

// stoppedErr is what calls on a watcher that has ended return.
func (w *Watcher) stoppedErr() error {
	if err := w.Err(); err != nil {
		return err
	}
	return kvwatch.ErrStopped
}

// interruptTail stops the running consumer feed, if the tail is live,
// so that the event goroutine takes a queued request; it reports whether
// there was a feed to stop.
func (w *Watcher) interruptTail() bool {
	w.mu.Lock()
	stop := w.stopTail
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
	return stop != nil
}

// rescopeWaiting reports whether a SetScopes request waits to be taken.
func (w *Watcher) rescopeWaiting() bool { return w.rescopes.waitingAny() }

// rescopePlan carries out a batch of requests (the last one's filters)
// on the event goroutine and returns the catch-up the tail must seal. sw
// records the switch of filters, which the first attempt makes: a retry
// after a transient error only reads again.
func (w *Watcher) rescopePlan(reqs []*rescopeRequest, sw *scopeSwitch) (*catchUpPlan, error) {
	if err := w.ensureSameStream(); err != nil {
		return nil, err
	}
	if !sw.done {
		w.switchScopes(reqs[len(reqs)-1].filters, sw)
	}
	finish := func() {
		w.endRelist()
		w.setRescoping(false)
		w.syncPoint()
		w.rescopes.finish(nil, false)
	}
	added := sw.added()
	if len(added) == 0 {
		// Scopes removed only: nothing to read, but the live tail is not
		// exact at R (an entry overwritten before the consumer got to it
		// comes later, as its newer entry): sealed from R like any
		// catch-up.
		return &catchUpPlan{from: sw.rev, pending: true, done: finish}, nil
	}
	stream, err := w.js.Stream(w.ctx, w.stream)
	if err != nil {
		return nil, w.streamErr(err)
	}
	info := stream.CachedInfo()
	if err := w.sameStream(info); err != nil {
		return nil, err
	}
	w.learnSchema(info)
	last := info.State.LastSeq
	w.learnDirectGet(info)
	if !w.directGet {
		// The consumer delivers the state of every scope itself; what the
		// cache already holds brings no event.
		return &catchUpPlan{lastPerSubject: true, target: last, pending: true, initial: true, path: pathConsumer, done: finish}, nil
	}
	// Read the added scopes as they are now (one atomic request where they
	// fit: a read pinned at an older revision makes the server scan for
	// the keys written since).
	res, err := w.readState(w.ctx, stream, added, last, nil)
	switch {
	case errors.Is(err, directget.ErrNoDirectGet):
		w.noDirectGet()
		return &catchUpPlan{lastPerSubject: true, target: last, pending: true, initial: true, path: pathConsumer, done: finish}, nil
	case err != nil:
		return nil, err
	}
	// The old scopes are exact at R (the switch), the added ones as of
	// the read's answers, S at the oldest: the consumer starts at the
	// older of the two, skipping what the read delivered (a single answer
	// covers the added scopes up to S) and, when the read is older than R
	// (answered by a replica behind the one that delivered R), the old
	// scopes up to R.
	addedKeys := w.keyMatcher(added)
	if len(sw.old) == 0 {
		w.setRevision(res.oldest)
		return &catchUpPlan{from: res.oldest, skip: res.marks.window(w, nil, 0), target: res.newest, exact: res.atomic,
			pending: true, added: addedKeys, done: finish}, nil
	}
	skip := res.marks.window(w, added, res.oldest)
	if res.oldest < sw.rev {
		skip = skip.with(&dedupeWindow{groups: []dedupeGroup{{keys: w.keyMatcher(sw.old), upTo: sw.rev}}, upTo: sw.rev})
	}
	return &catchUpPlan{from: min(sw.rev, res.oldest), skip: skip, target: max(res.newest, sw.rev), pending: true,
		added: addedKeys, done: finish}, nil
}

// scopeSwitch is what switching the filters of a batch of SetScopes
// requests recorded, for its retries.
type scopeSwitch struct {
	done    bool
	old     []string // the filters before
	current []string // the filters after
	rev     uint64   // the revision the switch happened at
}

// added returns the filters that the old filters do not cover: the scopes
// to read.
func (s *scopeSwitch) added() []string {
	var added []string
	for _, f := range s.current {
		if !filtersCover(s.old, []string{f}) {
			added = append(added, f)
		}
	}
	return added
}

// switchScopes makes filters the watcher's: it records the filters and
// revision it starts from, marks a re-scope in progress (no checkpoint
// until it is caught up), and takes the keys of the scopes left out of the
// cache, telling the handlers.
func (w *Watcher) switchScopes(filters []string, sw *scopeSwitch) {
	sw.done, sw.old, sw.current, sw.rev = true, w.currentFilters(), filters, w.revision()
	w.setRescoping(true)
	w.setFilters(filters)
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelInfo, "kvwatch: re-scoping", slog.String("bucket", w.bucket),
		slog.Int("filters_before", len(sw.old)), slog.Int("filters_after", len(filters)), slog.Uint64("revision", sw.rev))
	inScope := w.matchesScopes
	if len(filters) == 0 {
		inScope = func(string) bool { return false }
	}
	w.removeAll(func(b AnyBinding) func() { return b.leaveScopeLocked(w, inScope, sw.rev) })
}

// setRescoping records whether a re-scope is being brought in, under the
// state lock that Checkpoint reads it with.
func (w *Watcher) setRescoping(on bool) {
	w.state.mu.Lock()
	w.state.rescoping = on
	w.state.mu.Unlock()
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
