package kvwatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// A fresh stream's state is delivered by the consumer itself, and the
// consumer cannot say when that state is complete under writes: with
// history 1 an overwrite removes a key's older message before the
// consumer reaches it, and its newer one lies beyond any point fixed in
// advance; the consumer's pending count lags behind new messages (the
// server counts them on another goroutine), so "nothing pending" can come
// early. So once the consumer has delivered everything up to the
// stream's last revision when it was created (catchUp), scanSince reads,
// by batched direct get, every message written after that, up to the end
// of the stream. Each answer is isolated from writes; the last one, with
// nothing left after it, is the stream's end at that moment (E). Every
// key then holds its newest entry at or below E: an entry the consumer
// did not reach was removed by a newer one, which is at or below E (in
// the scan) or written after the scan's answer (after E). The watcher is
// synced at E, and the consumer's entries at or below E are skipped.

// scanBatch is the number of messages a scan request asks for; a byte
// limit (answerMaxBytes) may end an answer earlier.
const scanBatch = 1000

// scanSince delivers, in order, the entries of the watcher's scopes
// written after revision after, up to the end of the stream, and returns
// that end.
func (w *Watcher) scanSince(ctx context.Context, after uint64) (uint64, error) {
	dg := newDirectGetter(w.js, w.stream, w.cfg.requestTimeout)
	if err := dg.open(ctx); err != nil {
		return 0, err
	}
	defer dg.close()
	end := after
	for {
		// Every subject of the bucket: the scopes' filters can be many,
		// and a request takes one. What was written since the consumer
		// started is little: the writes of one read's duration.
		req := multiLastRequest{Seq: end + 1, NextBySubj: w.subjectPrefix + ">", Batch: scanBatch}
		res, err := dg.read(req, w.deliverScanMsg)
		switch {
		case errors.Is(err, errNoResults):
			return end, nil // nothing after end: the stream's end
		case err != nil:
			return 0, fmt.Errorf("kvwatch: completing the initial state: %w", err)
		}
		end = max(end, res.lastSeq)
		if res.pending == 0 {
			return end, nil
		}
	}
}

// deliverScanMsg delivers one entry scanSince read, when it is in the
// watcher's scopes, as an initial event: puts, deletes and purges alike,
// in order of revision.
func (w *Watcher) deliverScanMsg(msg *nats.Msg) {
	e, ok := w.directEntry(msg)
	if !ok || !w.matchesScopes(e.key) {
		return
	}
	w.stats.received.Add(1)
	e.initial, e.ordered = true, true
	w.deliver(e)
}
