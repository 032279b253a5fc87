package kvwatchimpl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/internal/kvheaders"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/subjects"
)

// This file seals a catch-up (see catchup.go): it reads every entry
// written after the last one the tail applied, in order, up to an answer
// with nothing after it, and delivers those in the watcher's scopes. That
// answer is computed in isolation from writes, so it marks a revision E
// at which the caches are exact: an entry the consumer or the seal found
// overwritten before it read its place was overwritten by one at or below
// E, which one of them delivered.
//
// The seal asks for one subject (a direct get takes one): the watcher's
// filter when it has one, otherwise the narrowest wildcard covering all of
// them (subjects.Covering), up to the whole bucket. It reads what that subject
// received since the tail's last entry, which the tail brought close to
// the stream's end first: normally little. A bucket written faster than
// the seal reads would keep it going: after maxSealRounds answers it
// stops, the consumer goes on, and the seal is tried again the next time
// the tail seems caught up; after maxSealAttempts such tries the tail
// finishes the catch-up without one (exact only eventually).
//
// In a cluster the seal's answer may come from a replica behind the one
// the consumer reads: an entry the consumer found overwritten by one that
// replica does not have yet is then missing at the sync point, and comes
// with its newer entry just after (docs/operations.md, Known limitations).
//
// On a stream without direct get the seal asks the stream's message API,
// one entry a request, and stops after maxSealGets of them.

// sealBatch is the number of messages a seal request asks for; a byte
// limit (directget.AnswerMaxBytes) may end an answer earlier.
const sealBatch = 1000

// maxSealRounds bounds the answers of a seal that the bucket's writes
// keep from ending; maxSealGets the single-entry requests on a stream
// without direct get.
const (
	maxSealRounds = 16
	maxSealGets   = 200
)

// seal delivers, in order, the entries of the watcher's scopes written
// after plan.from up to an answer with nothing after it, and advances
// plan.from and the watcher's revision to that end; complete reports
// whether it got there. Cut short, it advances them as far as it read,
// and end is where the stream had got to as far as the seal knows.
func (w *Watcher) seal(ctx context.Context, plan *catchUpPlan) (end uint64, complete bool, err error) {
	if err := w.ensureSameStream(); err != nil {
		return 0, false, err
	}
	subject, deliver := subjects.Covering(w.subjectPrefix, w.filters), w.scanDeliver(plan)
	var read uint64
	if w.directGet {
		read, end, complete, err = w.sealByDirectGet(ctx, subject, plan.from, deliver)
	} else {
		var refused bool
		read, end, complete, refused, err = w.sealByMsgGet(ctx, subject, plan.from, deliver)
		if refused {
			plan.seals = maxSealAttempts // no use asking again
		}
	}
	// What was delivered counts even when a request failed after it: the
	// next consumer starts after it, or it would come twice.
	plan.applied(read)
	w.raiseRevision(plan.from)
	if err != nil {
		return 0, false, err
	}
	if !complete {
		w.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "kvwatch: the bucket is written faster than the catch-up's seal reads it: the tail finishes it, exact only eventually",
			slog.String("bucket", w.bucket), slog.Uint64("revision", plan.from), slog.Uint64("stream_at", end))
	}
	return end, complete, nil
}

// scanDeliver returns how entries read in order without a consumer are
// delivered: those in the watcher's scopes, as ordered entries of plan.
func (w *Watcher) scanDeliver(plan *catchUpPlan) func(rawEntry) {
	return func(e rawEntry) {
		if !w.matchesScopes(e.key) {
			return
		}
		w.stats.received.Add(1)
		e.initial, e.ordered = plan.initialEntry(e.key), true
		w.deliver(e)
	}
}

// bridge delivers, by direct get, what was written after the last entry
// the tail applied, while its consumer cannot be created: after the loss
// of the meta leader no consumer is created until another is elected
// (several seconds after a crash), but the stream's replicas still answer
// direct gets. It reads like the seal, in order, and a failed request
// leaves the rest to the consumer. A read that did not end at an answer
// with nothing after it leaves the caches short of exact (a key overwritten
// before it read its place may have its newer entry beyond where it
// stopped): the catch-up is then sealed even when it needed nothing.
func (w *Watcher) bridge() {
	plan := w.plan
	if plan == nil || !w.directGet || plan.lastPerSubject || len(w.filters) == 0 {
		return
	}
	if w.ensureSameStream() != nil {
		return // the tail checks the stream again before its next consumer
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.cfg.RequestTimeout)
	defer cancel()
	read, _, complete, err := w.sealByDirectGet(ctx, subjects.Covering(w.subjectPrefix, w.filters), plan.from, w.scanDeliver(plan))
	plan.applied(read)
	w.raiseRevision(plan.from)
	if !complete {
		plan.exact = false
	}
	if err != nil {
		w.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "kvwatch: reading without a consumer", slog.String("bucket", w.bucket), slog.Any("error", err))
	}
}

// sealByDirectGet reads subject from after+1 by batched direct gets, and
// returns the last revision read (also when a request failed: what was
// delivered up to then) and, when cut short, where the stream had got to.
func (w *Watcher) sealByDirectGet(ctx context.Context, subject string, after uint64, deliver func(rawEntry)) (read, end uint64, complete bool, err error) {
	dg := directget.New(w.js, w.directStream, w.cfg.RequestTimeout)
	if err := dg.Open(ctx); err != nil {
		return after, 0, false, err
	}
	defer dg.Close()
	end = after
	delivered := after // the newest entry delivered, in order
	fn := func(msg *nats.Msg) {
		if e, ok := w.directEntry(msg); ok {
			deliver(e)
			delivered = max(delivered, e.revision)
		}
	}
	var a answer
	for round := 1; ; round++ {
		res, err := dg.Read(directget.Request{Seq: end + 1, NextBySubj: subject, Batch: sealBatch}, a.add)
		if err == nil || errors.Is(err, directget.ErrNoResults) { // "nothing after" counts only from a checked stream too
			if aerr := a.apply(w, fn); aerr != nil {
				err = aerr
			}
		}
		switch {
		case errors.Is(err, directget.ErrNoResults):
			return end, end, true, nil // nothing after end
		case err != nil:
			return max(end, delivered), 0, false, fmt.Errorf("kvwatch: sealing the catch-up: %w", err)
		}
		end = max(end, res.LastSeq)
		switch {
		case res.Pending == 0:
			return end, end, true, nil
		case round >= maxSealRounds:
			return end, end + res.Pending, false, nil
		}
	}
}

// sealByMsgGet reads subject from after+1 one entry a request, on a stream
// without direct get. A request the connection's permissions refuse (it
// shows as a timeout) leaves the rest to the tail, with a warning, and no
// further seal of this catch-up is tried (refused); another failure is
// returned, to be retried.
func (w *Watcher) sealByMsgGet(ctx context.Context, subject string, after uint64, deliver func(rawEntry)) (read, end uint64, complete, refused bool, err error) {
	read = after
	for range maxSealGets {
		e, found, err := w.msgGetNext(ctx, read+1, subject)
		if err == nil && w.js.Conn().Stats().Reconnects != w.checkedAt {
			err = errUnchecked // as an answer of a direct get (answer.apply)
		}
		switch {
		case err != nil && w.refusedOptional():
			w.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "kvwatch: cannot seal the catch-up without direct get (no permission for the stream's message API): a key overwritten during it may come just after the sync point",
				slog.String("bucket", w.bucket), slog.Any("error", err))
			return read, read, false, true, nil
		case err != nil:
			return read, read, false, false, fmt.Errorf("kvwatch: sealing the catch-up: %w", err)
		case !found:
			return read, read, true, false, nil
		}
		read = e.revision
		deliver(e)
	}
	return read, read + 1, false, false, nil
}

// msgGetResponse is the answer of the stream message API.
type msgGetResponse struct {
	Error   *jetstream.APIError `json:"error,omitempty"`
	Message *struct {
		Subject  string    `json:"subject"`
		Sequence uint64    `json:"seq"`
		Header   []byte    `json:"hdrs,omitempty"`
		Data     []byte    `json:"data,omitempty"`
		Time     time.Time `json:"time"`
	} `json:"message,omitempty"`
}

// msgGetNext returns the first entry at or after seq whose subject matches
// subject, by the stream message API ($JS.API.STREAM.MSG.GET.<stream>),
// which every stream answers; found is false when there is none.
func (w *Watcher) msgGetNext(ctx context.Context, seq uint64, subject string) (e rawEntry, found bool, err error) {
	body, err := json.Marshal(struct {
		Seq        uint64 `json:"seq"`
		NextBySubj string `json:"next_by_subj"`
	}{seq, subject})
	if err != nil {
		return rawEntry{}, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
	defer cancel()
	reply, err := w.js.Conn().RequestWithContext(ctx, w.optionalSubject(), body)
	if err != nil {
		return rawEntry{}, false, fmt.Errorf("stream message get: %w", err)
	}
	var resp msgGetResponse
	if err := json.Unmarshal(reply.Data, &resp); err != nil {
		return rawEntry{}, false, fmt.Errorf("stream message get: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return rawEntry{}, false, nil
	case resp.Error != nil:
		return rawEntry{}, false, fmt.Errorf("stream message get: %w", resp.Error)
	case resp.Message == nil:
		return rawEntry{}, false, errors.New("stream message get: empty answer")
	}
	m := resp.Message
	var hdr nats.Header
	if len(m.Header) > 0 {
		if hdr, err = nats.DecodeHeadersMsg(m.Header); err != nil {
			return rawEntry{}, false, fmt.Errorf("stream message get: %w", err)
		}
	}
	key, ok := w.keyOf(m.Subject)
	if !ok {
		return rawEntry{}, false, fmt.Errorf("stream message get: subject %q is not in the bucket", m.Subject)
	}
	op, marker := kvheaders.EntryOp(hdr)
	return rawEntry{key: key, value: m.Data, op: op, marker: marker, revision: m.Sequence, created: m.Time}, true, nil
}
