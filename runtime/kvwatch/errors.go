package kvwatch

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidScope is matched (errors.Is) by every *ScopeError.
	ErrInvalidScope = errors.New("kvwatch: invalid scope value")
	// ErrBucketNotFound is returned when the watched bucket's stream does
	// not exist.
	ErrBucketNotFound = errors.New("kvwatch: bucket not found")
	// ErrStopped is returned by WaitSynced when the watcher stopped before
	// it was synced, without a more specific error.
	ErrStopped = errors.New("kvwatch: watcher stopped")
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
}

func (e *DataError) Error() string {
	return fmt.Sprintf("kvwatch: %s %q at revision %d: %v", e.Kind, e.Key, e.Revision, e.Err)
}

// Unwrap returns the decoder's or parser's error.
func (e *DataError) Unwrap() error { return e.Err }

// UnknownKeyError reports a key inside the watched scopes that matches no
// key template of the bucket. The entry is skipped; the watch goes on.
type UnknownKeyError struct {
	Key      string // the raw key
	Revision uint64 // the entry's revision
}

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("kvwatch: key %q at revision %d matches no key template", e.Key, e.Revision)
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
