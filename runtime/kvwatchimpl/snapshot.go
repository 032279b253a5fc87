package kvwatchimpl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/directget"
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
//     stream allows it: the tail starts after the oldest answer and skips
//     what the read delivered; a read of one atomic answer has nothing to
//     catch up. Once a bucket has been overwritten, a consumer's own
//     initial delivery slows down by orders of magnitude. On a fresh
//     bucket the consumer's delivery is cheaper for the server, but it is
//     a catch-up over the whole state, sealed from wherever the watcher's
//     scopes end: up to the whole bucket for a node watching a few
//     tenants, on every node of a fleet at once (BENCHMARKS.md, Design
//     decisions: "snapshot.go: direct get for the state"; the withdrawn
//     consumer path: docs/design.md);
//   - otherwise by the consumer's own last-per-subject delivery, sealed
//     once it has passed the stream's last sequence as it was before.
func (w *Watcher) readPlan(ctx context.Context, stream jetstream.Stream) (*catchUpPlan, error) {
	info := stream.CachedInfo()
	w.setStreamCreated(info.Created)
	w.seenFrom = 0 // a read of the whole state sees every key's newest entry
	last := info.State.LastSeq
	byConsumer := &catchUpPlan{lastPerSubject: true, target: last, pending: true, path: pathConsumer}
	w.learnDirectGet(info)
	if !w.directGet {
		return byConsumer, nil
	}
	res, err := w.readState(ctx, stream, w.filters, last)
	if errors.Is(err, directget.ErrNoDirectGet) {
		w.noDirectGet()
		return byConsumer, nil
	}
	if err != nil {
		return nil, err
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
// a consumer, and delivers the puts as initial events. The first request
// asks for everything: the server answers it in isolation from writes, so
// when it fits in one answer the state is exact as of the revision its
// EOB reports (an answer cut short by the byte limit is continued pinned
// at that revision). With more than 1,024 keys, the filters are read in
// several requests, each answered as of its own revision (see readPlan);
// the result's oldest and newest bound them, and its marks say which
// filters were read as of which. A filter listed for having more than
// 1,024 keys is read as of before, the stream's last sequence when the
// read began.
func (w *Watcher) readState(ctx context.Context, stream jetstream.Stream, filters []string, before uint64) (readResult, error) {
	dg := directget.New(w.js, w.directStream, w.cfg.RequestTimeout)
	if err := dg.Open(ctx); err != nil {
		return readResult{}, err
	}
	defer dg.Close()
	first := directget.Request{MultiLast: filters}
	var a answer
	end, err := dg.Read(first, a.add)
	if err == nil {
		err = a.apply(w, w.deliverSnapshotMsg)
	}
	res := readResult{path: pathDirect}
	plan := directget.NewPlan(nil, before)
	switch {
	case err == nil && end.Pending == 0:
		res.oldest, res.newest, res.atomic = end.UpTo, end.UpTo, true
		return res, nil
	case errors.Is(err, directget.ErrNoResults):
		// Nothing in scope now, so nothing at `before` either (a key
		// deleted since still has its delete marker, which matches).
		res.oldest, res.newest, res.atomic = before, before, true
		return res, nil
	case errors.Is(err, directget.ErrTooManyResults) && len(filters) == 1:
		res.path = pathDirectListing
		if err := w.planListing(ctx, plan, &res.marks, stream, filters[0]); err != nil {
			return readResult{}, err
		}
	case errors.Is(err, directget.ErrTooManyResults):
		plan.Request(filters)
	case err != nil:
		return readResult{}, err
	default:
		// The byte limit cut the answer short: continue it from where it
		// stopped, pinned at the revision it reported.
		res.marks.mark(filters, end.UpTo)
		plan.Resume(first, end)
	}
	if err := w.readRequests(ctx, dg, stream, plan, &res, &a); err != nil {
		return readResult{}, err
	}
	res.oldest, res.newest = before, before
	if oldest, ok := res.marks.oldest(); ok {
		res.oldest, res.newest = oldest, res.marks.newest()
	}
	return res, nil
}

// readRequests sends the requests of plan, pipelined (each answer applied
// whole, through a), and tells the plan how each was answered: a request matching more than 1,024 keys is cut
// again, and a single filter matching more is replaced by requests for
// the keys it lists, in chunks of explicit subjects; an answer cut short
// by the byte limit is continued from its last sequence. It records in
// res the revision each answer is as of, and the listing path.
func (w *Watcher) readRequests(ctx context.Context, dg *directget.Getter, stream jetstream.Stream, plan *directget.Plan, res *readResult, a *answer) error {
	var inflight []*directget.Pending
	for {
		w.waitForRoom() // backpressure, before asking for more (listener.go)
		for len(inflight) < directget.Window {
			req, ok := plan.Next()
			if !ok {
				break
			}
			p, err := dg.Send(req)
			if err != nil {
				return err
			}
			inflight = append(inflight, p)
		}
		if len(inflight) == 0 {
			return nil
		}
		p := inflight[0]
		inflight = inflight[1:]
		end, err := dg.Receive(p, a.add)
		if err == nil {
			err = a.apply(w, w.deliverSnapshotMsg)
		}
		switch {
		case errors.Is(err, directget.ErrNoResults):
			if p.Req.UpToSeq == 0 {
				// No key matched as of the answer, which says no revision:
				// mark the filters read as of before (nothing matched then
				// either). Left unmarked, a key created after this answer
				// but before the oldest marked one would be neither read
				// nor tailed.
				res.marks.mark(p.Req.MultiLast, plan.UpTo())
			}
			plan.Answered(p.Req, 0)
		case errors.Is(err, directget.ErrTooManyResults):
			if !plan.Refused(p.Req) {
				if err := w.planListing(ctx, plan, &res.marks, stream, p.Req.MultiLast[0]); err != nil {
					return err
				}
				res.path = pathDirectListing
			}
		case err != nil:
			return err
		default:
			if p.Req.UpToSeq == 0 {
				// Pinned requests (continuations, listed keys) were marked
				// with the request or the filter they continue.
				res.marks.mark(p.Req.MultiLast, end.UpTo)
			}
			plan.Answered(p.Req, end.Received+int(end.Pending))
			if end.Pending > 0 {
				plan.Resume(p.Req, end)
			}
		}
	}
}

// planListing adds to plan the requests for the keys under filter, listed
// and read as of plan.UpTo(), and marks the filter read as of it.
func (w *Watcher) planListing(ctx context.Context, plan *directget.Plan, marks *readMarks, stream jetstream.Stream, filter string) error {
	chunks, err := w.listSubjects(ctx, stream, filter, plan.UpTo())
	if err != nil {
		return err
	}
	marks.mark([]string{filter}, plan.UpTo())
	plan.Add(chunks...)
	return nil
}

// listSubjects lists the subjects matching filter (stream info with a
// subject filter) and returns requests for them in chunks of at most
// 1,024 explicit subjects, pinned at upTo.
func (w *Watcher) listSubjects(ctx context.Context, stream jetstream.Stream, filter string, upTo uint64) ([]directget.Request, error) {
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("kvwatch: listing %s: %w", filter, w.streamErr(err))
	}
	subjects := slices.Sorted(maps.Keys(info.State.Subjects))
	w.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "kvwatch: more than 1,024 keys under a filter: listing them",
		slog.String("filter", filter), slog.Int("subjects", len(subjects)))
	var reqs []directget.Request
	for chunk := range slices.Chunk(subjects, directget.MaxMultiLastSubjects) {
		reqs = append(reqs, directget.Request{MultiLast: chunk, UpToSeq: upTo})
	}
	return reqs, nil
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
