package kvwatch

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// A read in several requests has each answered as of its own revision,
// the oldest S. The tail could catch up from S to the stream's last
// revision after the read, but it is a consumer: a key written during the
// read and overwritten again before the consumer reaches that entry loses
// it (history 1 keeps one), and the watcher would be synced without the
// key's state at the sync point. So the read is completed by direct get
// instead: scanSince reads every message written after S, up to an answer
// with nothing after it. Each answer is isolated from writes; the last
// one, with nothing left, ends at the stream's end at that moment (E).
// Every key then holds its newest entry at or below E: an entry a scan
// answer did not hold was removed by a newer one, which is at or below E
// (in a later answer) or written after E. What the read delivered already
// is skipped (the read's dedupe window). The watcher is synced at E, and
// the tail starts after it. The scan reads the whole bucket's subjects:
// the scopes' filters can be many, and a request takes one; what the
// bucket received during one read is little.

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
// in order of revision (what the read holds already is skipped by the
// dedupe window).
func (w *Watcher) deliverScanMsg(msg *nats.Msg) {
	e, ok := w.directEntry(msg)
	if !ok || !w.matchesScopes(e.key) {
		return
	}
	w.stats.received.Add(1)
	e.initial, e.ordered = true, true
	w.deliver(e)
}
