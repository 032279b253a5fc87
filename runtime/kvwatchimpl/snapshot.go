package kvwatchimpl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// readResult is what a read without a consumer found: the state of its
// filters as of the revisions its answers were, and how it was read.
type readResult struct {
	// oldest and newest are the revisions the answers were as of: equal
	// when the read was one atomic answer (or a continuation pinned at
	// it).
	oldest, newest uint64
	// marks says, for a read in several requests, which filters were read
	// as of which revision; empty when everything was read as of oldest.
	marks readMarks
	// atomic is set when the read was one answer, computed in isolation
	// from writes: exact as of oldest.
	atomic bool
	// path names the way the state was read, for Stats.
	path string
	// declined is set when the state was not read: the consumer is to
	// deliver it (readpath.go).
	declined bool
}

// Names of the ways the initial state is read (Stats.InitialState).
const (
	pathDirect        = "direct-get"
	pathDirectListing = "direct-get-listing"
	pathConsumer      = "consumer"
	pathResume        = "resume"
)

// readPlan reads the current entry of every key in the watcher's filters
// and returns the catch-up that brings the watcher from it to an exact
// state (see catchup.go):
//
//   - by batched direct get, without a consumer (readState), whenever the
//     stream allows it and the state fits one answer, or the watcher's
//     scopes hold too small a share of the bucket's keys (readpath.go):
//     the tail starts after the oldest answer and skips what the read
//     delivered; a read of one atomic answer has nothing to catch up.
//     Once a bucket has been overwritten, a multi-filter consumer's own
//     initial delivery slows down by orders of magnitude (BENCHMARKS.md,
//     Design decisions: "snapshot.go: direct get for the state");
//   - otherwise by the consumer's own last-per-subject delivery, sealed
//     once it has passed the stream's last sequence as it was before: on
//     the whole bucket when chosen (readpath.go), on the watcher's filters
//     when the stream does not allow direct get.
func (w *Watcher) readPlan(ctx context.Context, stream jetstream.Stream) (*catchUpPlan, error) {
	info := stream.CachedInfo()
	w.learnSchema(info)
	w.setStreamCreated(info.Created)
	w.seenFrom = 0 // a read of the whole state sees every key's newest entry
	last := info.State.LastSeq
	w.learnDirectGet(info)
	if !w.directGet {
		return w.consumerPlan(last, false), nil
	}
	res, err := w.readState(ctx, stream, w.filters, last, &info.State)
	if errors.Is(err, directget.ErrNoDirectGet) {
		w.noDirectGet()
		return w.consumerPlan(last, false), nil
	}
	if err != nil {
		return nil, err
	}
	if res.declined {
		return w.consumerPlan(last, true), nil
	}
	w.setRevision(res.oldest)
	return &catchUpPlan{from: res.oldest, skip: res.marks.window(w, nil, 0), target: res.newest, exact: res.atomic, pending: true, path: res.path}, nil
}

// readableStream returns the watcher's stream with its info: the first
// time, as Start fetched it a moment before (a fleet restarting thousands
// of watchers spares the server a request each); after that, asked again
// (a retried read needs the stream's state as it is).
func (w *Watcher) readableStream(ctx context.Context) (jetstream.Stream, error) {
	if stream := w.startStream; stream != nil {
		w.startStream = nil
		return stream, nil
	}
	stream, err := w.js.Stream(ctx, w.stream)
	if err != nil {
		return nil, w.streamErr(err)
	}
	return stream, nil
}

// readState reads the newest entry of every key matching filters, without
// a consumer (directget.LatestRead, not pinned), and delivers the puts as
// initial events. The first request asks for everything: the server
// answers it in isolation from writes, so when it fits in one answer the
// state is exact as of the revision its EOB reports (an answer cut short
// by the byte limit is continued pinned at that revision). With more than
// 1,024 keys, the filters are read in several requests, each answered as
// of its own revision (see readPlan); the result's oldest and newest bound
// them, and its marks say which filters were read as of which. A filter
// listed for having more than 1,024 keys is read as of before, the
// stream's last sequence when the read began. Each answer is applied
// whole, and only if the connection has not reconnected since the stream
// was checked (answer): otherwise the read fails with errUnchecked,
// applying none of it. Given the stream's state (choose), the watcher's
// state may be left to the consumer (readpath.go): the result is then
// declined, and nothing was read.
func (w *Watcher) readState(ctx context.Context, stream jetstream.Stream, filters []string, before uint64, choose *jetstream.StreamState) (readResult, error) {
	dg := directget.New(w.js, w.directStream, w.cfg.RequestTimeout)
	if err := dg.Open(ctx); err != nil {
		return readResult{}, err
	}
	defer dg.Close()
	res := readResult{path: pathDirect}
	read := directget.LatestRead{
		Getter: dg, Stream: stream, Filters: filters, UpTo: before,
		Apply: func(entries []*nats.Msg) error {
			return (&answer{msgs: entries}).apply(w, w.deliverSnapshotMsg)
		},
		BeforeSend: w.waitForRoom, // backpressure, before asking for more (listener.go)
		Listed: func(filter string, subjects int) {
			res.path = pathDirectListing
			w.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "kvwatch: more than 1,024 keys under a filter: listing them",
				slog.String("filter", filter), slog.Int("subjects", subjects))
		},
	}
	if choose != nil {
		c, err := w.chooseReader(dg, *choose, false)
		switch {
		case err != nil:
			return readResult{}, err
		case c.consumer:
			return readResult{declined: true}, nil
		case !c.told:
			read.TooLarge = func() (bool, error) {
				c, err := w.chooseReader(dg, *choose, true)
				return !c.consumer, err
			}
		}
	}
	got, err := read.Read(ctx)
	var listing *directget.ListingError
	switch {
	case errors.As(err, &listing):
		return readResult{}, fmt.Errorf("kvwatch: listing %s: %w", listing.Filter, w.streamErr(listing.Err))
	case err != nil:
		return readResult{}, err
	case got.Declined:
		return readResult{declined: true}, nil
	case got.Atomic:
		res.oldest, res.newest, res.atomic = got.UpTo, got.UpTo, true
		return res, nil
	}
	res.marks = readMarks{byRevision: got.Marks}
	res.oldest, res.newest = before, before
	if oldest, ok := res.marks.oldest(); ok {
		res.oldest, res.newest = oldest, res.marks.newest()
	}
	return res, nil
}

// deliverSnapshotMsg delivers one entry of the initial state. Deletes and
// purges are the absence of a key: nothing to deliver.
func (w *Watcher) deliverSnapshotMsg(msg *nats.Msg) {
	w.stats.received.Add(1)
	w.stats.pending.Store(directget.HeaderUint(msg, "Nats-Num-Pending"))
	e, ok := w.directEntry(msg)
	switch {
	case !ok:
	case e.op != kvwatch.OpPut:
		// Nothing to deliver, but an entry seen: an anchor (rewind.go).
		w.state.mu.Lock()
		w.noteApplied(&e)
		w.state.mu.Unlock()
	default:
		e.initial = true
		w.deliver(e)
	}
}
