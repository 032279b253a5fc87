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
	maxFilters        int
	resume            *Checkpoint
	bucket            string
	mirrorStaleAfter  time.Duration
	checkpointFile    *checkpointFile // WithCheckpointFile (checkpointfile.go)
	// onSyncPoint, for tests, receives a checkpoint at every sync point
	// (export_test.go).
	onSyncPoint func(Checkpoint) func()
	// onApplied, for tests, runs on the event goroutine after each apply
	// to the caches, outside the state lock (export_test.go).
	onApplied func()
}

func defaultConfig() config {
	return config{
		logger:            slog.New(slog.DiscardHandler),
		heartbeat:         time.Second,
		inactiveThreshold: 30 * time.Second,
		requestTimeout:    5 * time.Second,
		maxFilters:        defaultMaxFilters,
		mirrorStaleAfter:  10 * time.Second,
	}
}

// OnSynced sets a function called once, on the goroutine of the watcher's
// own handlers, right after the last initial event and before the first
// live one; the caches are held at the sync point meanwhile (see
// Watcher.SetScopes and Stats.Queued).
func OnSynced(f func()) Option { return func(c *config) { c.onSynced = f } }

// OnError sets a function called, on the goroutine of the watcher's own
// handlers and in order with their events, for every entry the watcher
// skips (*DataError, *UnknownKeyError), every recovered handler panic
// (*HandlerError), a checkpoint file it cannot load (*CheckpointFileError)
// and the terminal error if the watch ends on its own (after every event
// before it). It must not block for long: events wait behind it.
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
// watcher notices a lost consumer after two missed heartbeats. nats.go
// requires it under half of a pull's 30 s expiry: longer values are taken
// as 15 s.
func WithHeartbeat(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.heartbeat = min(d, maxHeartbeat)
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
	return func(c *config) {
		if d > 0 {
			c.inactiveThreshold = d
		}
	}
}

// WithRequestTimeout bounds each request of a read without a consumer
// (the initial state, SetScopes, a seal, reading while no consumer can be
// created) and each wait for its next reply, and each stream info request
// (default 5s). Consumer creation requests have their own, shorter bound
// (see the README, Fast recovery).
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.requestTimeout = d
		}
	}
}

// Consumer creation costs O(F²) in the number of filters F, because the
// server checks every pair, and it is paid at creation and again at every
// reset of the consumer (BENCHMARKS.md, Design decisions: "consumer.go:
// creation cost O(F²) and createTimeout"). Above warnFilters a watcher
// logs a warning; above its maximum (default defaultMaxFilters) it
// refuses to start.
const (
	warnFilters       = 1000
	defaultMaxFilters = 10000
)

// WithMaxFilters sets how many subject filters the watcher's one consumer
// may have (default 10,000); more is ErrTooManyFilters. Each scope value
// makes one or two filters.
func WithMaxFilters(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxFilters = n
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
	return func(c *config) { c.bucket = name }
}

// WithMirrorStaleAfter sets when a mirror counts as stale (default 10 s):
// when it has not heard from its origin for longer (Stats.Mirror). A
// watcher of a mirror checks it every half of that, at most every 5 s
// (one stream info request to its server), and logs a warning when it
// goes stale and an INFO record when it recovers. Healthy, a mirror hears from its origin
// every few milliseconds. A negative d turns the checks off.
func WithMirrorStaleAfter(d time.Duration) Option {
	return func(c *config) {
		if d != 0 {
			c.mirrorStaleAfter = d
		}
	}
}
