package kvwatch

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// This file is the event goroutine's life: initial state, tail, re-scoping
// in between, and retries.

// run is the event goroutine: initial state, then live changes, and
// re-scoping in between.
func (w *Watcher) run() {
	defer close(w.done)
	err := w.watch()
	if err != nil && w.ctx.Err() == nil {
		w.setErr(err)
		w.cfg.logger.LogAttrs(context.Background(), slog.LevelError, "kvwatch: watch ended", slog.String("bucket", w.spec.Bucket), slog.Any("error", err))
		w.disp.notify(err)
	}
	// A SetScopes call still waiting learns that the watch is over.
	if err := w.pendingRescope(); err != nil {
		err.(*errRescope).req.finish(ErrStopped)
	}
}

// watch reads the initial state (or resumes), then tails, applying
// SetScopes requests between tails, until the context ends or an error
// that retrying cannot fix. Other errors (a server restarting, a leader
// moving, a timeout) are retried with backoff: the initial read from the
// start (entries already delivered are recognised by revision), the tail
// from the last revision applied.
func (w *Watcher) watch() error {
	var snap snapshotResult
	if len(w.filters) > 0 {
		for attempt := 0; ; attempt++ {
			if attempt > 0 {
				// Entries the failed attempt delivered may be gone by now:
				// the read that follows confirms them, and the keys it does
				// not find are deleted at sync (as a resumed watcher's
				// re-list does).
				for _, b := range w.bindings {
					b.beginRelist(nil)
				}
			}
			var err error
			if snap, err = w.catchUpPlan(w.ctx); err == nil {
				break
			}
			if terminal(err) {
				return err
			}
			if stop, final := w.backoff(attempt, err); stop {
				return final
			}
		}
		w.mu.Lock()
		w.statePath = snap.path
		w.mu.Unlock()
	}
	// What to do when the tail has caught up: every revision the read's
	// dedupe window covers is behind it.
	caughtUp := func() {
		w.dedupe = nil
		w.markSynced()
	}
	// A SetScopes call whose scopes are not caught up yet learns if the
	// watch ends first.
	var waiting *rescopeRequest
	defer func() {
		if waiting != nil {
			waiting.finish(ErrStopped)
		}
	}()
	for attempt := 0; ; {
		var err error
		received := w.stats.received.Load()
		if len(w.filters) == 0 {
			caughtUp()
			err = w.idle()
		} else {
			err = w.tail(snap, caughtUp)
		}
		var rs *errRescope
		switch {
		case err == nil:
			return nil // the context ended
		case errors.As(err, &rs):
			req := rs.req
			waiting = req
			var stop bool
			if snap, stop, err = w.rescopeWithRetries(req, rs.cons); stop {
				req.finish(cmp.Or(err, ErrStopped))
				return err
			}
			caughtUp = func() {
				w.dedupe = nil
				for _, b := range w.bindings {
					b.endRelist(w, w.revision()) // a no-op unless a read was retried
				}
				w.setRescoping(false)
				req.finish(nil)
			}
			continue
		case terminal(err):
			return err
		}
		if w.stats.received.Load() > received {
			attempt = 0 // it worked for a while: start the backoff over
		}
		if stop, final := w.backoff(attempt, err); stop {
			return final
		}
		attempt++
		w.stats.consumerResets.Add(1)
		if rev := w.revision(); w.stats.received.Load() > received || !snap.viaConsumer {
			// Go on from the last revision applied. A consumer that
			// delivers the state (the initial one, or a SetScopes replay)
			// and failed before delivering anything starts over as is: the
			// watcher's revision, older than what it replays, would skip
			// entries.
			snap = snapshotResult{upTo: rev, catchUp: max(snap.catchUp, rev), path: snap.path, replayInitial: snap.replayInitial}
		}
	}
}

// rescopeWithRetries applies req, retrying transient failures with
// backoff. stop is set when the watch must end: err is then the terminal
// error, or nil when the context ended.
func (w *Watcher) rescopeWithRetries(req *rescopeRequest, oldCons jetstream.Consumer) (snap snapshotResult, stop bool, err error) {
	for attempt := 0; ; attempt++ {
		if req.switched {
			// A retry: entries the failed attempt delivered may be gone
			// by now. The read that follows confirms the added scopes'
			// keys; those it does not find are deleted when the scopes
			// are caught up (as a retried initial read does).
			added := w.keyMatcher(req.added())
			for _, b := range w.bindings {
				b.beginRelist(added.matches)
			}
		}
		snap, err = w.applyRescope(req, oldCons)
		oldCons = nil // deleted by the first attempt
		if err == nil {
			return snap, false, nil
		}
		if terminal(err) {
			return snapshotResult{}, true, err
		}
		if stop, final := w.backoff(attempt, err); stop {
			return snapshotResult{}, true, final
		}
	}
}

// backoff logs a transient error and waits before attempt+1: 100 ms,
// doubling up to 2 s. stop is set when the watch must end instead: the
// context ended (final nil), or the error turned out to be a permissions
// violation (final says so).
func (w *Watcher) backoff(attempt int, err error) (stop bool, final error) {
	if perr := w.permissionError(); perr != nil {
		return true, perr
	}
	wait := min(100*time.Millisecond<<min(attempt, 5), 2*time.Second)
	w.cfg.logger.LogAttrs(w.ctx, slog.LevelWarn, "kvwatch: retrying", slog.String("bucket", w.spec.Bucket),
		slog.Int("attempt", attempt+1), slog.Duration("in", wait), slog.Any("error", err))
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return false, nil
	case <-w.ctx.Done():
		return true, nil
	}
}

// idle waits, with nothing to watch and no consumer, for the end or for a
// SetScopes request.
func (w *Watcher) idle() error {
	select {
	case <-w.ctx.Done():
		return nil
	case req := <-w.rescope:
		return &errRescope{req: req}
	}
}
