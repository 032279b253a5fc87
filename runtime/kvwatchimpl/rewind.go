package kvwatchimpl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/subjects"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is a stream that went back in time. A server can lose writes
// it acknowledged (a crash or power loss before its deferred fsync, a
// store restored from a backup): the stream comes back with its creation
// time unchanged and a lower last sequence, and new writes then reuse the
// lost revisions with other contents. A watcher that goes on from its
// revision would keep the lost values for good. So before each new
// consumer (after a reset, at the end of each catch-up) and when resuming,
// the watcher checks that the stream still holds what it applied: its last
// sequence is not below the watcher's revision, and the newest entry the
// watcher applied that the stream still holds at its revision is the same
// entry there (key, time and value; a checkpoint has key and time). When
// not, it reports a *StreamWentBackError, re-lists (vanished keys deleted
// with FinalStateUnknown, changed ones updated) and goes on from the
// stream as it is. What it cannot see: a loss after which every entry it
// applied past the loss point has been removed again (overwritten with
// history 1, deleted by limits) before the check; RELIABILITY.md says
// more.

// anchor identifies an entry the watcher applied: the stream must hold it
// at its revision, or no longer hold anything there; never another entry.
type anchor struct {
	revision uint64
	key      string
	created  time.Time
	value    []byte // nil when unknown (restored from a checkpoint)
}

// is reports whether e is the entry a identifies: the same key and
// time, and the same value when a has one.
func (a anchor) is(e rawEntry) bool {
	return e.key == a.key && e.created.Equal(a.created) && (a.value == nil || bytes.Equal(e.value, a.value))
}

// maxAnchors is how many of the newest entries applied are kept: when the
// newest was overwritten since, an older one still tells.
const maxAnchors = 8

// anchors are the newest entries applied, by revision. Guarded by the
// state lock.
type anchors struct {
	a []anchor
}

// note keeps e if it is among the newest maxAnchors by revision.
func (s *anchors) note(a anchor) {
	if len(s.a) < maxAnchors {
		s.a = append(s.a, a)
		return
	}
	oldest := 0
	for i := range s.a {
		if s.a[i].revision < s.a[oldest].revision {
			oldest = i
		}
	}
	if a.revision > s.a[oldest].revision {
		s.a[oldest] = a
	}
}

// newestFirst returns a copy, newest first.
func (s *anchors) newestFirst() []anchor {
	out := append([]anchor(nil), s.a...)
	for i := 1; i < len(out); i++ { // at most maxAnchors: insertion sort
		for j := i; j > 0 && out[j].revision > out[j-1].revision; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// noteApplied records an entry of the stream the watcher applied (or
// skipped, knowing it) as an anchor; the caller holds the state lock.
func (w *Watcher) noteApplied(e *rawEntry) {
	if e.revision > 0 {
		w.anchors.note(anchor{revision: e.revision, key: e.key, created: e.created, value: e.value})
	}
}

// wentBack returns a *StreamWentBackError when the stream of info no
// longer holds what the caches (revision rev, anchors as) come from;
// nil when it does, or when no anchor is still held to tell. Anchors
// without a value (a checkpoint's) are compared by key and time. With
// seenAll (a live watcher, no catch-up running: every entry in scope after
// seenFrom and up to rev it has seen is an anchor), an entry in scope
// between the newest anchor and rev, which the watcher would have seen,
// tells too: the stream went back to before the newest anchor and new
// writes filled the revisions after it.
//
// A last sequence below rev tells only when a leader in touch with its
// replicas answered (inTouch); otherwise it is a replica's store, which
// can be behind what the watcher applied (errNotFromLeader: checked
// again). A question that goes unanswered tells nothing either (an error).
func (w *Watcher) wentBack(ctx context.Context, info *jetstream.StreamInfo, rev uint64, as []anchor, seenAll bool) (*kvwatch.StreamWentBackError, error) {
	last := w.lastSeq(info, rev)
	wb := &kvwatch.StreamWentBackError{Bucket: w.bucket, Revision: rev, LastSeq: last}
	if last < rev {
		if !inTouch(info.Cluster) {
			return nil, errNotFromLeader
		}
		held, err := w.stillHolds(as, rev)
		if err != nil || held {
			return nil, err
		}
		return wb, nil
	}
	if !w.directGet && w.msgGetRefused {
		return nil, nil
	}
	for _, a := range as {
		e, found, err := w.heldAt(ctx, a.revision)
		switch {
		case err != nil && !w.directGet && w.refusedOptional():
			w.noteMsgGetRefused(ctx, err)
			return nil, nil
		case err != nil:
			return nil, err
		case !found, e.revision > a.revision:
			// Removed since (overwritten, deleted, expired; nothing at or
			// after it, with the last sequence past it, is every later
			// entry removed too): an older anchor may tell.
			continue
		case !a.is(e):
			wb.At, wb.Key, wb.Found = a.revision, a.key, e.key
			return wb, nil
		}
		break // the newest entry still held is the one applied
	}
	if !seenAll || len(as) == 0 || max(as[0].revision, w.seenFrom) >= rev {
		return nil, nil
	}
	e, found, err := w.inScopeBetween(ctx, max(as[0].revision, w.seenFrom), rev)
	if err != nil || !found {
		return nil, err
	}
	wb.At, wb.Found = e.revision, e.key
	return wb, nil
}

// confirmBehindAfter is how long a check waits before it looks again at
// a stream whose info said its last sequence is below the watcher's
// revision: longer than a cut-off leader counts its replicas in touch
// (peerSilence). One answer from a leader in touch was seen behind an
// entry the watcher had applied from its consumer, in a cluster with no
// loss injected (RELIABILITY.md).
const confirmBehindAfter = peerSilence + 500*time.Millisecond

// stillHolds reports whether the stream, looked at again after
// confirmBehindAfter, holds the newest entry the watcher applied (the
// first of as), at its revision, at or past rev: then it lost nothing up
// to rev, and the answer behind was a store a moment behind. A stream
// that went back holds nothing there, or an entry written since, with
// another time. When the watcher applied no entry at or past rev (its
// revision moved past its newest without one in scope), or the entries
// cannot be read, nothing can show that: false, the answer stands. An
// error when the look goes unanswered or the watch ends first.
func (w *Watcher) stillHolds(as []anchor, rev uint64) (bool, error) {
	if len(as) == 0 || as[0].revision < rev || (!w.directGet && w.msgGetRefused) {
		return false, nil
	}
	a := as[0]
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: the stream's info is behind the watcher: looking again", slog.String("bucket", w.bucket),
		slog.Uint64("revision", rev), slog.Duration("in", confirmBehindAfter))
	if !sleep(w.ctx, confirmBehindAfter) {
		return false, w.ctx.Err()
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.RequestTimeout)
	defer cancel()
	e, found, err := w.heldAt(ctx, a.revision)
	switch {
	case err != nil && !w.directGet && w.refusedOptional():
		w.noteMsgGetRefused(ctx, err)
		return false, nil
	case err != nil:
		return false, err
	}
	return found && e.revision == a.revision && a.is(e), nil
}

// heldAt reads the stream's first entry at or after seq (entryFrom),
// asking the leader (askLeader) when a direct get, which a replica
// behind may answer, finds none.
func (w *Watcher) heldAt(ctx context.Context, seq uint64) (rawEntry, bool, error) {
	e, found, err := w.entryFrom(ctx, seq)
	if err == nil && !found && w.directGet {
		e, found, err = w.askLeader(ctx, seq)
	}
	return e, found, err
}

// noteMsgGetRefused records that the connection may not read the
// stream's message API, which tells without direct get: from then on the
// last sequence alone tells.
func (w *Watcher) noteMsgGetRefused(ctx context.Context, err error) {
	w.msgGetRefused = true
	w.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "kvwatch: cannot check the entries the watcher applied without direct get (no permission for the stream's message API): a stream gone back is noticed only by its last sequence",
		slog.String("bucket", w.bucket), slog.Any("error", err))
}

// askLeader reads the stream's first entry at or after seq through its
// message API, which the stream's leader answers, after a direct get found
// none: a direct get is answered by any replica of a replicated stream,
// and one behind the leader holds nothing at or after a revision it has
// not stored yet. found is false when the leader holds none either, or
// cannot be asked (no permission for the message API: the direct get's
// answer then stands); err when the question went unanswered (a timeout,
// a leader being elected): the check is made again.
func (w *Watcher) askLeader(ctx context.Context, seq uint64) (e rawEntry, found bool, err error) {
	if w.msgGetRefused {
		return rawEntry{}, false, nil
	}
	e, found, err = w.msgGetNext(ctx, seq, w.subjectPrefix+">")
	if err != nil && w.refusedOptional() {
		w.msgGetRefused = true
		return rawEntry{}, false, nil
	}
	return e, found, err
}

// errNotFromLeader fails a check of the stream whose info says its last
// sequence is below the watcher's revision but was not answered by a
// leader in touch with its replicas (inTouch): the answer may be a
// replica's that is behind, which is no sign of a stream gone back. The
// check is made again, with backoff, until such a leader answers.
var errNotFromLeader = errors.New("the stream's info is behind the watcher but not from a leader in touch with its replicas (no leader, or one cut off): checking again")

// peerSilence is how long a leader may have not heard from a replica and
// still count it as in touch: two of nats-server's 1 s Raft heartbeats.
const peerSilence = 2 * time.Second

// inTouch reports whether a stream's info (its cluster part c) comes from
// a server that can speak for the stream: one not replicated (c nil, or
// no replicas), or its leader having heard lately from enough replicas to
// form a quorum with itself. nats-server answers a replicated stream's
// info from any replica once the stream has no leader (on a server up
// for more than 10 s)
// (Leader ""), and a leader cut off from the others keeps answering as
// one until it steps down, about 10 s later: each from its own store.
func inTouch(c *jetstream.ClusterInfo) bool {
	if c == nil || len(c.Replicas) == 0 {
		return c == nil || c.Leader != ""
	}
	if c.Leader == "" {
		return false
	}
	current := 0
	for _, p := range c.Replicas {
		if p.Current && !p.Offline && p.Active <= peerSilence {
			current++
		}
	}
	return current+1 > (len(c.Replicas)+1)/2
}

// inScopeBetween returns the first entry in the watcher's scopes after
// revision from and at or below to, reading one answer of at most
// sealBatch entries (what it does not reach is not looked at).
func (w *Watcher) inScopeBetween(ctx context.Context, from, to uint64) (e rawEntry, found bool, err error) {
	filters := w.currentFilters()
	if len(filters) == 0 {
		return rawEntry{}, false, nil
	}
	w.mu.Lock()
	matcher := w.scopeKeys
	w.mu.Unlock()
	if !w.directGet {
		e, found, err := w.msgGetNext(ctx, from+1, subjects.Covering(w.subjectPrefix, filters))
		if err != nil || !found || e.revision > to || !matcher.Matches(e.key) {
			return rawEntry{}, false, nil // not told: a check, not a read
		}
		return e, true, nil
	}
	dg := directget.New(w.js, w.directStream, w.cfg.RequestTimeout)
	if err := dg.Open(ctx); err != nil {
		return rawEntry{}, false, err
	}
	defer dg.Close()
	_, err = dg.Read(directget.Request{Seq: from + 1, NextBySubj: subjects.Covering(w.subjectPrefix, filters), Batch: sealBatch}, func(msg *nats.Msg) {
		if m, ok := w.directEntry(msg); ok && !found && m.revision <= to && matcher.Matches(m.key) {
			e, found = m, true
		}
	})
	if errors.Is(err, directget.ErrNoResults) {
		err = nil
	}
	return e, found, err
}

// entryFrom reads the stream's first entry at or after seq, by direct get
// when the stream allows it, by its message API otherwise; found is false
// when there is none.
func (w *Watcher) entryFrom(ctx context.Context, seq uint64) (rawEntry, bool, error) {
	if !w.directGet {
		return w.msgGetNext(ctx, seq, w.subjectPrefix+">")
	}
	if behind := w.cfg.ReplicaBehind; behind != nil && behind(seq) {
		return rawEntry{}, false, nil
	}
	body, err := json.Marshal(directget.Request{Seq: seq, NextBySubj: w.subjectPrefix + ">"})
	if err != nil {
		return rawEntry{}, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	msg, err := w.js.Conn().RequestWithContext(ctx, directget.APIPrefix(w.js)+"DIRECT.GET."+w.directStream, body)
	if err != nil {
		return rawEntry{}, false, fmt.Errorf("direct get of revision %d: %w", seq, err)
	}
	switch msg.Header.Get("Status") {
	case "":
	case "404":
		return rawEntry{}, false, nil
	default:
		return rawEntry{}, false, fmt.Errorf("direct get of revision %d: %s %s", seq, msg.Header.Get("Status"), msg.Header.Get("Description"))
	}
	e, ok := w.directEntry(msg)
	if !ok {
		return rawEntry{}, false, fmt.Errorf("direct get of revision %d: subject %q is not in the bucket", seq, msg.Header.Get("Nats-Subject"))
	}
	return e, true, nil
}

// ensureSameStream checks the stream (checkStream) when the connection
// has reconnected since the last check: a server restarted on an older
// store is only reached through a reconnect, and nothing read from it may
// be applied before it is checked. Reads that apply what they read (the
// seal, the bridge, a retried read) call it first.
func (w *Watcher) ensureSameStream() error {
	if w.js.Conn().Stats().Reconnects == w.checkedAt {
		return nil
	}
	return w.checkStream()
}

// errUnchecked fails a read whose answer came after a reconnect the stream
// was not checked since: it is read again, after the check.
var errUnchecked = errors.New("kvwatch: the connection reconnected during a read: reading again, once the stream is checked")

// answer holds the entries of one direct-get answer until it is whole:
// they are applied only if the connection has not reconnected since the
// stream was checked (a request sent just before a reconnect can be
// answered by a server restored from an older store).
type answer struct{ msgs []*nats.Msg }

func (a *answer) add(msg *nats.Msg) { a.msgs = append(a.msgs, msg) }

// apply passes the entries held to fn, in order, and empties a; or
// returns errUnchecked, applying none.
func (a *answer) apply(w *Watcher, fn func(*nats.Msg)) error {
	defer func() {
		clear(a.msgs)
		a.msgs = a.msgs[:0]
	}()
	if w.js.Conn().Stats().Reconnects != w.checkedAt {
		return errUnchecked
	}
	for _, m := range a.msgs {
		fn(m)
	}
	return nil
}

// errWentBack ends the tail when the stream went back: the watch loop
// re-lists (relistAfterRewind).
type errWentBack struct{ err *kvwatch.StreamWentBackError }

func (e *errWentBack) Error() string { return e.err.Error() }

// checkNotBack is checkStream's second half: the stream of info still
// holds what the caches come from (wentBack), or an *errWentBack.
func (w *Watcher) checkNotBack(ctx context.Context, info *jetstream.StreamInfo) error {
	w.state.mu.RLock()
	rev, as := w.state.revision, w.anchors.newestFirst()
	w.state.mu.RUnlock()
	// Check 3 holds once the watcher is live: while a catch-up brings
	// scopes in (a read, the consumer's own delivery), their entries up to
	// the revision are still on their way.
	live := w.plan != nil && w.plan.live()
	wb, err := w.wentBack(ctx, info, rev, as, live)
	switch {
	case err != nil:
		return fmt.Errorf("kvwatch: bucket %s: checking the stream: %w", w.bucket, err)
	case wb != nil:
		return &errWentBack{err: wb}
	}
	return nil
}

// reportWentBack counts, logs and reports a stream that went back; the
// caller re-lists.
func (w *Watcher) reportWentBack(wb *kvwatch.StreamWentBackError) {
	w.lastWentBack.Store(wb)
	w.stats.wentBack.Add(1)
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelError, "kvwatch: the stream went back: re-listing",
		slog.String("bucket", w.bucket), slog.Any("error", wb))
	w.notify(wb)
}

// relistAfterRewind reports wb and reads the state again, in place of
// what the caches hold: the caches' revisions say nothing of the stream's
// now (otherStream), entries other than the cached ones are delivered as
// initial puts, cached keys the read does not find as deletes with
// FinalStateUnknown, and no checkpoint is taken until it is done. It
// leaves the plan that tails from the read on, or returns the error that
// ends the watch (nil when the context ended); a stream that goes back
// again meanwhile is reported and read again.
func (w *Watcher) relistAfterRewind(wb *kvwatch.StreamWentBackError) error {
	for {
		w.reportWentBack(wb)
		w.setRescoping(true) // no checkpoint of a half-read state
		w.state.mu.Lock()
		// Nothing of the old stream to check the new one against: the
		// read sets the revision, and its entries are the anchors.
		w.anchors, w.state.revision = anchors{}, 0
		w.state.mu.Unlock()
		w.otherStream = true
		err := w.retrying(func(attempt int) error {
			if attempt > 0 {
				if err := w.ensureSameStream(); err != nil {
					return err
				}
			}
			w.beginRelist(nil)
			stream, err := w.js.Stream(w.ctx, w.stream)
			if err != nil {
				return w.streamErr(err)
			}
			plan, err := w.readPlan(w.ctx, stream)
			if err != nil {
				return err
			}
			plan.initial = true
			plan.done = func() {
				w.endRelist()
				w.otherStream = false
				w.setRescoping(false)
				w.rescopes.finish(nil, false) // a SetScopes the re-list overtook is applied too
				if w.isSynced() {
					w.syncPoint()
				} else {
					w.markSynced()
				}
			}
			w.plan = plan
			return nil
		})
		var again *errWentBack
		if !errors.As(err, &again) {
			return err
		}
		wb = again.err
	}
}

// lastSeq is the last sequence of the stream info, as the check takes it.
func (w *Watcher) lastSeq(info *jetstream.StreamInfo, rev uint64) uint64 {
	last := info.State.LastSeq
	if behind := w.cfg.InfoBehind; behind != nil && last >= rev && rev > 0 && behind(rev) {
		return rev - 1
	}
	return last
}
