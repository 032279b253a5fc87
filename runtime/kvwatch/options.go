package kvwatch

import (
	"log/slog"
	"time"
)

// Option configures a watcher.
type Option func(*config)

// config is the resolved set of options.
type config struct {
	onSynced          func()
	onError           func(error)
	logger            *slog.Logger
	heartbeat         time.Duration
	inactiveThreshold time.Duration
	requestTimeout    time.Duration
	resume            *resumeFrom
}

func defaultConfig() config {
	return config{
		logger:            slog.New(slog.DiscardHandler),
		heartbeat:         time.Second,
		inactiveThreshold: 30 * time.Second,
		requestTimeout:    5 * time.Second,
	}
}

// OnSynced sets a function called once, from the event goroutine, right
// after the last initial event and before the first live one.
func OnSynced(f func()) Option { return func(c *config) { c.onSynced = f } }

// OnError sets a function called, from the event goroutine, for every
// entry the watcher skips (*DataError, *UnknownKeyError), every recovered
// handler panic (*HandlerError) and the terminal error if the watch ends
// on its own. It must not block for long: events wait behind it.
func OnError(f func(error)) Option { return func(c *config) { c.onError = f } }

// WithLogger sets the structured logger. The default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithHeartbeat sets the idle heartbeat of the consumer (default 1s): a
// watcher notices a lost consumer after two missed heartbeats.
func WithHeartbeat(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.heartbeat = d
		}
	}
}

// WithInactiveThreshold sets how long the server keeps the watcher's
// consumer after the client stopped pulling (default 30s): the bound on how
// long a crashed node's consumer lingers on the stream leader.
func WithInactiveThreshold(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.inactiveThreshold = d
		}
	}
}

// WithRequestTimeout bounds each request of the initial state read and each
// wait for its next reply (default 5s).
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.requestTimeout = d
		}
	}
}
