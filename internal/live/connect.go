package live

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/errtext"
)

// connFlags are the connection flags, named as the nats CLI names them.
type connFlags struct {
	server, creds, context string
}

func (c *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.server, "server", "", "NATS server `URL` (default $NATS_URL, else the nats context's, else "+nats.DefaultURL+")")
	fs.StringVar(&c.server, "s", "", "short for -server")
	fs.StringVar(&c.creds, "creds", "", "user credentials `file`")
	fs.StringVar(&c.context, "context", "", "nats CLI context `NAME` (default $NATS_CONTEXT, else the selected one)")
}

// session is a connection to the server, with what the subcommands need
// to say what went wrong: the URL tried and where it came from, and the
// permission errors the server reports on the side.
type session struct {
	nc        *nats.Conn
	js        jetstream.JetStream
	url, from string
	domain    string

	mu      sync.Mutex
	denied  error // the last permissions violation
	waiting map[*int]context.CancelCauseFunc
}

// requestTimeout bounds each request the subcommands make.
const requestTimeout = 5 * time.Second

// connect connects as the flags, the environment and the nats context say.
// Its errors say what to do.
func connect(o *options, name string, extra ...nats.Option) (*session, error) {
	getenv := o.env.Getenv
	s := &session{waiting: map[*int]context.CancelCauseFunc{}}
	ctxName := cmp.Or(o.conn.context, getenv("NATS_CONTEXT"))
	nctx, err := loadContext(ctxName, getenv)
	if err != nil {
		return nil, err
	}
	var opts []nats.Option
	switch {
	case o.conn.server != "":
		s.url, s.from = o.conn.server, "-server"
	case getenv("NATS_URL") != "":
		s.url, s.from = getenv("NATS_URL"), "NATS_URL"
	case nctx != nil && nctx.URL != "":
		s.url, s.from = nctx.URL, fmt.Sprintf("nats context %q", nctx.name)
	default:
		s.url, s.from = nats.DefaultURL, "the default"
	}
	if o.conn.creds != "" {
		opts = append(opts, nats.UserCredentials(expandHome(o.conn.creds)))
	}
	if nctx != nil {
		copts, err := nctx.options(o.conn.creds != "")
		if err != nil {
			return nil, err
		}
		opts = append(opts, copts...)
	}
	opts = append(opts, nats.Name("kvwatchgen "+name), nats.ErrorHandler(s.asyncError))
	opts = append(opts, extra...)
	nc, err := nats.Connect(s.url, opts...)
	s.url = redact(s.url) // messages name it from now on
	if err != nil {
		return nil, s.connectError(err, nctx)
	}
	s.nc = nc
	switch {
	case nctx != nil && nctx.JSDomain != "":
		s.domain = nctx.JSDomain
		s.js, err = jetstream.NewWithDomain(nc, nctx.JSDomain)
	case nctx != nil && nctx.JSAPIPrefix != "":
		s.js, err = jetstream.NewWithAPIPrefix(nc, nctx.JSAPIPrefix)
	default:
		s.js, err = jetstream.New(nc)
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	return s, nil
}

// redact hides the passwords of the URLs in list (comma-separated, as
// nats.Connect takes them).
func redact(list string) string {
	urls := strings.Split(list, ",")
	for i, raw := range urls {
		if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.User != nil {
			urls[i] = u.Redacted()
		}
	}
	return strings.Join(urls, ",")
}

// connectError says why connecting failed and what to do.
func (s *session) connectError(err error, nctx *natsContext) error {
	where := fmt.Sprintf("%s (from %s)", s.url, s.from)
	switch {
	case errors.Is(err, nats.ErrNoServers):
		return fmt.Errorf("cannot connect to %s: no server answers there; start one, or give its URL with -server (or NATS_URL, or -context): %w", where, err)
	case errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked):
		how := "give them with -creds or -context"
		if nctx != nil {
			how = fmt.Sprintf("check nats context %q (%s), or give them with -creds", nctx.name, nctx.path)
		}
		return fmt.Errorf("%s refused the credentials: %s: %w", where, how, err)
	}
	return fmt.Errorf("cannot connect to %s: %w", where, err)
}

// asyncError is the connection's error handler: a permissions violation
// ends the requests waiting at once (the server drops a refused request,
// which would otherwise wait for its timeout).
func (s *session) asyncError(_ *nats.Conn, _ *nats.Subscription, err error) {
	if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied = err
	for _, cancel := range s.waiting {
		cancel(&deniedError{err})
	}
}

// deniedError is a request the server refused for missing permissions.
type deniedError struct{ err error }

func (e *deniedError) Error() string {
	return "permission denied: " + e.err.Error() + "; the user needs that permission (docs/operations.md#permissions lists what each subcommand sends)"
}
func (e *deniedError) Unwrap() error { return e.err }

// op returns a context for one operation: bounded by requestTimeout when
// timed, and ended by a permissions violation. done releases it.
func (s *session) op(ctx context.Context, timed bool) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stopTimer := func() bool { return false }
	if timed {
		t := time.AfterFunc(requestTimeout, func() { cancel(context.DeadlineExceeded) })
		stopTimer = t.Stop
	}
	key := new(int)
	s.mu.Lock()
	s.waiting[key] = cancel
	s.mu.Unlock()
	return ctx, func() {
		stopTimer()
		s.mu.Lock()
		delete(s.waiting, key)
		s.mu.Unlock()
		cancel(nil)
	}
}

// explain turns err, met during an operation on bucket with ctx, into an
// error that says what to do.
func (s *session) explain(ctx context.Context, bucket string, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	var denied *deniedError
	switch {
	case errors.As(err, &denied):
		return err
	case errors.Is(err, jetstream.ErrStreamNotFound), errors.Is(err, jetstream.ErrBucketNotFound):
		return errtext.BucketNotFound("", bucket, errtext.Where(s.url, s.domain), errtext.Command)
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount), errors.Is(err, nats.ErrNoResponders):
		msg := fmt.Sprintf("JetStream is not enabled on %s (or not for this account)", s.url)
		if s.domain != "" {
			msg += ", or JetStream domain " + s.domain + " is unreachable"
		}
		return fmt.Errorf("%s: enable it (nats-server -js) or connect to a server that has it: %w", msg, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("no answer from %s within %s (a server restarting, or JetStream unavailable): %w", s.url, requestTimeout, err)
	}
	return err
}

// close drains nothing: every subcommand has finished with the connection.
func (s *session) close() { s.nc.Close() }
