package kvwatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// snapshotResult says where the initial state read ended and how the tail
// must go on.
type snapshotResult struct {
	// upTo is S: the state read holds, per key, its newest entry at or
	// below revision S; the tail starts at S+1.
	upTo uint64
	// catchUp is L >= S. When the read took several requests, a key
	// overwritten after S but before its request was answered is missing
	// from it (history 1 drops the older entry); its newer entry is at or
	// below L, so the watcher is synced only once the tail has passed L.
	// catchUp == upTo when the read was one atomic request.
	catchUp uint64
	// viaConsumer is set when the stream cannot be read without a
	// consumer (no direct get): the consumer delivers the initial state
	// itself (last per subject).
	viaConsumer bool
	// path names the way the state was read, for logs and Stats.
	path string
}

// Names of the ways the initial state is read.
const (
	pathDirect        = "direct-get"
	pathDirectListing = "direct-get-listing"
	pathConsumer      = "consumer"
	pathResume        = "resume"
)

// snapshot reads the current entry of every key in the filters without a
// consumer and delivers each as an initial event.
//
// The first request carries every filter and no up_to_seq: the server
// answers it in isolation from writes, so when it fits in one answer the
// state is exact as of the revision the EOB reports. When more than 1,024
// subjects match, the subjects are listed first and read in chunks of
// explicit subjects, pinned at one revision.
func (w *Watcher) snapshot(ctx context.Context) (snapshotResult, error) {
	stream, err := w.js.Stream(ctx, w.stream)
	if err != nil {
		return snapshotResult{}, w.streamErr(err)
	}
	info := stream.CachedInfo()
	if !info.Config.AllowDirect {
		return snapshotResult{viaConsumer: true, path: pathConsumer}, nil
	}
	before := info.State.LastSeq
	dg := newDirectGetter(w.js, w.stream, w.cfg.requestTimeout)

	upTo, requests, err := w.readPages(ctx, dg, multiLastRequest{MultiLast: w.filters})
	switch {
	case errors.Is(err, errNoResults):
		// Nothing in scope now, so nothing at `before` either (a key
		// deleted since still has its delete marker, which would match).
		return snapshotResult{upTo: before, catchUp: before, path: pathDirect}, nil
	case errors.Is(err, errTooManyResults):
		return w.snapshotByListing(ctx, dg, stream)
	case errors.Is(err, errNoDirectGet):
		return snapshotResult{viaConsumer: true, path: pathConsumer}, nil
	case err != nil:
		return snapshotResult{}, err
	}
	res := snapshotResult{upTo: upTo, catchUp: upTo, path: pathDirect}
	if requests > 1 {
		if res.catchUp, err = w.lastSeq(ctx, stream); err != nil {
			return snapshotResult{}, err
		}
	}
	return res, nil
}

// readPages sends req, and again from where a byte limit cut the answer
// short, delivering every entry. It returns the revision the answers are
// as of and how many requests it took (one request is atomic).
func (w *Watcher) readPages(ctx context.Context, dg *directGetter, req multiLastRequest) (upTo uint64, requests int, err error) {
	for {
		end, err := dg.multiLast(ctx, req, w.deliverSnapshotMsg)
		requests++
		if errors.Is(err, errNoResults) && requests > 1 {
			return upTo, requests, nil // the rest vanished between pages
		}
		if err != nil {
			return upTo, requests, err
		}
		upTo = end.upTo
		if end.pending == 0 {
			return upTo, requests, nil
		}
		req.UpToSeq, req.Seq = end.upTo, end.lastSeq+1
	}
}

// snapshotByListing reads a state too large for one multi_last answer:
// list the matching subjects (stream info with a subject filter), then read
// them in chunks of explicit subjects, all pinned at the stream's last
// revision when listing began.
func (w *Watcher) snapshotByListing(ctx context.Context, dg *directGetter, stream jetstream.Stream) (snapshotResult, error) {
	upTo, err := w.lastSeq(ctx, stream)
	if err != nil {
		return snapshotResult{}, err
	}
	subjects := make(map[string]struct{})
	for _, f := range w.filters {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(f))
		if err != nil {
			return snapshotResult{}, fmt.Errorf("kvwatch: listing %s: %w", f, w.streamErr(err))
		}
		for s := range info.State.Subjects {
			subjects[s] = struct{}{}
		}
	}
	sorted := slices.Sorted(maps.Keys(subjects))
	w.cfg.logger.LogAttrs(ctx, slog.LevelDebug, "kvwatch: reading initial state by listing",
		slog.String("bucket", w.spec.Bucket), slog.Int("subjects", len(sorted)), slog.Uint64("up_to", upTo))
	for chunk := range slices.Chunk(sorted, maxMultiLastSubjects) {
		_, _, err := w.readPages(ctx, dg, multiLastRequest{MultiLast: chunk, UpToSeq: upTo})
		if err != nil && !errors.Is(err, errNoResults) {
			return snapshotResult{}, err
		}
	}
	catchUp, err := w.lastSeq(ctx, stream)
	if err != nil {
		return snapshotResult{}, err
	}
	return snapshotResult{upTo: upTo, catchUp: catchUp, path: pathDirectListing}, nil
}

// deliverSnapshotMsg delivers one entry of the initial state. Deletes and
// purges are the absence of a key: nothing to deliver.
func (w *Watcher) deliverSnapshotMsg(msg *nats.Msg) error {
	w.stats.pending.Store(headerUint(msg, "Nats-Num-Pending"))
	e, ok := w.directEntry(msg)
	if !ok || e.op != OpPut {
		return nil
	}
	e.initial = true
	w.deliver(&e)
	return nil
}

// lastSeq returns the stream's current last sequence.
func (w *Watcher) lastSeq(ctx context.Context, stream jetstream.Stream) (uint64, error) {
	info, err := stream.Info(ctx)
	if err != nil {
		return 0, w.streamErr(err)
	}
	return info.State.LastSeq, nil
}
