package kvwatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// tail follows live changes with the watcher's one consumer: an ordered
// consumer (it recreates itself from the last delivered revision after a
// lost heartbeat or a reconnect) filtered on the normalized filters,
// starting right after the initial state. caughtUp runs once, when the
// tail has applied every revision the state it continues needs (the
// watcher's sync, or a SetScopes call's end).
//
// One goroutine (the event goroutine) reads, decodes, commits and runs the
// handlers: handing entries to a second goroutine for decoding was
// measured no faster on 2 cores (the hand-off costs what the overlap
// saves), and a slow handler then holds back the pulls directly, so memory
// stays bounded by the consumer's pull size.
func (w *Watcher) tail(snap snapshotResult, caughtUp func()) error {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    w.filters,
		InactiveThreshold: w.cfg.inactiveThreshold,
		// The ordered consumer retries a reset itself (1 s, then 2 s);
		// past that Next returns, and watch decides: a deleted bucket ends
		// the watch, anything else is retried there, with its own backoff.
		MaxResetAttempts: 2,
	}
	switch {
	case snap.viaConsumer:
		cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	case snap.upTo == 0:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	default:
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = snap.upTo + 1
	}
	// OrderedConsumer creates the consumer on the server at once: from
	// here on, every way out deletes it, unless it is handed over to
	// applyRescope, which deletes it itself.
	cons, err := w.js.OrderedConsumer(w.ctx, w.stream, cfg)
	if err != nil {
		return w.consumerErr(err)
	}
	handedOver := false
	defer func() {
		if !handedOver {
			w.deleteConsumer(cons)
		}
	}()
	// 1,000 messages a pull: the initial delivery of a fresh bucket goes
	// faster than with the default 500, at ~200 KiB of buffer for values
	// of ~200 bytes.
	it, err := cons.Messages(jetstream.PullHeartbeat(w.cfg.heartbeat), jetstream.PullMaxMessages(1000))
	if err != nil {
		return w.consumerErr(err)
	}
	defer it.Stop() // every way out, with or without a SetScopes hand-over
	// Stopping the iterator is how the context and SetScopes end reading:
	// Next then returns at once (an option per call would allocate per
	// message).
	stopOnCancel := context.AfterFunc(w.ctx, it.Stop)
	defer stopOnCancel()
	w.mu.Lock()
	w.stopTail = it.Stop
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.stopTail = nil
		w.mu.Unlock()
	}()
	if err := w.pendingRescope(); err != nil {
		return err // a SetScopes call came before this consumer started
	}
	handOver := func(err error) error {
		err.(*errRescope).cons, handedOver = cons, true
		return err
	}

	tracker := newSyncTracker(snap, cons.CachedInfo())
	w.cfg.logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: tailing",
		slog.String("bucket", w.spec.Bucket), slog.String("initial_state", snap.path),
		slog.Uint64("from", cfg.OptStartSeq), slog.Uint64("pending", tracker.initialPending))
	reached := false
	reach := func() {
		if !reached {
			reached = true
			if snap.viaConsumer {
				w.confirmUnseen()
			}
			caughtUp()
		}
	}
	if tracker.done() {
		reach()
	}
	var received uint64
	for {
		msg, err := it.Next()
		if err != nil {
			if w.ctx.Err() != nil {
				return nil
			}
			if rs := w.pendingRescope(); rs != nil {
				return handOver(rs)
			}
			return w.consumerErr(err)
		}
		meta, ok := parseAckMeta(msg.Reply())
		if !ok {
			continue // not a JetStream message: cannot happen on a consumer
		}
		key, ok := w.keyOf(msg.Subject())
		if !ok {
			continue
		}
		received++
		if meta.consumerSeq == 1 && received > 1 {
			// The ordered consumer recreated itself (lost heartbeats, a
			// reconnect): its delivery count starts over.
			w.stats.consumerResets.Add(1)
		}
		w.stats.pending.Store(meta.pending)
		w.stats.received.Add(1)
		rev := meta.streamSeq
		if !reached && tracker.passed(rev) {
			reach()
		}
		e := rawEntry{
			key:      key,
			value:    msg.Data(),
			op:       opOf(msg.Headers()),
			revision: rev,
			created:  time.Unix(0, meta.timestamp),
			initial:  !w.isSynced() || (snap.replayInitial && !reached),
			ordered:  true,
		}
		w.deliver(e)
		if !reached && tracker.delivered(rev, meta.pending) {
			reach()
		}
	}
}

// confirmUnseen asks the stream whether each key a re-list has not
// confirmed still exists, when the consumer delivered the state itself. A
// key overwritten while it delivered lost the entry that would have
// confirmed it (history 1 keeps one), and its newer entry comes after the
// catch-up point: it is not gone, and must not be delivered as a delete.
// One request per unconfirmed key (normally only the keys that are gone),
// each bounded by the request timeout. After a failed request (a refused
// permission shows as a timeout) the rest stay unconfirmed: they are
// reported gone, as without this check.
func (w *Watcher) confirmUnseen() {
	var stream jetstream.Stream // fetched for the first key to confirm
	lastIsPut := func(raw string) (bool, error) {
		ctx, cancel := context.WithTimeout(w.ctx, w.cfg.requestTimeout)
		defer cancel()
		if stream == nil {
			s, err := w.js.Stream(ctx, w.stream)
			if err != nil {
				return false, err
			}
			stream = s
		}
		msg, err := stream.GetLastMsgForSubject(ctx, w.subjectPrefix+raw)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("%s: %w", raw, err)
		}
		return opOf(msg.Header) == OpPut, nil
	}
	for _, b := range w.bindings {
		if err := b.confirmUnseen(lastIsPut); err != nil {
			w.cfg.logger.LogAttrs(w.ctx, slog.LevelWarn, "kvwatch: cannot confirm re-listed keys: they are reported gone", slog.Any("error", err))
			return
		}
	}
}

// deleteConsumer removes the watcher's consumer from the server so that it
// does not linger until its inactive threshold.
func (w *Watcher) deleteConsumer(cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := w.js.DeleteConsumer(ctx, w.stream, info.Name)
	if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		w.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "kvwatch: deleting consumer", slog.String("consumer", info.Name), slog.Any("error", err))
	}
}

// syncTracker decides, message by message, when the tail has brought the
// watcher to its synced state. The rule is by revision: the state is
// complete once every revision up to snap.catchUp has been applied, which
// is known when a message beyond it arrives, when the message at or beyond
// it is applied, or when the consumer reports nothing pending. Counting
// messages instead (nats.go's "initial values done" marker) can fire
// early: with history 1 an overwrite removes the older message, moving a
// key of the initial state behind newer writes.
type syncTracker struct {
	snap           snapshotResult
	initialPending uint64
}

func newSyncTracker(snap snapshotResult, info *jetstream.ConsumerInfo) *syncTracker {
	t := &syncTracker{snap: snap}
	if info != nil {
		t.initialPending = info.NumPending
	}
	return t
}

// done reports whether the watcher is synced before any message arrives:
// nothing pending, or nothing to catch up beyond the state read.
func (t *syncTracker) done() bool {
	return t.initialPending == 0 || t.snap.catchUp <= t.snap.upTo
}

// passed reports whether a message at rev shows that everything the synced
// state needs was already applied.
func (t *syncTracker) passed(rev uint64) bool { return rev > t.snap.catchUp }

// delivered records a message at rev, after which pending messages remain,
// and reports whether the watcher is now synced.
func (t *syncTracker) delivered(rev, pending uint64) bool {
	return pending == 0 || rev >= t.snap.catchUp
}
