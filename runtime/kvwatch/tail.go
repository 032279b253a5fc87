package kvwatch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// sealIdle is how long a catching-up tail waits for its next message
// before it seals anyway: the consumer's count of what it still holds can
// include entries removed since (overwritten), which never come.
const sealIdle = 250 * time.Millisecond

// tail follows the watcher's plan with its one consumer (tailConsumer),
// from plan.from on, until the context ends (nil), a SetScopes request
// is taken (*errRescope), or an error the watch loop must handle. A broken
// delivery (a gap, missed heartbeats, a reconnect, the consumer deleted)
// recreates the consumer from the last revision applied, here.
//
// One goroutine (the event goroutine) reads, decodes, commits and runs the
// handlers: handing entries to a second goroutine for decoding was
// measured no faster on 2 cores (the hand-off costs what the overlap
// saves), and a slow handler then holds back the pulls directly, so memory
// stays bounded by the consumer's pull size.
func (w *Watcher) tail() error {
	reconnected, stopWatching := w.reconnects()
	defer stopWatching()
	for {
		err := w.tailOnce(reconnected)
		var broken *errConsumerBroken
		if !errors.As(err, &broken) {
			return err
		}
		w.stats.consumerResets.Add(1)
		w.cfg.logger.LogAttrs(w.ctx, slog.LevelInfo, "kvwatch: recreating the consumer", slog.String("bucket", w.spec.Bucket),
			slog.String("why", broken.why), slog.Uint64("after", w.plan.from))
	}
}

// tailOnce runs one consumer of the tail until it breaks
// (*errConsumerBroken) or tail must return.
func (w *Watcher) tailOnce(reconnected <-chan struct{}) error {
	plan := w.plan
	cons, err := w.consumer.start(w.ctx, w.filters, consumerStart{lastPerSubject: plan.lastPerSubject, after: plan.from})
	if err != nil {
		if w.ctx.Err() != nil {
			return nil
		}
		return err
	}
	// 1,000 messages a pull: the initial delivery of a fresh bucket goes
	// faster than with the default 500, at ~200 KiB of buffer for values
	// of ~200 bytes.
	it, err := cons.Messages(jetstream.PullHeartbeat(w.cfg.heartbeat), jetstream.PullMaxMessages(1000),
		jetstream.WithMessagesErrOnMissingHeartbeat(true))
	if err != nil {
		return w.consumerErr(err)
	}
	defer it.Stop()
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
	w.cfg.logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: tailing", slog.String("bucket", w.spec.Bucket),
		slog.String("consumer", w.consumer.current()), slog.Uint64("after", plan.from), slog.Uint64("pending", pending))
	if plan.pending && (pending == 0 || plan.needsNothing()) {
		if plan.lastPerSubject && pending == 0 {
			// Nothing in scope at all (the count at creation is exact):
			// the state is empty as of the target.
			plan.lastPerSubject, plan.from = false, max(plan.from, plan.target)
		}
		if err := w.sealAndFinish(); err != nil {
			return err
		}
	}
	var lastSeq uint64 // the consumer's own sequence of the last message
	for {
		if err := w.takeRescopes(it); err != nil {
			return err
		}
		var msg jetstream.Msg
		if plan.pending && !plan.lastPerSubject {
			msg, err = it.Next(jetstream.NextMaxWait(sealIdle))
		} else {
			msg, err = it.Next()
		}
		switch {
		case err == nil:
		case w.ctx.Err() != nil:
			return nil
		case errors.Is(err, nats.ErrTimeout):
			if err := w.sealAndFinish(); err != nil {
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
		lastSeq = meta.consumerSeq
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
		w.deliver(rawEntry{
			key:      key,
			value:    msg.Data(),
			op:       opOf(msg.Headers()),
			revision: rev,
			created:  time.Unix(0, meta.timestamp),
			initial:  plan.initialEntry(key),
			ordered:  true,
		})
		plan.applied(rev)
		if plan.pending && (plan.reached() || meta.pending == 0) {
			if err := w.sealAndFinish(); err != nil {
				return err
			}
		}
	}
}

// sealAndFinish ends a pending catch-up: it seals it (see seal.go) and
// runs its done. A seal cut short by a bucket written faster than it
// reads leaves the rest to the consumer, up to where the seal saw the
// stream end: the catch-up finishes when the tail gets there, exact only
// eventually.
func (w *Watcher) sealAndFinish() error {
	plan := w.plan
	if !plan.pending {
		return nil
	}
	if !plan.sealed && !plan.needsNothing() {
		end, complete, err := w.seal(w.ctx, plan)
		if err != nil {
			return err
		}
		plan.sealed = true
		if !complete {
			plan.target = end
			if !plan.reached() {
				return nil
			}
		}
	}
	plan.finish()
	return nil
}

// takeRescopes hands waiting SetScopes requests over to the watch loop
// (*errRescope) once the tail is live; while it catches up they wait.
// Between messages, and before the first.
func (w *Watcher) takeRescopes(it jetstream.MessagesContext) error {
	if w.plan.pending {
		w.setTailStop(nil)
		return nil
	}
	w.setTailStop(it.Stop)
	if reqs := w.rescopes.take(); len(reqs) > 0 {
		w.setTailStop(nil)
		return &errRescope{reqs: reqs}
	}
	return nil
}

// setTailStop records how SetScopes interrupts the tail: stop, or nothing
// while a catch-up runs (a request waits until it is done).
func (w *Watcher) setTailStop(stop func()) {
	w.mu.Lock()
	w.stopTail = stop
	w.mu.Unlock()
}
