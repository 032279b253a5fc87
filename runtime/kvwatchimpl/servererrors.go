package kvwatchimpl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/internal/errtext"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file turns server errors into what a watcher does and says: the
// ones that end the watch (terminal), a missing JetStream, and a refused
// permission named with the subject and where the permissions are listed.

// consumerErr wraps an error from creating or running the consumer with
// what to do about it.
func (w *Watcher) consumerErr(err error) error {
	switch {
	case errors.Is(err, jetstream.ErrMaximumConsumersLimit) && w.mirror.snapshot() != nil:
		return fmt.Errorf("%w: stream %s, a mirror of %s (server error 10026): nats-server 2.15+ allows 1,000 consumers per stream by default, "+
			"a mirror on an edge server too; raise the mirror's MaxConsumers (js.UpdateStream on %s on that server) or the edge server's "+
			"jetstream { limits { default_max_consumers } }, or spread the nodes over more edges: %v",
			kvwatch.ErrConsumerLimit, w.stream, w.mirror.snapshot().Origin, w.stream, err)
	case errors.Is(err, jetstream.ErrMaximumConsumersLimit):
		return fmt.Errorf("%w: stream %s (server error 10026): nats-server 2.15+ allows 1,000 consumers per stream by default; "+
			"raise the stream's MaxConsumers (js.UpdateStream on %s, allowed since 2.14) or the server's "+
			"jetstream { limits { default_max_consumers } }, or watch more scopes with fewer watchers: %v",
			kvwatch.ErrConsumerLimit, w.stream, w.stream, err)
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("%w: %s (stream %s was deleted)", jetstream.ErrBucketNotFound, w.bucket, w.stream)
	case errors.Is(err, nats.ErrPermissionViolation):
		return fmt.Errorf("kvwatch: bucket %s: %w: a watcher needs the permissions listed in docs/operations.md (Permissions)", w.bucket, err)
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
// bucketNotFound is the error of a bucket whose stream js does not find:
// the text the command gives too (internal/errtext), saying what to do.
func bucketNotFound(js jetstream.JetStream, bucket string) error {
	where := ""
	if nc := js.Conn(); nc != nil {
		where = errtext.Where(nc.ConnectedUrlRedacted(), js.Options().Domain)
	}
	return errtext.BucketNotFound("kvwatch: ", bucket, where, errtext.Program)
}

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
	return fmt.Errorf("kvwatch: bucket %s: %w: a watcher needs the permissions listed in docs/operations.md (Permissions)", w.bucket, last)
}

// optionalSubject is the one API subject a watcher can do without: the
// stream message API, which seals catch-ups on streams without direct get
// (docs/operations.md, Permissions). A refusal there is no reason to end any watch,
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
	case errors.Is(err, jetstream.ErrBucketNotFound), errors.Is(err, kvwatch.ErrConsumerLimit), errors.Is(err, kvwatch.ErrTooManyFilters),
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
