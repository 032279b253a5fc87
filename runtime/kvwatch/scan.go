package kvwatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/nats-io/nats.go"
)

// A read in several requests has each answered as of its own revision,
// the oldest S. The tail could catch up from S to the stream's last
// revision after the read, but it is a consumer: a key written during the
// read and overwritten again before the consumer reaches that entry loses
// it (history 1 keeps one), and the watcher would be synced without the
// key's state at the sync point. So the read is completed by direct get
// instead: scanSince reads every message written after S, up to an answer
// with nothing after it. Each answer stands alone (the server counts what
// is left when it ends it); the last one, with nothing left, ends at the
// stream's end at that moment (E). Every key then holds its newest entry
// at or below E: an entry a scan answer did not hold was removed by a
// newer one, which is at or below E (in a later answer) or written after
// E. What the read delivered already is skipped (the read's dedupe
// window). The watcher is synced at E, and the tail starts after it.
//
// A request takes one subject: the scan asks for the watcher's one filter
// when it has one, and otherwise for the narrowest wildcard covering all
// of them (scanSubject), up to the whole bucket: what the bucket received
// during one read is normally little. A bucket written faster than the
// scan reads it would keep it going: after maxScanRounds answers the scan
// stops where it is, and the tail catches up from there, through the
// read's dedupe window (exact only eventually).

// scanBatch is the number of messages a scan request asks for; a byte
// limit (answerMaxBytes) may end an answer earlier.
const scanBatch = 1000

// maxScanRounds bounds the answers of a scan that the bucket's writes
// keep from ending (see above).
const maxScanRounds = 16

// scanSince delivers, in order, the entries of the watcher's scopes
// written after revision after, up to the end of the stream, and returns
// that end and true; or, after maxScanRounds answers, the revision it
// reached and false.
func (w *Watcher) scanSince(ctx context.Context, after uint64) (end uint64, complete bool, err error) {
	dg := newDirectGetter(w.js, w.stream, w.cfg.requestTimeout)
	if err := dg.open(ctx); err != nil {
		return 0, false, err
	}
	defer dg.close()
	subject := scanSubject(w.subjectPrefix, w.filters)
	end = after
	for round := 1; ; round++ {
		req := directGetRequest{Seq: end + 1, NextBySubj: subject, Batch: scanBatch}
		res, err := dg.read(req, w.deliverScanMsg)
		switch {
		case errors.Is(err, errNoResults):
			return end, true, nil // nothing after end: the stream's end
		case err != nil:
			return 0, false, fmt.Errorf("kvwatch: completing the initial state: %w", err)
		}
		end = max(end, res.lastSeq)
		switch {
		case res.pending == 0:
			return end, true, nil
		case round >= maxScanRounds:
			w.cfg.logger.LogAttrs(ctx, slog.LevelInfo, "kvwatch: the bucket is written faster than the initial read's completion reads it: the tail catches up instead",
				slog.String("bucket", w.spec.Bucket), slog.Uint64("revision", end), slog.Uint64("pending", res.pending))
			return end, false, nil
		}
	}
}

// scanSubject returns one subject covering every filter: the filter
// itself when there is one, else the filters' common literal tokens and
// ">", one token shorter when a filter ends there (">" needs a token to
// match), and never shorter than the bucket's prefix.
func scanSubject(prefix string, filters []string) string {
	if len(filters) == 1 {
		return filters[0]
	}
	common := strings.Split(filters[0], ".")
	for _, f := range filters {
		tokens := strings.Split(f, ".")
		n := 0
		for n < len(common) && n < len(tokens) && common[n] == tokens[n] && tokens[n] != "*" && tokens[n] != ">" {
			n++
		}
		if n == len(tokens) {
			n-- // f is the common part itself
		}
		common = common[:n]
	}
	covering := strings.Join(common, ".") + "."
	if len(covering) < len(prefix) {
		return prefix + ">"
	}
	return covering + ">"
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
	w.stats.pending.Store(headerUint(msg, "Nats-Num-Pending"))
	e.initial, e.ordered = true, true
	w.deliver(e)
}
