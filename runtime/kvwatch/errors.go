package kvwatch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/directget"
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

// consumerErr wraps an error from creating or running the consumer with
// what to do about it.
func (w *Watcher) consumerErr(err error) error {
	switch {
	case errors.Is(err, jetstream.ErrMaximumConsumersLimit) && w.mirror.snapshot() != nil:
		return fmt.Errorf("%w: stream %s, a mirror of %s (server error 10026): nats-server 2.15+ allows 1,000 consumers per stream by default, "+
			"a mirror on an edge server too; raise the mirror's MaxConsumers (js.UpdateStream on %s on that server) or the edge server's "+
			"jetstream { limits { default_max_consumers } }, or spread the nodes over more edges: %v",
			ErrConsumerLimit, w.stream, w.mirror.snapshot().Origin, w.stream, err)
	case errors.Is(err, jetstream.ErrMaximumConsumersLimit):
		return fmt.Errorf("%w: stream %s (server error 10026): nats-server 2.15+ allows 1,000 consumers per stream by default; "+
			"raise the stream's MaxConsumers (js.UpdateStream on %s, allowed since 2.14) or the server's "+
			"jetstream { limits { default_max_consumers } }, or watch more scopes with fewer watchers: %v",
			ErrConsumerLimit, w.stream, w.stream, err)
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w: %s (stream %s was deleted)", ErrBucketNotFound, w.bucket, w.stream)
	case errors.Is(err, nats.ErrPermissionViolation):
		return fmt.Errorf("kvwatch: bucket %s: %w: a watcher needs the permissions listed in the README (Permissions)", w.bucket, err)
	}
	return fmt.Errorf("kvwatch: bucket %s: consumer: %w", w.bucket, err)
}

// noJetStream explains err, the error of the first JetStream request of
// a watcher (Start), a bucket handle (OpenBucket) or a read without a
// consumer, when nothing answered it: the server runs without JetStream,
// or without it for this account, or (with a JetStream domain or API
// prefix) nothing serves that domain or prefix from here. nats.go reports
// that as nats.ErrNoResponders, which names neither JetStream nor a fix.
// The result matches both nats.ErrNoResponders and
// jetstream.ErrJetStreamNotEnabled (errors.Is), as nats.go's own
// AccountInfo maps it. Any other error is returned as it is. Later
// requests are not mapped: no responders there is a server or a leaf
// connection going away for a while, and is retried.
func noJetStream(js jetstream.JetStream, err error) error {
	if !errors.Is(err, nats.ErrNoResponders) {
		return err
	}
	text := "JetStream not enabled on the server (or not for this account)"
	if o := js.Options(); o.Domain != "" {
		text += fmt.Sprintf(", or JetStream domain %q not reachable from this server", o.Domain)
	} else if o.APIPrefix != "" {
		text += fmt.Sprintf(", or nothing serving JetStream API prefix %q", o.APIPrefix)
	}
	return &noJetStreamError{text: text, err: err}
}

// noJetStreamError is a first JetStream request that nothing answered.
type noJetStreamError struct {
	text string // what it means
	err  error  // nats.ErrNoResponders, as wrapped by nats.go
}

func (e *noJetStreamError) Error() string { return e.text + ": " + e.err.Error() }

// Unwrap returns the request's error and jetstream.ErrJetStreamNotEnabled.
func (e *noJetStreamError) Unwrap() []error {
	return []error{e.err, jetstream.ErrJetStreamNotEnabled}
}

// permissionError returns a terminal error when the connection's last
// error is a permissions violation on a subject of this watcher's stream
// that happened since the watcher started. The server answers such a
// publish with an asynchronous -ERR, not a reply, so the request itself
// only times out; this turns the timeout into the error that explains it.
func (w *Watcher) permissionError() error {
	last := w.js.Conn().LastError()
	if last == nil || !errors.Is(last, nats.ErrPermissionViolation) || last.Error() == w.errAtStart {
		return nil
	}
	_, quoted, ok := strings.Cut(last.Error(), `"`)
	subject, _, ok2 := strings.Cut(quoted, `"`)
	if !ok || !ok2 || !w.ownsSubject(subject) || subject == w.optionalSubject() {
		return nil
	}
	return fmt.Errorf("kvwatch: bucket %s: %w: a watcher needs the permissions listed in the README (Permissions)", w.bucket, last)
}

// optionalSubject is the one API subject a watcher can do without: the
// stream message API, which seals catch-ups on streams without direct get
// (README, Permissions). A refusal there is no reason to end any watch,
// this watcher's or another's on the same connection.
func (w *Watcher) optionalSubject() string {
	return directget.APIPrefix(w.js) + "STREAM.MSG.GET." + w.stream
}

// refusedOptional reports whether the connection's last error is a
// permissions violation on optionalSubject.
func (w *Watcher) refusedOptional() bool {
	last := w.js.Conn().LastError()
	return last != nil && errors.Is(last, nats.ErrPermissionViolation) && strings.Contains(last.Error(), `"`+w.optionalSubject()+`"`)
}

// ownsSubject reports whether subject is one this watcher sends requests
// to: an API subject naming its stream as a whole token.
func (w *Watcher) ownsSubject(subject string) bool {
	for tok := range strings.SplitSeq(subject, ".") {
		if tok == w.stream {
			return true
		}
	}
	return false
}

// terminal reports whether err ends the watch: retrying cannot fix it.
// Anything else (timeouts, no responders, a server restarting, a leader
// moving) is retried with backoff.
func terminal(err error) bool {
	var jsErr jetstream.JetStreamError
	switch {
	case errors.Is(err, ErrBucketNotFound), errors.Is(err, ErrConsumerLimit), errors.Is(err, ErrTooManyFilters),
		errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, jetstream.ErrInvalidOption),
		errors.Is(err, nats.ErrPermissionViolation), errors.Is(err, nats.ErrAuthorization):
		return true
	case errors.As(err, &jsErr) && jsErr.APIError() != nil:
		// A request the server refuses as such (bad request, permissions)
		// is refused again; 5xx and unavailability are not errors of the
		// request.
		code := jsErr.APIError().Code
		return code >= 400 && code < 500 && code != 408
	}
	return false
}

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
