package kvwatchimpl

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// This file is the event goroutine's life: a catch-up plan (catchup.go)
// for the initial state, the tail that follows it, re-scoping in between,
// and retries.

// run is the event goroutine. When the watch is over it deletes the
// consumer, ends the other goroutines and closes ended, then waits for the
// listeners to run what they still have (all of it when the watch ended
// on its own, with its error last; nothing after Stop) and closes done.
func (w *Watcher) run() {
	w.reportCheckpointFile() // a checkpoint file Start ignored, to OnError before any event
	err := w.watch()
	if err != nil && w.ctx.Err() == nil {
		w.setErr(err)
		w.cfg.Logger.LogAttrs(context.Background(), slog.LevelError, "kvwatch: watch ended", slog.String("bucket", w.bucket), slog.Any("error", err))
		w.notify(err)
	}
	w.consumer.delete()
	// SetScopes calls still waiting learn that the watch is over.
	w.rescopes.finish(w.stoppedErr(), true)
	w.cancel() // a watch that ended on its own ends its other goroutines too
	w.bg.Wait()
	close(w.ended)
	w.waitDrainers()
}

// watch makes the first catch-up plan, then tails, applying SetScopes
// requests between tails, until the context ends or an error that
// retrying cannot fix. Other errors (a server restarting, a leader moving,
// a timeout) are retried with backoff: a failed read from the start (what
// it delivered is confirmed by the next attempt, or deleted), the tail
// from the last revision applied.
func (w *Watcher) watch() error {
	if len(w.filters) > 0 {
		err := w.retrying(func(attempt int) (err error) {
			if attempt > 0 {
				// The stream may have gone back meanwhile (ensureSameStream).
				// Entries the failed attempt delivered may be gone by now:
				// the read that follows confirms them, and the keys it does
				// not find are deleted at sync (as a resumed watcher's
				// re-list does).
				if err := w.ensureSameStream(); err != nil {
					return err
				}
				w.beginRelist(nil)
			}
			plan, err := w.startPlan(w.ctx)
			if err == nil {
				w.plan = plan
			}
			return err
		})
		var wb *errWentBack
		if errors.As(err, &wb) {
			err = w.relistAfterRewind(wb.err)
		}
		if err != nil || w.ctx.Err() != nil {
			return err
		}
	} else {
		w.plan = &catchUpPlan{exact: true, pending: true, initial: true, done: w.markSynced}
	}
	for attempt := 0; ; {
		received := w.stats.received.Load()
		var err error
		if len(w.filters) == 0 {
			w.consumer.delete()
			w.plan.finish()
			err = w.idle()
		} else {
			err = w.tail()
		}
		var rs *errRescope
		var wb *errWentBack
		switch {
		case err == nil:
			return nil // the context ended
		case errors.As(err, &rs):
			err := w.rescope(rs.reqs)
			if errors.As(err, &wb) {
				err = w.relistAfterRewind(wb.err) // it applies the scopes too
			}
			if err != nil || w.ctx.Err() != nil {
				return err
			}
			attempt = 0
			continue
		case errors.As(err, &wb):
			if err := w.relistAfterRewind(wb.err); err != nil || w.ctx.Err() != nil {
				return err
			}
			attempt = 0
			continue
		case terminal(err):
			return err
		}
		if w.stats.received.Load() > received {
			attempt = 0 // it worked for a while: start the backoff over
		}
		w.noteServerAnswer(err)
		if stop, final := w.backoff(attempt, err); stop {
			return final
		}
		attempt++
		w.stats.consumerResets.Add(1)
	}
}

// rescope applies a batch of SetScopes requests, retrying transient
// failures with backoff, and leaves the plan that brings the new scopes
// in. It returns an error only when the watch must end (nil when the
// context ended).
func (w *Watcher) rescope(reqs []*rescopeRequest) error {
	var sw scopeSwitch
	err := w.retrying(func(attempt int) (err error) {
		if attempt > 0 {
			if err := w.ensureSameStream(); err != nil {
				return err
			}
			// Entries the failed attempt delivered may be gone by now:
			// the read that follows confirms the added scopes' keys, and
			// those it does not find are deleted when the scopes are
			// caught up (as a retried initial read does).
			w.beginRelist(w.keyMatcher(sw.added()).Matches)
		}
		plan, err := w.rescopePlan(reqs, &sw)
		if err == nil {
			w.plan = plan
		}
		return err
	})
	var wb *errWentBack
	if err != nil && !errors.As(err, &wb) {
		w.rescopes.finish(err, false)
	}
	return err
}

// retrying runs try until it succeeds, backing off after each transient
// failure; it returns the error that ends the watch (nil when the context
// ended).
func (w *Watcher) retrying(try func(attempt int) error) error {
	for attempt := 0; ; attempt++ {
		err := try(attempt)
		if err == nil {
			return nil
		}
		if w.ctx.Err() != nil {
			return nil
		}
		var wb *errWentBack
		if terminal(err) || errors.As(err, &wb) {
			return err // a stream gone back is the caller's to re-list
		}
		w.noteServerAnswer(err)
		if stop, final := w.backoff(attempt, err); stop {
			return final
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
	w.logRetry("kvwatch: retrying", slog.Int("attempt", attempt+1), slog.Duration("in", wait), slog.Any("error", err))
	if !sleep(w.ctx, wait) {
		return true, nil
	}
	return false, nil
}

// idle waits, with nothing to watch and no consumer, for the end or for a
// SetScopes request.
func (w *Watcher) idle() error {
	for {
		if reqs := w.rescopes.take(); len(reqs) > 0 {
			return &errRescope{reqs: reqs}
		}
		select {
		case <-w.ctx.Done():
			return nil
		case <-w.rescopes.wake:
		}
	}
}
