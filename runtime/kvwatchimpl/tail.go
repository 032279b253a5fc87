package kvwatchimpl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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
		w.cfg.Logger.LogAttrs(w.ctx, slog.LevelInfo, "kvwatch: recreating the consumer", slog.String("bucket", w.bucket),
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
func (w *Watcher) checkStream() error {
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.RequestTimeout)
	defer cancel()
	stream, err := w.js.Stream(ctx, w.stream)
	if err != nil {
		return w.streamErr(err)
	}
	reconnects := w.js.Conn().Stats().Reconnects // before the check: a reconnect during it is checked again
	info := stream.CachedInfo()
	if err := w.sameStream(info); err != nil {
		return err
	}
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
// (*errConsumerBroken) or tail must return.
func (w *Watcher) tailOnce(reconnected <-chan struct{}) error {
	plan := w.plan
	at := func() consumerStart { return consumerStart{lastPerSubject: plan.lastPerSubject, after: plan.from} }
	cons, err := w.consumer.start(w.ctx, w.filters, at, w.bridge)
	if err != nil {
		if w.ctx.Err() != nil {
			return nil
		}
		return err
	}
	if w.consumer.attempts > 1 {
		// The stream was checked before the first attempt; a bucket made
		// again while they failed would take this consumer silently.
		if err := w.checkStream(); err != nil {
			return err
		}
	}
	if w.js.Conn().Stats().Reconnects != w.checkedAt {
		// Created after a reconnect the stream was not checked since (a
		// server restored from an older store): check it first.
		return &errConsumerBroken{why: "reconnected before the consumer was created"}
	}
	// 1,000 messages a pull: a consumer's initial delivery of a state went
	// faster than with nats.go's default 500, and the client buffers at
	// most one pull, 1,000 values (BENCHMARKS.md, Design decisions:
	// "tail.go: 1,000 messages a pull").
	it, err := cons.Messages(jetstream.PullHeartbeat(w.cfg.Heartbeat), jetstream.PullMaxMessages(1000),
		jetstream.WithMessagesErrOnMissingHeartbeat(true))
	if err != nil {
		return w.consumerErr(err)
	}
	defer it.Stop()
	// SetScopes stops this iterator from now on, not an earlier one (the
	// cached state of setTailStop is forgotten first).
	w.tailStoppable = true
	w.setTailStop(nil)
	defer w.setTailStop(nil)
	// Stopping the iterator is how the context, SetScopes and a reconnect
	// end reading: Next then returns at once (an option per call would
	// allocate per message).
	stopOnCancel := context.AfterFunc(w.ctx, it.Stop)
	defer stopOnCancel()
	resetWanted := make(chan struct{}, 1)
	stopOnReconnect := make(chan struct{})
	var watching sync.WaitGroup
	defer watching.Wait()
	defer close(stopOnReconnect)
	watching.Go(func() {
		select {
		case <-reconnected:
			resetWanted <- struct{}{}
			it.Stop()
		case <-stopOnReconnect:
		}
	})
	pending := uint64(0)
	if info := cons.CachedInfo(); info != nil {
		pending = info.NumPending
	}
	// A consumer delivering the last entry per key delivers the state
	// first: its first pending messages (counted at its creation), then
	// changes.
	var stateEntries uint64
	if plan.lastPerSubject {
		stateEntries = pending
	}
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: tailing", slog.String("bucket", w.bucket),
		slog.String("consumer", w.consumer.current()), slog.Uint64("after", plan.from), slog.Uint64("pending", pending))
	if plan.pending && (pending == 0 || plan.needsNothing()) {
		if plan.lastPerSubject && pending == 0 {
			// Nothing in scope at all (the count at creation is exact):
			// the state is empty as of the target.
			plan.lastPerSubject, plan.from = false, max(plan.from, plan.target)
		}
		if err := w.sealAndFinish("nothing to deliver"); err != nil {
			return err
		}
	}
	var lastSeq uint64 // the consumer's own sequence of the last message
	stop := it.Stop    // one method value, not one a message
	// batch holds the entries of an atomic batch until it is whole. When
	// the tail ends (a SetScopes handed over, a broken consumer), what it
	// holds is not applied: the next consumer starts after the watcher's
	// revision, before them, and delivers the batch again, whole.
	var batch pendingBatch
	for {
		if err := w.takeRescopes(stop); err != nil {
			return err
		}
		w.waitForRoom() // backpressure: the handlers' queues first (listener.go)
		var msg jetstream.Msg
		if batch.held() && pending == 0 {
			msg, err = it.Next(jetstream.NextMaxWait(batchWait))
		} else if plan.pending && !plan.lastPerSubject && pending <= idleCheckBelow {
			msg, err = it.Next(jetstream.NextMaxWait(sealIdle))
		} else {
			msg, err = it.Next()
		}
		switch {
		case err == nil:
		case w.ctx.Err() != nil:
			return nil
		case errors.Is(err, nats.ErrTimeout):
			batch.flush(w, plan)
			if err := w.sealAndFinish("idle"); err != nil {
				return err
			}
			continue
		case len(resetWanted) > 0:
			return &errConsumerBroken{why: "reconnected"}
		case errors.Is(err, jetstream.ErrMsgIteratorClosed) && w.rescopeWaiting():
			continue // takeRescopes hands the request over
		case errors.Is(err, jetstream.ErrNoHeartbeat), errors.Is(err, jetstream.ErrConsumerDeleted),
			errors.Is(err, jetstream.ErrConsumerNotFound):
			return &errConsumerBroken{why: err.Error()}
		default:
			return w.consumerErr(err)
		}
		meta, ok := parseAckMeta(msg.Reply())
		if !ok {
			continue // not a JetStream message: cannot happen on a consumer
		}
		if meta.consumerSeq != lastSeq+1 {
			// A message lost between the server and here (a slow
			// consumer on the client's side, a pull that expired).
			return &errConsumerBroken{why: "gap in the consumer's sequence"}
		}
		lastSeq, pending = meta.consumerSeq, meta.pending
		w.stats.pending.Store(meta.pending)
		rev := meta.streamSeq
		if rev <= plan.from && !plan.lastPerSubject {
			continue // the seal delivered it already
		}
		key, ok := w.keyOf(msg.Subject())
		if !ok {
			continue
		}
		w.stats.received.Add(1)
		hdr := msg.Headers()
		op, marker := entryOp(hdr)
		e := rawEntry{
			key:      key,
			value:    msg.Data(),
			op:       op,
			marker:   marker,
			revision: rev,
			created:  time.Unix(0, meta.timestamp),
			initial:  plan.initialEntry(key),
			ordered:  true,
			state:    meta.consumerSeq <= stateEntries,
		}
		if batch.take(w, plan, e, hdr) {
			continue // the rest of its batch follows
		}
		if plan.pending && (plan.reached() || meta.pending == 0) {
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
	if !plan.pending {
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
	plan.finish()
	return nil
}

// maxSealAttempts is how many seals a catch-up tries before it finishes
// without one (see sealAndFinish).
const maxSealAttempts = 3

// takeRescopes hands waiting SetScopes requests over to the watch loop
// (*errRescope) once the tail is live; while it catches up they wait.
// Between messages, and before the first: stop ends the tail's reading,
// for a request that comes while it waits for a message.
func (w *Watcher) takeRescopes(stop func()) error {
	if w.plan.pending {
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
