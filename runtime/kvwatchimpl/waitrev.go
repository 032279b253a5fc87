package kvwatchimpl

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/subjects"
)

// This file is read-your-writes: a node that wrote a value (a typed write
// returns its revision) waits until its own watcher has it. Through an
// edge's mirror that takes a moment, and seconds after the hub restarted
// (the measured delays: docs/fleet.md), so a Get right after a Put
// through a mirror can read the old value.

// WaitRevision blocks until every change up to revision rev within the
// watcher's scopes is in its caches (nil), ctx ends (its error), the
// stream goes back meanwhile (its *StreamWentBackError: the write at rev
// may be lost, and rev another write's), or the watch ends (its error, or
// ErrStopped). Stats().LastRevision is then at least rev.
//
// rev need not be in the watcher's scopes: when the watcher's stream (an
// edge's mirror: it may lag) holds rev and has no entry in scope after the
// watcher's revision, the watcher is up to rev already, and its revision
// is raised to it. Each check asks the stream for its state
// and reads, by direct get, what it holds after the watcher's revision
// (without delivering it: the tail does), every few milliseconds while
// the answer is "not yet". From a handler or an Events loop body too (as
// WaitSynced): the caches then hold rev, while the caller's own events
// may still be queued behind it.
func (w *Watcher) WaitRevision(ctx context.Context, rev uint64) error {
	if w.revision() >= rev {
		return nil
	}
	defer w.waiting(true)()
	wentBack := w.stats.wentBack.Load()
	if err := w.WaitSynced(ctx); err != nil {
		return err
	}
	for wait := time.Millisecond; ; wait = min(2*wait, 20*time.Millisecond) {
		if w.stats.wentBack.Load() != wentBack {
			// rev may have been lost with the stream's writes: the
			// revision the watcher reaches next would be another write's.
			return w.lastWentBack.Load()
		}
		if w.revision() >= rev {
			return nil
		}
		if up, err := w.upTo(ctx, rev); err == nil && up {
			w.raiseRevision(rev)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.ended:
			if w.revision() >= rev {
				return nil
			}
			return w.stoppedErr()
		case <-time.After(wait):
		}
	}
}

// upTo reports whether the watcher's stream holds revision rev and
// nothing in the watcher's scopes after the watcher's revision (up to the
// answer's end, at or past rev): every change up to rev is then applied.
func (w *Watcher) upTo(ctx context.Context, rev uint64) (bool, error) {
	from := w.revision()
	ctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	stream, err := w.js.Stream(ctx, w.stream)
	if err != nil {
		return false, err
	}
	w.learnSchema(stream.CachedInfo())
	if stream.CachedInfo().State.LastSeq < rev {
		return false, nil // a mirror behind its origin
	}
	filters := w.currentFilters()
	if len(filters) == 0 {
		return true, nil
	}
	w.mu.Lock()
	direct, directStream, matcher := w.directGet, w.directStream, w.scopeKeys
	w.mu.Unlock()
	if !direct {
		return false, nil // the tail alone can tell
	}
	dg := directget.New(w.js, directStream, w.cfg.RequestTimeout)
	if err := dg.Open(ctx); err != nil {
		return false, err
	}
	defer dg.Close()
	pendingInScope := false
	end, err := dg.Read(directget.Request{Seq: from + 1, NextBySubj: subjects.Covering(w.subjectPrefix, filters), Batch: sealBatch}, func(msg *nats.Msg) {
		// Any entry in scope counts, also one after rev: with history 1
		// it may have replaced one at or below rev that the stream no
		// longer holds, which the caches only have once the tail applied
		// it (and then the watcher's revision is past rev).
		if e, ok := w.directEntry(msg); ok && matcher.Matches(e.key) {
			pendingInScope = true
		}
	})
	switch {
	case errors.Is(err, directget.ErrNoResults):
		return true, nil // nothing after the watcher's revision
	case err != nil:
		return false, err
	}
	// Not yet, while the tail has an entry in scope to apply;
	// nor when this answer stopped short of rev (more may follow it).
	return !pendingInScope && (end.LastSeq >= rev || end.Pending == 0), nil
}
