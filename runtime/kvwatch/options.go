package kvwatch

import (
	"log/slog"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
)

// Option configures a watcher.
type Option func(*config.Watch)

// WithLogger sets the structured logger. The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *config.Watch) {
		if l != nil {
			c.Logger = l
		}
	}
}

// WithHeartbeat sets the idle heartbeat of the consumer (default 1s): a
// watcher notices a lost consumer after two missed heartbeats. nats.go
// requires it under half of a pull's 30 s expiry: longer values are taken
// as 15 s.
func WithHeartbeat(d time.Duration) Option {
	return func(c *config.Watch) {
		if d > 0 {
			c.Heartbeat = min(d, maxHeartbeat)
		}
	}
}

// maxHeartbeat is the longest heartbeat nats.go accepts with the default
// pull expiry of 30 s.
const maxHeartbeat = 15 * time.Second

// WithInactiveThreshold sets how long the server keeps the watcher's
// consumer after the client stopped pulling (default 30s): the bound on how
// long a crashed node's consumer lingers on the stream leader.
func WithInactiveThreshold(d time.Duration) Option {
	return func(c *config.Watch) {
		if d > 0 {
			c.InactiveThreshold = d
		}
	}
}

// WithRequestTimeout bounds each request of a read without a consumer
// (the initial state, SetScopes, a seal, reading while no consumer can be
// created) and each wait for its next reply, and each stream info request
// (default 5s). Consumer creation requests have their own, shorter bound
// (docs/operations.md, Faults and limits).
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config.Watch) {
		if d > 0 {
			c.RequestTimeout = d
		}
	}
}

// WithMaxFilters sets how many subject filters the watcher's one consumer
// may have (default 10,000); more is ErrTooManyFilters. Each scope value
// makes one or two filters.
func WithMaxFilters(n int) Option {
	return func(c *config.Watch) {
		if n > 0 {
			c.MaxFilters = n
		}
	}
}

// WithBucket watches the bucket named name instead of the schema's: the
// schema fixes keys and types, not the environment, so one watcher type
// serves "network-staging" and "network-edge" alike. The bucket may be a
// mirror of a bucket named otherwise (an edge's): its messages keep the
// origin's subjects, which the watcher then reads, as nats.go's KV does.
// Write through a handle of the same bucket (js.KeyValue(ctx, name)).
func WithBucket(name string) Option {
	return func(c *config.Watch) { c.Bucket = name }
}

// WithMirrorStaleAfter sets when a mirror counts as stale (default 10 s):
// when it has not heard from its origin for longer (Stats.Mirror). A
// watcher of a mirror checks it every half of that, at most every 5 s
// (one stream info request to its server), and logs a warning when it
// goes stale and an INFO record when it recovers. Healthy, a mirror hears from its origin
// every few milliseconds. A negative d turns the checks off.
func WithMirrorStaleAfter(d time.Duration) Option {
	return func(c *config.Watch) {
		if d != 0 {
			c.MirrorStaleAfter = d
		}
	}
}

const (
	// Saving costs O(cache) (every entry encoded and written), resuming
	// from an older file costs only the changes after it (at most one
	// message per changed key): 10,000 changes or 30 s keeps a restart's
	// delta small without rewriting a large cache for every few changes.
	defaultSaveEvery    = 10_000
	defaultSaveInterval = 30 * time.Second
	// defaultSaveTimeout bounds how long Stop waits for the last save.
	defaultSaveTimeout = 10 * time.Second
)

// CheckpointFileOption configures WithCheckpointFile.
type CheckpointFileOption func(*config.CheckpointFile)

// SaveEvery makes the watcher save its checkpoint file once n changes
// (events applied to the caches, initial ones included) happened since the
// last save (default 10,000). The count is checked four times a second, so
// a save starts within 250 ms of the n-th change, or after the save in
// progress. n <= 0 turns the count off: saves then follow SaveInterval
// only.
func SaveEvery(n int) CheckpointFileOption {
	return func(c *config.CheckpointFile) { c.Every = n }
}

// SaveInterval makes the watcher save its checkpoint file when d passed
// since the last save and anything changed since (default 30 s). d <= 0
// turns the timer off: saves then follow SaveEvery only.
func SaveInterval(d time.Duration) CheckpointFileOption {
	return func(c *config.CheckpointFile) { c.Interval = d }
}

// SaveTimeout bounds how long Stop (and a watch ending otherwise) waits
// for the last save (default 10 s): a save still running then goes on in
// the background, and Stop returns. d <= 0 keeps the default.
func SaveTimeout(d time.Duration) CheckpointFileOption {
	return func(c *config.CheckpointFile) {
		if d > 0 {
			c.Timeout = d
		}
	}
}

// WithCheckpointFile makes the watcher durable: it starts from the
// checkpoint in the file at path, and keeps that file up to date.
//
// When the watch starts the file is read in full and checked: its format
// version, its trailer and checksum, its bucket (the one watched and the
// schema's), and its kinds (names, key templates, codecs and the shape of
// their value types must be the watcher's). A valid file is resumed from as
// the generated checkpoint's Resume option does, and its checks still apply
// (Stats().Resume is "delta" or "relist"). A file that is corrupt, cut
// short, foreign (another bucket, another schema's kinds, another format
// version) or unreadable is never trusted: it is logged at warn, passed to
// OnError as a *CheckpointFileError (to OnError, before any event), and
// ignored: the watcher reads the whole state. A missing file is no error
// (the first start). When a checkpoint's Resume option is also given, its
// checkpoint is used and the file is not read, only written. Temporary
// files a crash left next to path are removed when the watch starts.
//
// The file is saved once the watcher is synced, then whenever SaveEvery's
// count of changes or SaveInterval's time is reached, whichever first,
// and when the watch ends (Stop, the context, a terminal error): never
// before the watcher is synced, never while SetScopes brings scopes in,
// never when the file already holds the watcher's revision, filters and
// stream. A save takes the watcher's checkpoint on its saver goroutine
// (the event goroutine waits only while the entries are listed under the
// read lock), then encodes and writes on another goroutine: one save at a
// time, a save falling due while one runs waits for it. A save holds a
// copy of the entries until it is written.
//
// Each save is atomic: it writes a temporary file in path's directory,
// fsyncs it, renames it over path and fsyncs the directory, so path always
// holds one whole checkpoint, the previous one when a save fails. The
// directory must exist; the file is created with mode 0600. A failed save
// is logged at warn and shown by CheckpointFileStats; the watch goes on,
// and the next save is due after SaveEvery or SaveInterval again.
//
// Stop waits for the last save up to SaveTimeout (10 s by default); a
// save still running after that is left to finish in the background (a
// disk that never answers keeps its goroutine). One watcher per path: two
// watchers saving to one path each leave a whole checkpoint, but either
// one.
func WithCheckpointFile(path string, opts ...CheckpointFileOption) Option {
	return func(c *config.Watch) {
		f := &config.CheckpointFile{Path: path, Every: defaultSaveEvery, Interval: defaultSaveInterval, Timeout: defaultSaveTimeout}
		for _, o := range opts {
			if o != nil {
				o(f)
			}
		}
		c.CheckpointFile = f
	}
}
