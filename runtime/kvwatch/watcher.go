package kvwatch

import (
	"context"
	"iter"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
)

// Watcher is what a generated watcher (NetworkWatcher, …) offers whatever
// its schema: its state, its end, and the waits for sync and for a
// revision. It watches the entries of one bucket within a set of scopes,
// with at most one consumer on the bucket's stream at any moment, whatever
// the number of scopes and kinds; the generated type adds the typed
// caches, SetScopes, AddHandlers, Events and Checkpoint.
//
// Lifecycle: the generated WatchX reads the initial state, then tails live
// changes, on one goroutine (the event goroutine) that applies them to the
// caches and queues them for the handlers, which run on goroutines of
// their own. The watch ends when Stop is called, when the ctx given to
// WatchX is cancelled, or on a terminal error (Err). A handler, OnSynced,
// OnError or the body of an Events loop may call any method: none waits
// for a delivery to the code that called it.
//
// Only the runtime implements Watcher; methods may be added to it in a
// minor release. Its methods are safe for concurrent use.
type Watcher interface {
	// Bucket returns the watched bucket's name: the schema's, or the one
	// WithBucket gave.
	Bucket() string
	// Filters returns the normalized subject filters of the watcher's
	// consumer, sorted; none when it watches nothing. The caller owns the
	// slice.
	Filters() []string
	// Stats returns the watcher's counters. It does not block.
	Stats() Stats
	// CheckpointFileStats returns what the watcher's checkpoint file did
	// (WithCheckpointFile): loaded or not, saves and failures. It does not
	// block.
	CheckpointFileStats() CheckpointFileStats
	// Synced reports whether the watcher is synced: its caches hold the
	// initial state, exact, and every initial event is queued for the
	// handlers (OnSynced runs right after them). It does not block.
	Synced() bool
	// WaitSynced blocks until the watcher is synced (nil), ctx ends (its
	// error), or the watch ends first (its terminal error, or ErrStopped).
	// From a handler or an Events loop body too: the watcher reads on
	// while a caller waits, even past the changes that caller's handlers
	// hold back. It does not wait for the handlers: OnSynced tells them.
	WaitSynced(ctx context.Context) error
	// WaitRevision blocks until every change up to revision rev within
	// the watcher's scopes is in its caches (nil), ctx ends (its error),
	// the stream goes back meanwhile (its *StreamWentBackError: the write
	// at rev may be lost, and rev another write's), or the watch ends (its
	// error, or ErrStopped). Stats().LastRevision is then at least rev.
	//
	// rev need not be in the watcher's scopes: when the watcher's stream
	// (an edge's mirror: it may lag) holds rev and has no entry in scope
	// after the watcher's revision, the watcher is up to rev already, and
	// its revision is raised to it. Each check asks the stream for its
	// state and reads, by direct get, what it holds after the watcher's
	// revision (without delivering it: the tail does), every few
	// milliseconds while the answer is "not yet". From a handler or an
	// Events loop body too (as WaitSynced): the caches then hold rev,
	// while the caller's own events may still be queued behind it.
	WaitRevision(ctx context.Context, rev uint64) error
	// Done returns a channel closed when the watch has ended and every
	// goroutine of the watcher has exited, the callbacks' included: after
	// Stop from a handler, once that handler has returned (so a callback
	// must not wait for it).
	Done() <-chan struct{}
	// Err returns the error that ended the watch on its own, or nil
	// (still running, or stopped by Stop or by the context).
	Err() error
	// Stop ends the watch: no handler, OnSynced, OnError or Events loop
	// body starts after it returns. It returns once the watcher's consumer
	// was deleted from the server (best effort: an unreachable server
	// drops it after the inactive threshold) and every goroutine of the
	// watcher has exited, but for one running a callback at that moment,
	// which runs nothing after it: Stop never waits for a callback, since
	// it may be called from one (Done waits for that too). It is
	// idempotent, and returns from anywhere: a handler, the body of an
	// Events loop, another goroutine.
	Stop()
}

// Cache is the read-only, materialized view of one kind of entry within a
// watcher's scopes, like a Kubernetes lister. The watcher updates it before
// queuing the event of the same change for the handlers (a handler may see
// the cache ahead of its event), and it is exact (every key in scope with
// its current value) once the watcher is synced.
//
// Reads are safe from any goroutine. They hold the watcher's read lock
// only while they copy, and every value they return is a deep copy:
// callers own it and may modify it without touching the cache.
//
// Only the runtime implements Cache; methods may be added to it in a minor
// release.
type Cache[K comparable, V any] interface {
	// Get returns (a copy of) the current value of key.
	Get(key K) (V, bool)
	// GetItem returns (a copy of) the current value of key with its
	// revision.
	GetItem(key K) (Item[V], bool)
	// Len returns the number of cached keys.
	Len() int
	// List returns (copies of) every entry, sorted by key.
	List() []Entry[K, V]
	// ListFunc returns (copies of) the entries whose key satisfies match,
	// sorted by key: a list by partial key, such as
	// func(k RouteKey) bool { return k.VPC == "blue" }. match runs under
	// the read lock: keep it short and do not call the cache from it.
	ListFunc(match func(K) bool) []Entry[K, V]
	// In returns (copies of) the entries under the given scope values,
	// sorted by key: a list by scope, such as
	// w.RouteCache().In(fleetkv.NetworkScopes{VPC: []string{"blue"}}). The
	// values are checked like a watcher's (*ScopeError).
	In(scopes ScopeSet) ([]Entry[K, V], error)
	// All returns an iterator over the entries in key order, as of when
	// the loop starts (the lock is held only to take the keys and
	// references, in one pass, as List does); each value is deep-copied
	// when the loop reaches it, so a loop that stops early copies only
	// what it read. The loop owns the values.
	All() iter.Seq2[K, V]
	// AllIn is All for the entries under the given scope values, as In
	// lists them; the values are checked first (*ScopeError).
	AllIn(scopes ScopeSet) (iter.Seq2[K, V], error)
}

// Registration is a set of handlers added to a running watcher with the
// generated AddHandlers, with a queue of its own: its handlers run one at
// a time, on a goroutine of the registration's, in the watcher's event
// order: first the replay of the caches as they were when it was added
// (events flagged Initial), then the changes applied after that, then its
// OnSynced once the watcher is synced (right after the replay when it is
// already), then live changes. A registration that falls behind by more
// than 256 changes holds the watcher back (backpressure: nothing is lost);
// it never holds up other registrations' handlers otherwise. Each handler
// owns the values of its events (a deep copy of its own).
//
// Only the runtime implements Registration; methods may be added to it in
// a minor release. Its methods are safe for concurrent use, from its own
// handlers too.
type Registration interface {
	// Synced reports whether the registration is synced: the watcher is
	// synced, and every initial event is queued for its handlers (its
	// OnSynced runs right after them). It does not block.
	Synced() bool
	// WaitSynced blocks until the registration is synced (nil), ctx ends,
	// the watch ends first (its error, or ErrStopped), or the
	// registration is removed (ErrRemoved). From the registration's own
	// handlers too: the watcher does not wait for them to be synced.
	WaitSynced(ctx context.Context) error
	// Remove takes the handlers off the watcher: none of them starts after
	// Remove returns (one running may finish). It returns at once, from
	// anywhere, and is safe to call more than once.
	Remove()
}

// ScopeSet is a set of scope values; the generated Scopes types
// (NetworkScopes, …) implement it, and nothing else needs to.
type ScopeSet interface {
	// KVWatchScopes returns the scope values in the runtime's untyped
	// form.
	KVWatchScopes() Scopes
}

// Scopes is a set of scope values in the runtime's untyped form: what the
// generated Scopes types (NetworkScopes, …) give the runtime through their
// KVWatchScopes method. A program builds the generated types, never this;
// its fields are the runtime's and may change in a minor release.
type Scopes = config.Scopes
