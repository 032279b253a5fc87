package kvwatchimpl

import (
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
)

// This file chooses how the initial state is read when it does not fit
// one batched direct get answer: by direct get (snapshot.go), or by the
// watcher's one consumer delivering the newest entry of every key itself,
// on the whole bucket (a single filter: the watcher's own when it has
// one). A consumer's delivery costs the server less per entry than a
// direct get, and a single-filter consumer keeps that speed after keys
// were overwritten, where a multi-filter one slows down by orders of
// magnitude; the bucket's own subject is the server's cheapest filter (it
// scans its blocks without matching subjects against an index). But the
// consumer then delivers every key of the bucket, in scope or not (the
// tail drops the others), so it is chosen only when the scopes hold at
// least consumerShare of the bucket's keys (BENCHMARKS.md, Design
// decisions: "readpath.go: the consumer when the scopes hold most of the
// bucket"). The catch-up is then sealed from the consumer's last entry,
// which, every key of the bucket counted, is near the stream's end: the
// seal reads what was written during the read, as after a read by direct
// get. Once sealed, the tail replaces the consumer by one on the
// watcher's filters (tailOnce).
//
// The share is counted without reading, over every filter, never from
// some of them: one large tenant beside small ones is the usual mix, and
// any part of the filters may hold it. When the share is at most 1,024
// keys (a bucket of at most 2,048), the first request of the read tells:
// a state that fits one answer is read by it, and one refused for
// matching more than 1,024 keys holds more than the share (no count is
// sent: a node watching a few tenants of a large bucket pays nothing).
// Beyond, a refused read is counted message by message (CountMessages, a
// request per filter, each answered by a count), against the stream's
// messages: the share is then the filters' share of the bucket's
// messages, each key's history included, which is its share of keys
// when the keys were overwritten alike. A watcher of more than
// messagesSample filters counts messagesSample of them, spread over the
// filters, and scales: an estimate, off by how unlike the uncounted
// filters are to the counted (docs/watching.md, "The initial read").

// consumerShare is the share of the bucket's keys that the watcher's
// filters must hold for its consumer to read their state.
const consumerShare = 0.5

// messagesSample bounds how many filters are counted message by message
// (CountMessages, a request each, sent one after the other): a watcher of
// up to that many filters (32 scopes of a key and the keys under it) is
// counted exactly.
const messagesSample = 64

// readChoice is what the counts of a read's choice found (readState).
type readChoice struct {
	// consumer is set when the consumer reads the state.
	consumer bool
	// told is set once the choice is made; unset before the read when
	// its first request tells first (see above).
	told bool
}

// chooseReader chooses how the watcher's filters are read, given the
// stream's state: before the read (refused false), or once its first
// request was refused for matching more than 1,024 keys (refused true),
// when the choice before could not tell. A single filter is read on that
// filter (nothing out of scope to deliver): by the consumer whenever it
// does not fit one answer.
func (w *Watcher) chooseReader(dg *directget.Getter, st jetstream.StreamState, refused bool) (readChoice, error) {
	switch w.cfg.ReadPath {
	case pathDirect:
		return readChoice{told: true}, nil
	case pathConsumer:
		return readChoice{consumer: true, told: true}, nil
	}
	every := w.cfg.ReadPath == "choose"
	f := len(w.filters)
	keys := max(st.NumSubjects, 1) // every key has a subject, a deleted one its marker's
	need := consumerShare * float64(keys)
	switch {
	case f == 1 || (need <= directget.MaxMultiLastSubjects && !every):
		// Refused: more than 1,024 keys, at least the share.
		return readChoice{consumer: refused, told: refused}, nil
	case every:
		counted, more, err := dg.CountLatest(w.filters)
		if err != nil {
			return readChoice{}, err
		}
		if !more || need <= directget.MaxMultiLastSubjects {
			consumer := more || float64(counted) >= need
			w.logChoice(st, f, counted, consumer)
			return readChoice{consumer: consumer, told: true}, nil
		}
	case !refused:
		return readChoice{}, nil // the first request tells first
	}
	// The share is more than 1,024 keys: count the filters' messages,
	// against the stream's.
	sample := directget.Sample(w.filters, messagesSample)
	var counted uint64
	for _, s := range sample {
		c, err := dg.CountMessages(s)
		if err != nil {
			return readChoice{}, err
		}
		counted += c
	}
	consumer := float64(counted)*float64(f)/float64(len(sample)) >= consumerShare*float64(st.Msgs)
	w.logChoice(st, len(sample), counted, consumer)
	return readChoice{consumer: consumer, told: true}, nil
}

func (w *Watcher) logChoice(st jetstream.StreamState, sample int, counted uint64, consumer bool) {
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: choosing how to read the state", slog.String("bucket", w.bucket),
		slog.Uint64("bucket_keys", st.NumSubjects), slog.Uint64("bucket_messages", st.Msgs), slog.Int("filters", len(w.filters)),
		slog.Int("sample", sample), slog.Uint64("counted", counted), slog.Bool("consumer", consumer))
}

// consumerPlan is the catch-up of a state the consumer delivers itself,
// the newest entry of every key, then what comes after: on the whole
// bucket when wide (see above), on the watcher's filters otherwise.
// target is the stream's last sequence before the consumer is created.
func (w *Watcher) consumerPlan(target uint64, wide bool) *catchUpPlan {
	plan := &catchUpPlan{lastPerSubject: true, target: target, pending: true, path: pathConsumer}
	if wide && len(w.filters) > 1 {
		plan.readFilter = w.subjectPrefix + ">"
	}
	return plan
}
