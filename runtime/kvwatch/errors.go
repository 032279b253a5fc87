package kvwatch

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidScope is matched (errors.Is) by every *ScopeError.
	ErrInvalidScope = errors.New("kvwatch: invalid scope value")
	// ErrStopped is returned by WaitSynced when the watcher stopped before
	// it was synced, without a more specific error.
	ErrStopped = errors.New("kvwatch: watcher stopped")
	// ErrConsumerLimit is returned when the bucket's stream cannot take
	// another consumer (server error 10026). Since nats-server 2.15 a
	// stream takes 1,000 consumers unless configured otherwise; the
	// error's text says how to raise the limit.
	ErrConsumerLimit = errors.New("kvwatch: the stream's consumer limit is reached")
	// ErrTooManyFilters is returned when a watcher's scopes need more
	// subject filters than WithMaxFilters allows (default 10,000): the
	// server checks every pair of filters when it creates the consumer,
	// and again at every reset.
	ErrTooManyFilters = errors.New("kvwatch: too many subject filters for one consumer")
)

// ScopeError reports a scope value that cannot be watched. It is returned
// before anything is sent to the server: a value such as "*", ">" or "a.b"
// would otherwise widen a scoped watch to other tenants' keys.
type ScopeError struct {
	Scope string // scope name, e.g. "VPC"
	Param string // parameter name, e.g. "vpc"
	Value string // the rejected value
	Err   error  // why
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("kvwatch: scope %s: %s=%q %v", e.Scope, e.Param, e.Value, e.Err)
}

// Is makes errors.Is(err, ErrInvalidScope) true.
func (e *ScopeError) Is(target error) bool { return target == ErrInvalidScope }

// Unwrap returns the reason.
func (e *ScopeError) Unwrap() error { return e.Err }

// DataError reports an entry the watcher could not turn into a typed event:
// a value that does not decode, or a key that fits a kind's template shape
// but not its typed parser. The entry is skipped (and, for a value, its key
// leaves the cache, which only holds decodable current values); the watch
// goes on.
type DataError struct {
	Kind     string // kind name, e.g. "Route"
	Key      string // the raw key
	Revision uint64 // the entry's revision
	Err      error  // the decoder's or parser's error
	// Value is the stored value that did not decode (nil for a key that
	// did not parse); the error's text shows its first bytes.
	Value []byte
}

func (e *DataError) Error() string {
	text := fmt.Sprintf("kvwatch: %s %q at revision %d: %v", e.Kind, e.Key, e.Revision, e.Err)
	if e.Value != nil {
		text += ": value " + glimpse(e.Value)
	}
	return text
}

// glimpseBytes is how much of a value an error shows.
const glimpseBytes = 64

// glimpse quotes the first glimpseBytes of v, saying how long it is when
// it is longer.
func glimpse(v []byte) string {
	if len(v) <= glimpseBytes {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q… (%d bytes)", v[:glimpseBytes], len(v))
}

// Unwrap returns the decoder's or parser's error.
func (e *DataError) Unwrap() error { return e.Err }

// UnknownKeyError reports a key inside the watched scopes that matches no
// key template of the bucket: typically a key of a kind that a newer
// schema added, written by nodes that run its code while this one does not
// yet (a rollout). The entry is skipped and counted (Stats.UnknownKeys);
// the watch goes on.
//
// A watcher reports each unknown key once, at the first entry of it that
// it reads; later writes of the key, and the same entries read again (a
// re-list, a scope added back by SetScopes), are counted, not reported.
// It remembers at most MaxUnknownKeysReported keys: the first unknown key
// past them is reported with Last set, and from then on unknown keys are
// only counted. So a rollout that adds a kind costs each old watcher at
// most MaxUnknownKeysReported+1 reports, however many keys the kind has
// and however often they are written. A new watcher, a resumed one
// included, reports afresh. Values that do not decode (*DataError) are
// not limited: each one is reported.
type UnknownKeyError struct {
	Key      string // the raw key
	Revision uint64 // the entry's revision
	// Last is set on the watcher's last report of an unknown key: it
	// reported MaxUnknownKeysReported other keys before this one, and
	// counts further unknown keys, this one's later writes included, in
	// Stats.UnknownKeys only.
	Last bool
}

// MaxUnknownKeysReported is how many unknown keys a watcher reports
// (*UnknownKeyError) before it reports one more, with Last set, and only
// counts the rest. A hundred keys show which kinds and key shapes are
// unknown to a node's code, at the cost of keeping a hundred keys in
// memory; an old node in scope of a new kind of thousands of keys then
// logs a hundred lines, not one per key and per write.
const MaxUnknownKeysReported = 100

func (e *UnknownKeyError) Error() string {
	text := fmt.Sprintf("kvwatch: key %q at revision %d matches no key template", e.Key, e.Revision)
	if e.Last {
		text += fmt.Sprintf("; %d other unknown keys were reported: further unknown keys are counted (Stats().UnknownKeys), not reported", MaxUnknownKeysReported)
	}
	return text
}

// HandlerError reports a handler that panicked. The panic is recovered, the
// event counts as delivered, and the watch goes on with the next event: one
// bad handler must not stop a node from seeing later changes.
type HandlerError struct {
	Kind     string // kind name
	Key      string // the raw key
	Revision uint64 // the event's revision
	Panic    any    // the recovered value
}

func (e *HandlerError) Error() string {
	return fmt.Sprintf("kvwatch: %s handler panicked on %q at revision %d: %v", e.Kind, e.Key, e.Revision, e.Panic)
}

// ParamError reports a key whose token for a typed parameter does not
// parse.
type ParamError struct {
	Key   string // the key
	Param string // the parameter name
	Err   error
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("key %q: parameter %s: %v", e.Key, e.Param, e.Err)
}

// Unwrap returns the parse error.
func (e *ParamError) Unwrap() error { return e.Err }

// KeyMismatchError says why a key does not match a key template. Users
// know it as kvwatch.KeyMismatchError.
type KeyMismatchError struct {
	Key      string // the key as given
	Template string // the template it was matched against
	Reason   string // what differs
}

func (e *KeyMismatchError) Error() string {
	return fmt.Sprintf("key %q does not match template %q: %s", e.Key, e.Template, e.Reason)
}

// ErrNotSynced is returned by Checkpoint before the watcher is synced, and
// while a SetScopes call brings its scopes in: the caches are not a state
// of the watcher's scopes yet.
var ErrNotSynced = errors.New("kvwatch: watcher not synced yet")

// ErrRemoved is returned by a Registration's WaitSynced once it was
// removed before it was synced.
var ErrRemoved = errors.New("kvwatch: handlers removed")

// ErrStreamWentBack is matched (errors.Is) by a *StreamWentBackError.
var ErrStreamWentBack = errors.New("kvwatch: the stream went back")

// StreamWentBackError reports that the bucket's stream, created at the same
// time as the one the caches (or a checkpoint) come from, no longer holds
// what the watcher applied: it lost acknowledged writes, or was restored
// from a backup. The watcher re-lists (Stats.StreamWentBack counts it) and
// goes on; the error is passed to OnError and logged.
type StreamWentBackError struct {
	Bucket string
	// Revision is the watcher's revision (a resumed watcher's: its
	// checkpoint's); LastSeq the stream's last sequence when checked.
	Revision, LastSeq uint64
	// At is the revision of an entry the watcher applied, Key its key,
	// that the stream now holds as another entry (Found is its key
	// there); or, with Key "", a revision at or
	// below Revision holding an entry in the watcher's scopes that it never
	// saw (of key Found). 0 when the stream's last sequence is below
	// Revision.
	At         uint64
	Key, Found string
	// Resumed is set when the watcher was resumed from a checkpoint taken
	// before the loss.
	Resumed bool
}

func (e *StreamWentBackError) Error() string {
	whose := "the watcher"
	if e.Resumed {
		whose = "the checkpoint"
	}
	what := fmt.Sprintf("its last sequence %d is below %s's revision %d", e.LastSeq, whose, e.Revision)
	switch {
	case e.At > 0 && e.Key == "":
		what = fmt.Sprintf("revision %d, below %s's revision %d, holds an entry in its scopes (of %s) that it never saw", e.At, whose, e.Revision, e.Found)
	case e.At > 0:
		what = fmt.Sprintf("revision %d, where %s had %s, now holds another entry (of %s)", e.At, whose, e.Key, e.Found)
	}
	return fmt.Sprintf("kvwatch: bucket %s: the stream went back: %s; it lost writes it had acknowledged, or was restored from a backup, after %s read it: re-listing",
		e.Bucket, what, whose)
}

// Is makes errors.Is(err, ErrStreamWentBack) hold.
func (e *StreamWentBackError) Is(target error) bool { return target == ErrStreamWentBack }

// CheckpointFileError reports a checkpoint file that could not be used
// (Op "load": the watcher ignored it and read the whole state) or saved
// (Op "save": the file on disk is the previous one).
type CheckpointFileError struct {
	Path string // the file
	Op   string // "load" or "save"
	Err  error  // why
}

// Error says which file, which operation and why.
func (e *CheckpointFileError) Error() string {
	return fmt.Sprintf("kvwatch: checkpoint file %s: %s: %v", e.Path, e.Op, e.Err)
}

// Unwrap returns the reason.
func (e *CheckpointFileError) Unwrap() error { return e.Err }
