package kvwatchimpl

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/checkpointfile"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is durable checkpoints: WithCheckpointFile starts a watcher
// from a checkpoint file when the file can be trusted, and keeps the file
// up to date, written atomically, from a goroutine of its own: when to
// save, the saver goroutine, the statistics. What the file holds of each
// kind is checkpointfilekinds.go; the format, its checks and the atomic
// write are runtime/internal/checkpointfile.

// savePoll is how often the saver checks whether a save is due.
const savePoll = 250 * time.Millisecond

// CheckpointFileStats returns what the watcher's checkpoint file did:
// loaded or not, saves and failures. It is safe from any goroutine.
func (w *Watcher) CheckpointFileStats() kvwatch.CheckpointFileStats {
	f := w.ckptFile
	if f == nil {
		return kvwatch.CheckpointFileStats{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// checkpointFile is a watcher's checkpoint file: its options, what the
// file on disk holds, and the statistics.
type checkpointFile struct {
	cfg config.CheckpointFile // its path and when to save
	// loadErr is set by Start and reported by the event goroutine.
	loadErr error
	// onDisk is the head of the checkpoint the file holds (set by Start,
	// then by the saver goroutine only).
	onDisk checkpointHead

	mu    sync.Mutex
	stats kvwatch.CheckpointFileStats
}

// checkpointHead is what tells checkpoints of one watcher apart without
// their entries: a checkpoint with the same head holds the same state.
type checkpointHead struct {
	revision uint64
	created  time.Time
	filters  []string
	valid    bool
}

func (h checkpointHead) same(o checkpointHead) bool {
	return h.valid && o.valid && h.revision == o.revision && h.created.Equal(o.created) && slices.Equal(h.filters, o.filters)
}

// head returns the head of the checkpoint the watcher would take now.
func (w *Watcher) head() checkpointHead {
	w.state.mu.RLock()
	h := checkpointHead{revision: w.state.revision, created: w.state.streamCreated, valid: true}
	w.state.mu.RUnlock()
	h.filters = w.currentFilters()
	return h
}

// changeCount is the number of changes applied to the caches so far.
func (w *Watcher) changeCount() uint64 {
	n := w.stats.unknownKeys.Load()
	for _, b := range w.bindings {
		c := b.counters()
		n += c.puts.Load() + c.deletes.Load() + c.purges.Load() + c.dataErrors.Load()
	}
	return n
}

// loadCheckpointFile reads the checkpoint file, at Start before the caches
// are restored: a valid file becomes the checkpoint to resume from.
func (w *Watcher) loadCheckpointFile() {
	f := w.ckptFile
	if f == nil {
		return
	}
	log := w.cfg.Logger
	ctx := context.Background()
	for _, p := range checkpointfile.RemoveTemps(f.cfg.Path) {
		log.LogAttrs(ctx, slog.LevelInfo, "kvwatch: removed a checkpoint file's leftover temporary file", slog.String("path", p))
	}
	if w.cfg.Resume != nil {
		log.LogAttrs(ctx, slog.LevelInfo, "kvwatch: Resume given: the checkpoint file is not read, only saved",
			slog.String("bucket", w.bucket), slog.String("path", f.cfg.Path))
		return
	}
	cp, err := w.readCheckpointFile(f.cfg.Path)
	switch {
	case err != nil:
		f.loadErr = &kvwatch.CheckpointFileError{Path: f.cfg.Path, Op: "load", Err: err}
		log.LogAttrs(ctx, slog.LevelWarn, "kvwatch: checkpoint file ignored: reading the whole state",
			slog.String("bucket", w.bucket), slog.String("path", f.cfg.Path), slog.Any("error", err))
	case cp == nil:
		log.LogAttrs(ctx, slog.LevelInfo, "kvwatch: no checkpoint file yet: reading the whole state",
			slog.String("bucket", w.bucket), slog.String("path", f.cfg.Path))
	default:
		w.cfg.Resume = cp
		f.onDisk = checkpointHead{revision: cp.Revision, created: cp.StreamCreated, filters: cp.Filters, valid: true}
		log.LogAttrs(ctx, slog.LevelInfo, "kvwatch: checkpoint file loaded",
			slog.String("bucket", w.bucket), slog.String("path", f.cfg.Path), slog.Uint64("revision", cp.Revision))
	}
	f.mu.Lock()
	f.stats.Loaded, f.stats.LoadError = cp != nil && err == nil, f.loadErr
	f.mu.Unlock()
}

// reportCheckpointFile passes the checkpoint file's load error to OnError;
// the event goroutine calls it before anything else.
func (w *Watcher) reportCheckpointFile() {
	if f := w.ckptFile; f != nil && f.loadErr != nil {
		w.notify(f.loadErr)
	}
}

// startCheckpointSaver starts the saver goroutine, once w.ctx is set.
func (w *Watcher) startCheckpointSaver() {
	if f := w.ckptFile; f != nil {
		w.bg.Go(func() { f.saveLoop(w) })
	}
}

// saveResult is the outcome of one save.
type saveResult struct {
	head     checkpointHead
	size     int64
	duration time.Duration
	err      error
}

// saveLoop is the saver goroutine: it waits for the watcher to be synced,
// then saves when a save is due, and once more when the watch ends.
func (f *checkpointFile) saveLoop(w *Watcher) {
	select {
	case <-w.synced:
	case <-w.ctx.Done():
		return // never synced: the file stays as it was
	}
	poll := savePoll
	if f.cfg.Interval > 0 {
		poll = min(poll, max(f.cfg.Interval, 10*time.Millisecond))
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var (
		running   chan saveResult // non-nil while a save runs
		attempted bool            // a save was tried since the watcher was synced
		since     time.Time       // when the last save was tried
		base      uint64          // changeCount when it was
	)
	for {
		if running == nil && w.ctx.Err() == nil && !f.onDisk.same(w.head()) {
			changes := w.changeCount()
			due := !attempted ||
				(f.cfg.Every > 0 && changes-base >= uint64(f.cfg.Every)) ||
				(f.cfg.Interval > 0 && time.Since(since) >= f.cfg.Interval)
			if due {
				if running = f.begin(w); running != nil {
					attempted, since, base = true, time.Now(), changes
				}
			}
		}
		select {
		case <-w.ctx.Done():
			f.last(w, running)
			return
		case r := <-running:
			running = nil
			f.finish(w, r)
		case <-tick.C:
		}
	}
}

// last makes the final save, when the watch ends: after the save in
// progress, if any, and only if the file does not hold the state yet, all
// within the save timeout.
func (f *checkpointFile) last(w *Watcher, running chan saveResult) {
	timer := time.NewTimer(f.cfg.Timeout)
	defer timer.Stop()
	if running != nil {
		select {
		case r := <-running:
			f.finish(w, r)
			if r.err != nil {
				return // the disk fails: no second try at Stop
			}
		case <-timer.C:
			f.abandon(w)
			return
		}
	}
	if f.onDisk.same(w.head()) {
		return
	}
	if running = f.begin(w); running == nil {
		return // SetScopes in progress: the file stays as it was
	}
	select {
	case r := <-running:
		f.finish(w, r)
	case <-timer.C:
		f.abandon(w)
	}
}

// begin takes the watcher's checkpoint and writes it on a new goroutine,
// whose result arrives on the channel returned; nil when the watcher has
// no checkpoint to take now (SetScopes in progress).
func (f *checkpointFile) begin(w *Watcher) chan saveResult {
	cp, err := w.Checkpoint()
	if err != nil {
		return nil
	}
	done := make(chan saveResult, 1) // never blocks: an abandoned save ends alone
	go func() {
		start := time.Now()
		size, err := checkpointfile.WriteFile(f.cfg.Path, f.cfg.Fault, func(out io.Writer) error { return w.encodeCheckpointFile(out, cp) })
		done <- saveResult{head: checkpointHead{revision: cp.Revision, created: cp.StreamCreated, filters: cp.Filters, valid: true},
			size: size, duration: time.Since(start), err: err}
	}()
	return done
}

// finish records a save's result.
func (f *checkpointFile) finish(w *Watcher, r saveResult) {
	log := w.cfg.Logger
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.err != nil {
		err := &kvwatch.CheckpointFileError{Path: f.cfg.Path, Op: "save", Err: r.err}
		f.stats.Failures++
		f.stats.LastError = err
		log.LogAttrs(context.Background(), slog.LevelWarn, "kvwatch: checkpoint file not saved: the previous one stays",
			slog.String("bucket", w.bucket), slog.String("path", f.cfg.Path), slog.Any("error", r.err))
		return
	}
	f.onDisk = r.head
	f.stats.Saves++
	f.stats.LastSave, f.stats.LastRevision, f.stats.LastSize, f.stats.LastDuration = time.Now(), r.head.revision, r.size, r.duration
	f.stats.LastError = nil
	log.LogAttrs(context.Background(), slog.LevelDebug, "kvwatch: checkpoint file saved",
		slog.String("bucket", w.bucket), slog.String("path", f.cfg.Path), slog.Uint64("revision", r.head.revision),
		slog.Int64("bytes", r.size), slog.Duration("took", r.duration))
}

// abandon logs a last save that did not end within the save timeout.
func (f *checkpointFile) abandon(w *Watcher) {
	w.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn,
		"kvwatch: checkpoint file: the last save did not end within the save timeout: left running in the background",
		slog.String("bucket", w.bucket), slog.String("path", f.cfg.Path), slog.Duration("timeout", f.cfg.Timeout))
}
