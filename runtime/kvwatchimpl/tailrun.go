package kvwatchimpl

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/internal/kvheaders"
)

// tailRun is one consumer's run of the tail (tailOnce): the consumer's
// feed (pull.go), the ways to stop it, and what the tail keeps from one
// message to the next. It lives on the event goroutine.
type tailRun struct {
	w    *Watcher
	plan *catchUpPlan
	feed *pullFeed
	// stop is feed.stop, one method value rather than one a message.
	// Three things stop the feed, so that next returns at once: the
	// watch's context (stopOnCancel), a SetScopes request (takeRescopes
	// hands it stop) and a reconnect (resetWanted is then set).
	stop         func()
	stopOnCancel func() bool
	resetWanted  chan struct{}
	endWatching  chan struct{} // closed by close: the reconnect watcher exits
	watching     sync.WaitGroup
	// lastSeq is the consumer's own sequence of the last message: the
	// next must follow it, or a message was lost (a gap).
	lastSeq uint64
	// pending is what the server still held for the consumer when it sent
	// the last message (at the consumer's creation before the first).
	pending uint64
	// stateEntries is the number of the consumer's first messages that
	// are the state (the newest entry of every key) when it delivers the
	// last entry per key: its pending count at creation.
	stateEntries uint64
	// batch holds the entries of an atomic batch until it is whole. When
	// the run ends (a SetScopes handed over, a broken consumer), what it
	// holds is not applied: the next consumer starts after the watcher's
	// revision, before them, and delivers the batch again, whole.
	batch pendingBatch
	// wide is set when the consumer delivers the whole bucket
	// (catchUpPlan.readFilter): entries out of scope are dropped, and the
	// run ends once the catch-up is done.
	wide bool
}

// openRun creates the run's consumer, from the plan's revision, and its
// feed. It returns a nil run when tailOnce must return err at once (nil
// when the watch's context ended).
func (w *Watcher) openRun(reconnected <-chan uint64) (*tailRun, error) {
	plan := w.plan
	at := func() consumerStart { return consumerStart{lastPerSubject: plan.lastPerSubject, after: plan.from} }
	filters, wide := w.filters, plan.pending && plan.readFilter != ""
	if wide {
		filters = []string{plan.readFilter}
	}
	cons, err := w.consumer.start(w.ctx, filters, at, w.bridge)
	if err != nil {
		if w.ctx.Err() != nil {
			return nil, nil
		}
		return nil, err
	}
	if w.consumer.attempts > 1 {
		// The stream was checked before the first attempt; a bucket made
		// again while they failed would take this consumer silently.
		if err := w.checkStream(); err != nil {
			return nil, err
		}
	}
	if w.js.Conn().Stats().Reconnects != w.checkedAt {
		// Created after a reconnect the stream was not checked since (a
		// server restored from an older store): check it first.
		return nil, &errConsumerBroken{why: "reconnected before the consumer was created"}
	}
	feed, err := newPullFeed(w.js, w.stream, cons.CachedInfo().Name, w.cfg.Heartbeat, wide)
	if err != nil {
		return nil, w.consumerErr(err)
	}
	r := &tailRun{w: w, plan: plan, feed: feed, stop: feed.stop, wide: wide,
		resetWanted: make(chan struct{}, 1), endWatching: make(chan struct{})}
	// SetScopes stops this feed from now on, not an earlier one (the
	// cached state of setTailStop is forgotten first).
	w.tailStoppable = true
	w.setTailStop(nil)
	r.stopOnCancel = context.AfterFunc(w.ctx, feed.stop)
	session := w.consumer.session
	r.watching.Go(func() {
		for {
			select {
			case count := <-reconnected:
				if count <= session {
					continue // before the consumer was created: it outlived that one
				}
				r.resetWanted <- struct{}{}
				feed.stop()
				return
			case <-r.endWatching:
				return
			}
		}
	})
	if info := cons.CachedInfo(); info != nil {
		r.pending = info.NumPending
	}
	// A consumer delivering the last entry per key delivers the state
	// first: its first pending messages (counted at its creation), then
	// changes.
	if plan.lastPerSubject {
		r.stateEntries = r.pending
		w.reserveCaches(r.pending)
	}
	w.recovered()
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: tailing", slog.String("bucket", w.bucket),
		slog.String("consumer", w.consumer.current()), slog.Uint64("after", plan.from), slog.Uint64("pending", r.pending))
	return r, nil
}

// reserveCaches makes room in the empty caches for a state of n entries
// about to be delivered (Cache.reserveLocked): its keys are shared evenly
// among the kinds, as nothing tells how they split. A state delivered on
// the whole bucket (tailRun.wide) counts the keys out of scope too, at
// most as many as those in scope (readpath.go), so a cache may get room
// for up to twice its keys: the map's slots, not the entries.
func (w *Watcher) reserveCaches(n uint64) {
	w.reserved = true
	w.state.mu.Lock()
	defer w.state.mu.Unlock()
	for _, b := range w.bindings {
		b.reserveLocked(int(min(n/uint64(len(w.bindings)), maxReserve)))
	}
}

// fitCaches gives back the room reserveCaches made that the state did
// not need (Cache.fitLocked), as the catch-up ends.
func (w *Watcher) fitCaches() {
	if !w.reserved {
		return
	}
	w.reserved = false
	w.state.mu.Lock()
	defer w.state.mu.Unlock()
	for _, b := range w.bindings {
		b.fitLocked()
	}
}

// maxReserve bounds the room reserveCaches makes in a cache, whatever the
// count says.
const maxReserve = 1 << 22

// close ends the run: the reconnect watcher exits, the context no longer
// stops the feed, SetScopes no longer reaches it, and it stops.
func (r *tailRun) close() {
	close(r.endWatching)
	r.watching.Wait()
	r.stopOnCancel()
	r.w.setTailStop(nil)
	r.feed.close()
}

// finishIfNothingToDeliver finishes a pending catch-up at once when the
// consumer has nothing to deliver, or the caches need nothing after its
// start.
func (r *tailRun) finishIfNothingToDeliver() error {
	plan := r.plan
	if !plan.pending || (r.pending != 0 && !plan.needsNothing()) {
		return nil
	}
	if plan.lastPerSubject && r.pending == 0 {
		// Nothing in scope at all (the count at creation is exact): the
		// state is empty as of the target.
		plan.lastPerSubject, plan.from = false, max(plan.from, plan.target)
	}
	return r.w.sealAndFinish("nothing to deliver")
}

// next returns the next message, waiting for it at most: batchWait while
// a batch is held and nothing is pending (the rest of it is being
// stored); sealIdle while a catch-up is near its end (the consumer's count
// can include entries overwritten since, which never come); otherwise
// until the feed is stopped. A wait that ends is nats.ErrTimeout.
func (r *tailRun) next() (*nats.Msg, error) {
	switch {
	case r.batch.held() && r.pending == 0:
		return r.feed.next(batchWait)
	case r.plan.pending && !r.plan.lastPerSubject && r.pending <= idleCheckBelow:
		return r.feed.next(sealIdle)
	}
	return r.feed.next(0)
}

// entry turns msg into the entry to apply, with its headers; ok is false
// for a message to skip: one the seal delivered already, one whose subject
// is no key of the bucket. A gap in the consumer's sequence (a message
// lost between the server and here: a slow consumer on the client's side,
// a pull that expired) is an *errConsumerBroken.
func (r *tailRun) entry(msg *nats.Msg) (e rawEntry, hdr nats.Header, ok bool, err error) {
	meta, ok := parseAckMeta(msg.Reply)
	if !ok {
		return rawEntry{}, nil, false, nil // not a JetStream message: cannot happen on a consumer
	}
	if meta.consumerSeq != r.lastSeq+1 {
		return rawEntry{}, nil, false, &errConsumerBroken{why: "gap in the consumer's sequence"}
	}
	r.lastSeq, r.pending = meta.consumerSeq, meta.pending
	w := r.w
	w.stats.received.Add(1) // sent by the server, whether kept or passed over below
	w.stats.pending.Store(meta.pending)
	rev := meta.streamSeq
	if rev <= r.plan.from && !r.plan.lastPerSubject {
		return rawEntry{}, nil, false, nil // the seal delivered it already
	}
	key, ok := w.keyOf(msg.Subject)
	if !ok {
		return rawEntry{}, nil, false, nil
	}
	if r.wide && !w.matchesScopes(key) {
		// Passed over in order: the seal starts after it. Not while a
		// batch is held: a reset starts before the batch, which comes
		// again whole.
		if !r.batch.held() {
			r.plan.applied(rev)
		}
		return rawEntry{}, nil, false, nil
	}
	hdr = msg.Header
	op, marker := kvheaders.EntryOp(hdr)
	return rawEntry{
		key:      key,
		value:    msg.Data,
		op:       op,
		marker:   marker,
		revision: rev,
		created:  time.Unix(0, meta.timestamp),
		initial:  r.plan.initialEntry(key),
		ordered:  true,
		state:    meta.consumerSeq <= r.stateEntries,
	}, hdr, true, nil
}

// apply applies e to the caches and advances the plan past it, or holds it
// with the rest of its atomic batch (batch.go): a batch is applied at
// once, when its last message comes, or when a message of another batch
// or of none shows it was cut. It reports whether e was applied (false:
// held, more of its batch follows).
func (r *tailRun) apply(e rawEntry, hdr nats.Header) bool {
	id, last := r.batch.mark(e, hdr)
	if r.batch.closes(id) {
		r.applyHeld()
	}
	if id == "" {
		r.w.deliver(e)
		r.plan.applied(e.revision)
		return true
	}
	r.batch.hold(id, e)
	if !last {
		return false
	}
	r.applyHeld()
	return true
}

// applyHeld applies the batch held, if any, at once, and advances the plan
// past it.
func (r *tailRun) applyHeld() {
	if !r.batch.held() {
		return
	}
	r.w.deliverBatch(r.batch.entries)
	r.plan.applied(r.batch.entries[len(r.batch.entries)-1].revision)
	r.batch.reset()
}
