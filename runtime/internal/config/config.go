// Package config holds the values that cross from the runtime's
// user-facing packages (kvwatch, kvclient) to its engine (kvwatchimpl):
// the settings options record, the scopes a watcher is given and the state
// it resumes from. It has no behaviour: the user-facing packages fill it,
// the engine reads it, and neither depends on the other to do so.
package config

import (
	"log/slog"
	"time"
)

// Watch is a watcher's resolved options.
type Watch struct {
	OnSynced          func()
	OnError           func(error)
	Logger            *slog.Logger
	Heartbeat         time.Duration
	InactiveThreshold time.Duration
	RequestTimeout    time.Duration
	MaxFilters        int
	Resume            *Checkpoint
	Bucket            string
	MirrorStaleAfter  time.Duration
	CheckpointFile    *CheckpointFile
	// OnSyncPoint, for tests, receives a checkpoint at every sync point.
	OnSyncPoint func(Checkpoint) func()
	// OnApplied, for tests, runs on the event goroutine after each apply
	// to the caches, outside the state lock.
	OnApplied func()
	// ReplicaBehind, for tests, makes a direct get of the entry at or
	// after seq answer "none" when it returns true: a replica of a
	// replicated stream that has not stored seq yet.
	ReplicaBehind func(seq uint64) bool
	// InfoBehind, for tests, makes a stream info whose last sequence is
	// not below rev answer rev-1 when it returns true: a leader, in touch
	// with its replicas, whose answer lacks the newest entry the watcher
	// applied.
	InfoBehind func(rev uint64) bool
	// ReadPath, for tests and benchmarks, sets how the initial state is
	// read: "" chooses for a state too large for one answer (direct get
	// otherwise); "choose" chooses for every read, so that small buckets
	// take both ways; "direct-get" and "consumer" choose that way
	// whenever the stream allows direct get.
	ReadPath string
}

// DefaultMaxFilters is the most subject filters a watcher gives one
// consumer unless told otherwise.
const DefaultMaxFilters = 10000

// DefaultWatch returns the settings of a watcher given no option: a
// heartbeat every second, a consumer the server removes after 30 s without
// its client, 5 s for each request, and a mirror called stale after 10 s.
func DefaultWatch() Watch {
	return Watch{
		Logger:            slog.New(slog.DiscardHandler),
		Heartbeat:         time.Second,
		InactiveThreshold: 30 * time.Second,
		RequestTimeout:    5 * time.Second,
		MaxFilters:        DefaultMaxFilters,
		MirrorStaleAfter:  10 * time.Second,
	}
}

// CheckpointFile is where and how often a watcher saves its checkpoint.
type CheckpointFile struct {
	Path     string
	Every    int
	Interval time.Duration
	Timeout  time.Duration
	// Fault, for tests, is called at each stage of a save ("create",
	// "write", "sync", "rename"); an error fails the save there.
	Fault func(stage string) error
}

// Checkpoint is a watcher's state at one revision, untyped: generated code
// turns it into a typed checkpoint and back.
type Checkpoint struct {
	// Revision is the last revision applied: the caches hold every change
	// up to it and none after.
	Revision uint64
	// Filters are the watcher's subject filters: a watcher resumed with
	// scopes these do not cover re-lists.
	Filters []string
	// StreamCreated is when the bucket's stream was created: a watcher
	// resumed on a stream created at another time (the bucket was deleted
	// and made again) re-lists, whatever the revisions say.
	StreamCreated time.Time
	// Kinds holds the entries of each kind named in KindNames, as
	// []kvwatch.Entry[K, V] sorted by key. The values are copies.
	Kinds []any
	// KindNames names the kind of each element of Kinds.
	KindNames []string
}

// Scopes is what one watcher watches: the union of Values, or the whole
// bucket when All is set. The zero Scopes watches nothing.
type Scopes struct {
	// All watches every key of the bucket; Values are then redundant.
	All bool
	// Values are scope instances.
	Values []ScopeValue
}

// ScopeValue instantiates a bucket's scope number Scope with one value per
// parameter of its prefix, in prefix order.
type ScopeValue struct {
	Scope  int
	Params []string
}

// Modify is a typed client's Modify settings.
type Modify struct {
	Create   bool
	Attempts int
	Backoff  time.Duration
}

// Bucket is a typed client's CreateOrUpdate settings.
type Bucket struct {
	Name          string
	AllowDataLoss bool
}

// Open is a typed client's Open settings.
type Open struct {
	Name string
}
