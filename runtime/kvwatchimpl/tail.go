package kvwatchimpl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// sealIdle is how long a catching-up tail waits for its next message
// before it seals anyway: the consumer's count of what it still holds can
// include entries removed since (overwritten), which never come. It waits
// so only once that count is within a pull (idleCheckBelow): before, the
// messages are on their way, and a wait with a deadline costs a timer a
// message (five allocations, a fifth of a resumed watcher's per update).
const (
	sealIdle       = 250 * time.Millisecond
	idleCheckBelow = 1000
)

// tail follows the watcher's plan with its one consumer (tailConsumer),
// from plan.from on, until the context ends (nil), a SetScopes request
// is taken (*errRescope), or an error the watch loop must handle. A broken
// delivery (a gap, missed heartbeats, a reconnect, the consumer deleted)
// recreates the consumer from the last revision applied, here.
//
// One goroutine (the event goroutine) reads, decodes and commits, and
// queues the events for the handlers (listener.go): handing entries to a
// second goroutine for decoding was measured no faster on 2 cores (the
// hand-off costs what the overlap saves; docs/design.md). A slow handler
// holds back the pulls once its queue is full (waitForRoom), so memory
// stays bounded by the consumer's pull size and that queue.
func (w *Watcher) tail() error {
	reconnected, stopWatching := w.reconnects()
	defer stopWatching()
	for {
		if w.verifyStream {
			if err := w.checkStream(); err != nil {
				return err
			}
			w.verifyStream = false
		}
		err := w.tailOnce(reconnected)
		if errors.Is(err, errNarrowed) {
			continue // the consumer on the watcher's filters, from where the wide one got to
		}
		var broken *errConsumerBroken
		if !errors.As(err, &broken) {
			if err != nil {
				w.verifyStream = true // before the watch loop's retry
			}
			return err
		}
		if perr := w.permissionError(); perr != nil {
			// Pulls refused show as missed heartbeats: recreating the
			// consumer would not help.
			return perr
		}
		w.stats.consumerResets.Add(1)
		w.verifyStream = true
		w.recovering("consumer reset: " + broken.why)
		w.cfg.Logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: recreating the consumer", slog.String("bucket", w.bucket),
			slog.String("why", broken.why), slog.Uint64("after", w.plan.from))
		if err := w.checkStream(); err != nil {
			return err
		}
		w.verifyStream = false
		// What was written since the consumer broke, at once: its
		// replacement may take a while (a meta leader to elect).
		w.bridge()
	}
}

// checkStream makes sure that the stream a broken tail goes on with is the
// one the caches come from: a bucket deleted and made again (its revisions
// start over) ends the watch with jetstream.ErrBucketNotFound, as the deletion alone
// does; a stream that went back (rewind.go) is re-listed (*errWentBack).
// One stream info request and one direct get, after a consumer broke and
// at the end of a catch-up.
//
// The stream info and the check of what it says each get the request
// timeout: an info that took long to come (a restarted server dropping
// requests) must not leave the check's reads no time.
func (w *Watcher) checkStream() error {
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.RequestTimeout)
	defer cancel()
	stream, err := w.streamInfoSoon(ctx)
	if err != nil {
		return w.streamErr(err)
	}
	ctx, cancel = context.WithTimeout(w.ctx, w.cfg.RequestTimeout)
	defer cancel()
	reconnects := w.js.Conn().Stats().Reconnects // before the check: a reconnect during it is checked again
	info := stream.CachedInfo()
	if err := w.sameStream(info); err != nil {
		return err
	}
	w.learnSchema(info)
	err = w.checkNotBack(ctx, info)
	var wb *errWentBack
	if err == nil || errors.As(err, &wb) {
		w.checkedAt = reconnects // what this session's stream is, is known: the same, or one to re-list
	}
	return err
}

// sameStream returns jetstream.ErrBucketNotFound when info is of another stream than
// the one the caches come from (created at another time), and records the
// stream's creation when none is known yet.
func (w *Watcher) sameStream(info *jetstream.StreamInfo) error {
	w.state.mu.Lock()
	defer w.state.mu.Unlock()
	switch known := w.state.streamCreated; {
	case known.IsZero():
		w.state.streamCreated = info.Created
	case !known.Equal(info.Created):
		return fmt.Errorf("%w: %s (stream %s was deleted and created again, its revisions start over)", jetstream.ErrBucketNotFound, w.bucket, w.stream)
	}
	return nil
}

// tailOnce runs one consumer of the tail until it breaks
// (*errConsumerBroken) or tail must return. Its steps: open the consumer
// and its feed (openRun), finish a catch-up with nothing to deliver,
// then per message: hand SetScopes requests over, wait for room in the
// handlers' queues, take the next message (or an idle timeout, which
// seals), turn it into an entry, apply it (or hold it with its batch),
// and seal once the catch-up seems done.
func (w *Watcher) tailOnce(reconnected <-chan uint64) error {
	r, err := w.openRun(reconnected)
	if r == nil {
		return err
	}
	defer r.close()
	if err := r.finishIfNothingToDeliver(); err != nil {
		return err
	}
	for {
		if err := w.takeRescopes(r.stop); err != nil {
			return err
		}
		if r.wide && r.plan.live() {
			return errNarrowed
		}
		w.waitForRoom() // backpressure: the handlers' queues first (listener.go)
		msg, err := r.next()
		switch {
		case err == nil:
		case w.ctx.Err() != nil:
			return nil
		case errors.Is(err, nats.ErrTimeout):
			r.applyHeld()
			if err := w.sealAndFinish("idle"); err != nil {
				return err
			}
			continue
		case len(r.resetWanted) > 0:
			return &errConsumerBroken{why: "reconnected"}
		case errors.Is(err, errFeedStopped) && w.rescopeWaiting():
			continue // takeRescopes hands the request over
		case errors.Is(err, jetstream.ErrNoHeartbeat):
			w.leaveIfSilent() // a silent connection first, or the next consumer is asked for on it
			return &errConsumerBroken{why: err.Error()}
		case errors.Is(err, jetstream.ErrConsumerDeleted),
			errors.Is(err, jetstream.ErrConsumerNotFound), errors.Is(err, errNoResponders):
			return &errConsumerBroken{why: err.Error()}
		default:
			return w.consumerErr(err)
		}
		e, hdr, ok, err := r.entry(msg)
		if err != nil {
			return err
		}
		switch {
		case !ok && !r.wide:
			continue
		case !ok && r.batch.held():
			continue // a reset or the batch's end goes on from before it
		case ok && !r.apply(e, hdr):
			continue // the rest of its batch follows
		}
		// Caught up after an entry applied, or, on the whole bucket, one
		// out of scope passed over.
		if r.plan.pending && (r.plan.reached() || r.pending == 0) {
			if err := w.sealAndFinish("caught up"); err != nil {
				return err
			}
		}
	}
}

// sealAndFinish ends a pending catch-up once the tail seems caught up
// (why: its consumer reached the target, had nothing pending, or was
// idle): it seals it (see seal.go) and runs its done. A seal cut short by
// a bucket written faster than it reads leaves the catch-up pending: the
// consumer goes on, and the next time it seems caught up the seal is
// tried again, from there. After maxSealAttempts such seals the catch-up
// finishes the next time, without one: exact only eventually.
func (w *Watcher) sealAndFinish(why string) error {
	plan := w.plan
	if plan.live() {
		return nil
	}
	switch {
	case plan.needsNothing():
	case plan.seals < maxSealAttempts:
		w.cfg.Logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: sealing the catch-up", slog.String("bucket", w.bucket),
			slog.String("why", why), slog.Uint64("after", plan.from), slog.Uint64("target", plan.target))
		end, complete, err := w.seal(w.ctx, plan)
		if err != nil {
			return err
		}
		if !complete {
			plan.seals++
			plan.target = end
			return nil
		}
	}
	// A sync point is one of the stream the caches come from: a bucket
	// deleted and made again between the read and the consumer's creation
	// takes the consumer without an error, a deleted one loses its
	// messages under the consumer, and a new one answers a seal with
	// "nothing after". One stream info request a catch-up.
	if err := w.checkStream(); err != nil {
		return err
	}
	w.fitCaches()
	plan.finish()
	return nil
}

// errNarrowed ends a tail's run whose consumer delivered a state on the
// whole bucket (catchUpPlan.readFilter) once that catch-up is done: the
// tail goes on with a consumer on the watcher's filters.
var errNarrowed = errors.New("kvwatch: the state is read: the consumer goes on with the watcher's filters")

// maxSealAttempts is how many seals a catch-up tries before it finishes
// without one (see sealAndFinish).
const maxSealAttempts = 3

// takeRescopes hands waiting SetScopes requests over to the watch loop
// (*errRescope) once the tail is live; while it catches up they wait.
// Between messages, and before the first: stop ends the tail's reading,
// for a request that comes while it waits for a message.
func (w *Watcher) takeRescopes(stop func()) error {
	if !w.plan.live() {
		w.setTailStop(nil)
		return nil
	}
	w.setTailStop(stop)
	if !w.rescopes.waitingAny() {
		return nil
	}
	if reqs := w.rescopes.take(); len(reqs) > 0 {
		w.setTailStop(nil)
		return &errRescope{reqs: reqs}
	}
	return nil
}

// setTailStop records how SetScopes interrupts the tail: stop, or nothing
// while a catch-up runs (a request waits until it is done). Set once a
// phase: the lock is taken only when it changes.
func (w *Watcher) setTailStop(stop func()) {
	if (stop == nil) == !w.tailStoppable {
		return
	}
	w.tailStoppable = stop != nil
	w.mu.Lock()
	w.stopTail = stop
	w.mu.Unlock()
}

// streamInfoSoon asks for the stream's info, each request sent again when
// not answered within 0.5 s, doubling, until ctx ends. Right after a
// server restart a request can go unanswered (sent as the connection
// died, or before the server's JetStream answers): one wait of the whole
// request timeout (5 s) then delayed the first event after the restart
// by as much (seen: "recreating the consumer", then "retrying ... context
// deadline exceeded" 5.0 s later).
func (w *Watcher) streamInfoSoon(ctx context.Context) (jetstream.Stream, error) {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond<<min(attempt, 4))
		stream, err := w.js.Stream(actx, w.stream)
		cancel()
		if err == nil || ctx.Err() != nil || !timedOut(err) {
			return stream, err
		}
	}
}
