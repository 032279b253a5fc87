package kvwatchimpl

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/subjects"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is resume: a watcher hands out a checkpoint (its caches at one
// revision), the caller persists it, and a later watcher started from it
// catches up with only what changed, like an etcd watch from a revision or
// a Kubernetes informer's relist avoided.

// For generated code. Checkpoint is a watcher's state at one revision,
// untyped: generated code turns it into a typed checkpoint that encodes to
// JSON, and back (EntriesOf, WithEntries).
type Checkpoint = config.Checkpoint

// For generated code. EntriesOf returns the entries of kind in cp, a
// checkpoint taken by Watcher.Checkpoint: sorted by key, copies the caller
// owns. It returns nil when cp has no entries of kind.
func EntriesOf[K comparable, V any](cp Checkpoint, kind *Kind[K, V]) []kvwatch.Entry[K, V] {
	for i, name := range cp.KindNames {
		if name == kind.Name && i < len(cp.Kinds) {
			entries, _ := cp.Kinds[i].([]kvwatch.Entry[K, V])
			return entries
		}
	}
	return nil
}

// For generated code. WithEntries adds entries as those of kind to cp, the
// checkpoint a watcher is resumed from (Resume); the watcher takes
// ownership of their values.
func WithEntries[K comparable, V any](cp *Checkpoint, kind *Kind[K, V], entries []kvwatch.Entry[K, V]) {
	cp.Kinds = append(cp.Kinds, entries)
	cp.KindNames = append(cp.KindNames, kind.Name)
}

// Checkpoint returns the watcher's caches and revision, taken atomically
// (no event is half applied). It fails with ErrNotSynced before sync and
// while SetScopes brings scopes in. Taken between sync points, on a
// bucket keeping one revision a key, it may hold a key at an older entry
// than the bucket had at its revision (the consumer found that entry
// overwritten, and the newer one is on its way): a watcher resumed from
// it still ends exact, since that newer entry comes after the revision.
func (w *Watcher) Checkpoint() (Checkpoint, error) {
	if !w.isSynced() {
		return Checkpoint{}, kvwatch.ErrNotSynced
	}
	return w.checkpoint()
}

// checkpoint is Checkpoint whether or not the watcher is synced yet: at
// the first sync point, the test hook's (syncPoint) is taken before the
// watcher is marked synced.
func (w *Watcher) checkpoint() (Checkpoint, error) {
	cp := Checkpoint{Kinds: make([]any, len(w.bindings)), KindNames: make([]string, len(w.bindings))}
	w.state.mu.RLock()
	if w.state.rescoping {
		w.state.mu.RUnlock()
		return Checkpoint{}, kvwatch.ErrNotSynced
	}
	cp.Revision, cp.StreamCreated = w.state.revision, w.state.streamCreated
	cp.Filters = slices.Clone(w.currentFilters())
	for i, b := range w.bindings {
		cp.Kinds[i], cp.KindNames[i] = b.entriesLocked(), b.kindName()
	}
	w.state.mu.RUnlock()
	for i, b := range w.bindings {
		cp.Kinds[i] = b.cloneEntries(cp.Kinds[i])
	}
	return cp, nil
}

// Resume starts the watcher from a checkpoint instead of an empty state:
// its caches are filled with the checkpoint's entries (those inside the
// watcher's scopes; the watcher takes ownership of their values), and it
// delivers only what changed after the checkpoint's revision:
//
//   - "delta": when the stream proves that nothing after the revision is
//     lost (it is the stream the checkpoint was taken on; its first
//     sequence is at or below revision+1; its retention cannot have
//     expired a restored entry without a marker; the checkpoint's filters
//     cover the watcher's), the consumer starts at revision+1, and the
//     catch-up is sealed like an initial read (catchup.go);
//   - "relist": otherwise the state is read again; entries other than the
//     checkpoint's (another revision or another creation time: a bucket
//     made again repeats revisions, never times) are delivered as puts,
//     restored keys that no longer exist as deletes with
//     FinalStateUnknown set (their last value in Prev), unchanged ones not
//     at all.
//
// Stats().Resume says which path was taken. Events of either path are
// flagged Initial until the watcher is synced, and the caches are then
// exact (see Watcher.Checkpoint for checkpoints taken between sync
// points). One limit: a purge that
// removes messages above the stream's first sequence (kv.PurgeDeletes of
// recent delete markers, a stream purge by subject) leaves no trace a
// delta can see; keep PurgeDeletes' threshold above your checkpoints' age.
//
// To persist a watcher: take Watcher.Checkpoint (generated code: a typed
// checkpoint that encodes to JSON), store it, and pass it back here.
func Resume(cp Checkpoint) kvwatch.Option {
	return func(c *config.Watch) { c.Resume = &cp }
}

// restore fills the caches from the Resume option, if any.
func (w *Watcher) restore() error {
	r := w.cfg.Resume
	if r == nil {
		return nil
	}
	bindings, err := w.resumedBindings(r)
	if err != nil {
		return err
	}
	inScope := w.matchesScopes
	if len(w.filters) == 0 {
		inScope = func(string) bool { return false }
	}
	restored, oldest := 0, uint64(0)
	for i, entries := range r.Kinds {
		n, min, err := bindings[i].restore(entries, inScope, w.anchors.note)
		if err != nil {
			return err
		}
		if n > 0 && (restored == 0 || min < oldest) {
			oldest = min
		}
		restored += n
	}
	w.oldestRestored = oldest
	w.state.revision = r.Revision
	w.restored = restored
	// The entries are in the caches now; keep only what catching up reads,
	// not a second copy of the state for the watcher's lifetime. (A new
	// value: the Resume option shares r with any later use of it.)
	w.cfg.Resume = &Checkpoint{Revision: r.Revision, Filters: r.Filters, StreamCreated: r.StreamCreated}
	return nil
}

// resumedBindings returns the binding of each element of r.Kinds: the
// binding of the kind it is named for.
func (w *Watcher) resumedBindings(r *Checkpoint) ([]AnyBinding, error) {
	if len(r.KindNames) != len(r.Kinds) {
		return nil, fmt.Errorf("kvwatch: resume: checkpoint names %d kinds for %d lists of entries", len(r.KindNames), len(r.Kinds))
	}
	out := make([]AnyBinding, len(r.Kinds))
	for i, name := range r.KindNames {
		for _, b := range w.bindings {
			if b.kindName() == name {
				out[i] = b
			}
		}
		if out[i] == nil {
			return nil, fmt.Errorf("kvwatch: resume: checkpoint has entries of kind %s, which the watcher does not watch", name)
		}
	}
	return out, nil
}

// startPlan decides how the watcher reaches its synced state, and returns
// that catch-up: read the initial state, or, when resumed, the delta from
// the checkpoint or a re-list compared with it. Its done delivers what a
// re-list did not find as deletes, then marks the watcher synced.
func (w *Watcher) startPlan(ctx context.Context) (*catchUpPlan, error) {
	stream, err := w.readableStream(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := w.resumeOrRead(ctx, stream)
	if err != nil {
		return nil, err
	}
	plan.initial = true
	plan.done = func() {
		w.endRelist()
		w.otherStream = false // every restored entry was read again or deleted
		w.markSynced()
	}
	w.mu.Lock()
	w.statePath = plan.path
	w.mu.Unlock()
	return plan, nil
}

// resumeOrRead returns the catch-up of a resumed watcher (the delta, or a
// re-list) or of a fresh one (the read).
func (w *Watcher) resumeOrRead(ctx context.Context, stream jetstream.Stream) (*catchUpPlan, error) {
	r := w.cfg.Resume
	if r == nil {
		return w.readPlan(ctx, stream)
	}
	info := stream.CachedInfo()
	if w.rewound == "" { // once found, it stays found: a retry has no anchors left to tell
		why, err := w.resumedWentBack(ctx, r, info)
		if err != nil {
			return nil, err
		}
		w.rewound = why
	}
	why := w.rewound
	if why == "" {
		why = w.deltaUnprovable(r, info)
	}
	if why != "" {
		w.setResumePath("relist", why)
		w.otherStream = (!r.StreamCreated.IsZero() && !r.StreamCreated.Equal(info.Created)) || r.Revision > info.State.LastSeq || w.otherStream
		if w.otherStream {
			// The restored entries tell nothing of this stream; those the
			// re-list reads do.
			w.state.mu.Lock()
			w.anchors = anchors{}
			w.state.mu.Unlock()
		}
		for _, b := range w.bindings {
			b.beginRelist(nil)
		}
		return w.readPlan(ctx, stream)
	}
	w.setResumePath("delta", "")
	w.seenFrom = r.Revision
	for _, b := range w.bindings {
		b.cancelRelist() // marks of a failed earlier attempt: the delta confirms the rest
	}
	w.setStreamCreated(info.Created)
	w.learnDirectGet(info)
	w.setRevision(r.Revision)
	return &catchUpPlan{from: r.Revision, target: info.State.LastSeq, pending: true, path: pathResume}, nil
}

// resumedWentBack checks, on the stream the checkpoint was taken on (same
// creation time), that it still holds what the checkpoint holds (rewind.go);
// when not, it reports the loss and returns why the watcher re-lists: the
// restored entries' revisions then say nothing of the stream's
// (otherStream).
func (w *Watcher) resumedWentBack(ctx context.Context, r *Checkpoint, info *jetstream.StreamInfo) (string, error) {
	if !r.StreamCreated.IsZero() && !r.StreamCreated.Equal(info.Created) {
		return "", nil // another stream altogether: deltaUnprovable says so
	}
	w.learnDirectGet(info)
	w.state.mu.RLock()
	as := w.anchors.newestFirst()
	w.state.mu.RUnlock()
	// A checkpoint holds current entries, not the deletes before its
	// revision: the entries in scope after its newest tell nothing.
	wb, err := w.wentBack(ctx, info, r.Revision, as, false)
	if err != nil || wb == nil {
		return "", err
	}
	wb.Resumed = true
	w.reportWentBack(wb)
	w.otherStream = true
	w.state.mu.Lock()
	// Nothing of the old stream to check the new one against (as
	// relistAfterRewind): the re-list sets the revision and the anchors.
	w.anchors, w.state.revision = anchors{}, 0
	w.state.mu.Unlock()
	return "the stream went back since the checkpoint: " + wb.Error(), nil
}

// deltaUnprovable returns why the changes after the checkpoint cannot be
// proven complete from the stream, or "" when they can.
func (w *Watcher) deltaUnprovable(r *Checkpoint, info *jetstream.StreamInfo) string {
	st := info.State
	switch {
	case !r.StreamCreated.IsZero() && !r.StreamCreated.Equal(info.Created):
		return "the bucket's stream was created again since the checkpoint"
	case r.Revision > st.LastSeq:
		return fmt.Sprintf("the checkpoint's revision %d is past the stream's last sequence %d (was the bucket recreated?)", r.Revision, st.LastSeq)
	case st.FirstSeq > r.Revision+1:
		return fmt.Sprintf("the stream's first sequence %d is past the checkpoint's revision %d: retention or purges may have removed changes", st.FirstSeq, r.Revision)
	case removesSilently(info.Config) && w.restored > 0 && st.FirstSeq > w.oldestRestored:
		return fmt.Sprintf("the stream's retention removes entries without a marker and its first sequence %d is past the oldest restored entry (%d): restored entries may have expired", st.FirstSeq, w.oldestRestored)
	case st.Msgs == 0 && w.restored > 0:
		return "the stream is empty (purged?) but the checkpoint is not"
	case !filtersCover(r.Filters, w.filters):
		return "the watcher's scopes are not covered by the checkpoint's"
	}
	return ""
}

// removesSilently reports whether the stream's retention can remove a
// key's current entry without writing a marker a watcher would see: max
// age or per-message TTL without subject delete markers (KV's
// LimitMarkerTTL), or message/byte limits that discard old messages.
func removesSilently(cfg jetstream.StreamConfig) bool {
	noMarkers := cfg.SubjectDeleteMarkerTTL == 0
	return (cfg.MaxAge > 0 && noMarkers) || (cfg.AllowMsgTTL && noMarkers) ||
		(cfg.Discard == jetstream.DiscardOld && (cfg.MaxMsgs > 0 || cfg.MaxBytes > 0))
}

// filtersCover reports whether every filter of want is matched by have:
// equal to one, or subsumed by a "p.>" or a wildcard filter of have.
func filtersCover(have, want []string) bool {
	m := subjects.NewMatcher(have)
	for _, f := range want {
		if !m.Matches(f) {
			return false
		}
	}
	return true
}

func (w *Watcher) setResumePath(path, why string) {
	w.mu.Lock()
	w.resumePath = path
	w.mu.Unlock()
	attrs := []slog.Attr{slog.String("bucket", w.bucket), slog.String("path", path)}
	if why != "" {
		attrs = append(attrs, slog.String("why", why))
	}
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelInfo, "kvwatch: resuming from checkpoint", attrs...)
}
