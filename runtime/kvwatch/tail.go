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
// starting right after the initial state.
func (w *Watcher) tail(snap snapshotResult) error {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    w.filters,
		InactiveThreshold: w.cfg.inactiveThreshold,
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
	cons, err := w.js.OrderedConsumer(w.ctx, w.stream, cfg)
	if err != nil {
		return fmt.Errorf("kvwatch: bucket %s: consumer: %w", w.spec.Bucket, err)
	}
	it, err := cons.Messages(jetstream.PullHeartbeat(w.cfg.heartbeat))
	if err != nil {
		return fmt.Errorf("kvwatch: bucket %s: consumer: %w", w.spec.Bucket, err)
	}
	defer w.deleteConsumer(cons)
	defer it.Stop()

	sync := newSyncTracker(snap, cons.CachedInfo())
	w.cfg.logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: tailing",
		slog.String("bucket", w.spec.Bucket), slog.String("initial_state", snap.path),
		slog.Uint64("from", cfg.OptStartSeq), slog.Uint64("pending", sync.initialPending))
	if sync.done() {
		w.markSynced()
	}
	// Stopping the iterator is how the context ends the loop: Next then
	// returns at once (an option per call would allocate per message).
	stopOnCancel := context.AfterFunc(w.ctx, it.Stop)
	defer stopOnCancel()
	var received uint64
	for {
		msg, err := it.Next()
		if err != nil {
			if w.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("kvwatch: bucket %s: consumer: %w", w.spec.Bucket, err)
		}
		meta, ok := parseAckMeta(msg.Reply())
		if !ok {
			continue // not a JetStream message: cannot happen on a consumer
		}
		key, ok := w.keyOf(msg.Subject())
		if !ok {
			continue
		}
		rev := meta.streamSeq
		received++
		if meta.consumerSeq == 1 && received > 1 {
			// The ordered consumer recreated itself (lost heartbeats, a
			// reconnect): its delivery count starts over.
			w.stats.consumerResets.Add(1)
		}
		w.stats.pending.Store(meta.pending)
		if !w.isSynced() && sync.passed(rev) {
			w.markSynced()
		}
		e := rawEntry{
			key:      key,
			value:    msg.Data(),
			op:       opOf(msg.Headers()),
			revision: rev,
			created:  time.Unix(0, meta.timestamp),
			initial:  !w.isSynced(),
			ordered:  true,
		}
		w.deliver(&e)
		if !w.isSynced() && sync.delivered(rev, meta.pending) {
			w.markSynced()
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
// watcher to its synced state.
//
// After a direct-get read the rule is exact: the state is complete once
// every revision up to snap.catchUp has been applied, which is known when a
// message beyond it arrives, when the message at or beyond it is applied,
// or when the consumer reports nothing pending. Counting messages instead
// (nats.go's "init done" marker) can fire early: with history 1 an
// overwrite removes the older message, shifting a key of the initial state
// behind newer writes.
//
// When the consumer itself delivers the initial state (no direct get), the
// best available rule is nats.go's: the count of messages pending when the
// consumer was created, or nothing pending.
type syncTracker struct {
	snap           snapshotResult
	initialPending uint64
	received       uint64
}

func newSyncTracker(snap snapshotResult, info *jetstream.ConsumerInfo) *syncTracker {
	t := &syncTracker{snap: snap}
	if info != nil {
		t.initialPending = info.NumPending
	}
	return t
}

// done reports whether the watcher is synced before any message arrives.
func (t *syncTracker) done() bool {
	if t.initialPending == 0 {
		return true
	}
	return !t.snap.viaConsumer && t.snap.catchUp <= t.snap.upTo
}

// passed reports whether a message at rev shows that everything the synced
// state needs was already applied.
func (t *syncTracker) passed(rev uint64) bool {
	return !t.snap.viaConsumer && rev > t.snap.catchUp
}

// delivered records a message at rev, after which pending messages remain,
// and reports whether the watcher is now synced.
func (t *syncTracker) delivered(rev, pending uint64) bool {
	t.received++
	if pending == 0 {
		return true
	}
	if t.snap.viaConsumer {
		return t.received >= t.initialPending
	}
	return rev >= t.snap.catchUp
}
