package kvwatchimpl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/subjects"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// Watcher watches the entries of one bucket within a set of scopes, with
// at most one consumer on the bucket's stream at any moment, whatever the
// number of scopes and kinds. Generated code wraps it in a typed watcher;
// its methods are safe for concurrent use.
//
// Lifecycle: Start reads the initial state, then tails live changes, on
// one goroutine (the event goroutine) that applies them to the caches and
// queues them for the handlers, which run on goroutines of their own
// (listener.go). The watch ends when Stop is called, when the ctx given to
// Start is cancelled, or on a terminal error (Err). A handler, OnSynced,
// OnError or the body of an Events loop may call any method: none waits
// for a delivery to the code that called it.
//
// Its fields are grouped by who owns them. Lock order: state.mu before mu
// (admit) and before a listener's mu (queuing an event under the state
// lock); mu, rescopes.mu, a listener's mu, ckptFile.mu and mirror.mu are
// taken last, never while waiting for anything.
type Watcher struct {
	// Set by Start, read-only after: any goroutine reads them.
	js  jetstream.JetStream
	cfg config.Watch
	// ckptFile is the checkpoint file WithCheckpointFile names, nil
	// without one (its saver goroutine owns its state, under its mu).
	ckptFile *checkpointFile
	spec     *BucketSpec
	bucket   string // the bucket watched: spec.Bucket, or WithBucket's
	stream   string // "KV_" + bucket
	// subjectPrefix is "$KV.<bucket>.", or of the origin's bucket when the
	// stream is a mirror of a bucket named otherwise (its messages keep
	// the origin's subjects).
	subjectPrefix string
	// replicated is whether the stream has more than one replica, when
	// the watch started: a consumer is then placed on one of its nodes.
	replicated bool
	bindings   []AnyBinding
	templates  []*Template // templates[i] belongs to bindings[i]
	scopes     []compiledScope
	// restored counts the entries restored from a checkpoint;
	// oldestRestored is the lowest revision among them.
	restored       int
	oldestRestored uint64
	ctx            context.Context
	cancel         context.CancelFunc
	// errAtStart is the connection's last error when the watcher started:
	// an older permissions violation is not this watcher's.
	errAtStart string

	// Closed or signalled once, read by any goroutine.
	//
	// ended is closed when the event goroutine has done its part: the
	// watch is over, its consumer deleted, its other goroutines gone.
	ended chan struct{}
	// done is closed once the listeners' goroutines have exited too
	// (Done).
	done     chan struct{}
	syncOnce sync.Once
	synced   chan struct{} // closed once synced

	// Guarded by state.mu: the caches and revision, and what is read or
	// changed with them.
	state state
	// anchors are the newest entries applied: what tells a stream that
	// went back (rewind.go).
	anchors anchors
	// regsSynced is set in the step that makes the watcher synced
	// (reachSyncPoint, synced.go): a registration added later is synced
	// when added, its OnSynced after its replay; one added before is
	// synced in that step with the others.
	regsSynced bool

	// Guarded by mu.
	mu sync.Mutex
	// filters are the consumer's filters, normalized (empty: watch
	// nothing); scopeKeys matches keys against them. Written by the event
	// goroutine only (setFilters), which reads them without the lock.
	filters   []string
	scopeKeys *subjects.Matcher
	err       error  // terminal error, set before done is closed
	statePath string // how the initial state was read (Stats)
	// resumePath is how a resumed watcher caught up (Stats).
	resumePath string
	stopTail   func() // stops the live tail's consumer iterator, if any
	// drainerList holds the listeners' goroutines, for Stop. halted is set
	// by Stop (or the end of Start's ctx), over once the event goroutine
	// ended: no goroutine starts after either.
	drainerList []*listener
	halted      bool
	over        bool

	// Synchronized by themselves (atomics, wait groups, their own locks).
	stats counters
	// Listeners (listener.go): own is the watcher's own handlers, with
	// OnSynced and OnError (nil when it has none; set by Start);
	// listening every registration not removed, own and loops included,
	// copied on write under state.mu and read by the event goroutine
	// without a lock.
	own       *Registration
	listening atomic.Pointer[[]*Registration]
	// waiters counts the callers waiting for the event goroutine; while
	// one does, it takes in changes past the listeners' bound. movers
	// counts those among them that need it past where it is (SetScopes,
	// WaitRevision): they end the hold of a sync point (synced.go).
	// waiterCame and room wake it from those waits (capacity 1).
	waiters    atomic.Int32
	movers     atomic.Int32
	waiterCame chan struct{}
	room       chan struct{}
	// drainers counts the listeners' goroutines.
	drainers sync.WaitGroup
	// rescopes holds the SetScopes calls for the event goroutine.
	rescopes rescopeQueue
	// lastWentBack is the last stream gone back reported (WaitRevision).
	lastWentBack atomic.Pointer[kvwatch.StreamWentBackError]
	// mirror is what the watcher knows of its stream as a mirror (Stats).
	mirror mirrorHealth
	// schemaRecord is the schema the bucket's stream records (Stats).
	schemaRecord schemaRecord
	// bg tracks goroutines besides the event goroutine (watchMirror): the
	// event goroutine waits for them before the watch is done.
	bg sync.WaitGroup

	// The event goroutine's own: no other goroutine touches them, but
	// for the two written under mu too.
	//
	// startStream is the stream as Start found it: the first read uses
	// its info instead of asking again (see readableStream).
	startStream jetstream.Stream
	// plan is the catch-up the tail follows (catchup.go); not pending, it
	// is the live tail.
	plan     *catchUpPlan
	consumer *tailConsumer
	// directGet is whether the stream answers direct gets, directStream
	// the stream they are sent to: the watcher's, or a direct-only
	// mirror's origin (learnDirectGet). Written under mu too:
	// WaitRevision reads them.
	directGet    bool
	directStream string
	// unavailableSince is when the server began answering only that it
	// cannot speak for its cluster (cutoffnode.go); zero otherwise.
	unavailableSince time.Time
	unavailableAt    uint64 // the connection's reconnect count then
	// recovery is the recovery under way, told once it ends (recovery.go).
	recovery recovery
	// verifyStream is set after the tail broke: before the next consumer,
	// the stream must be the one the caches come from (checkStream).
	verifyStream bool
	// tailStoppable mirrors stopTail != nil (see setTailStop).
	tailStoppable bool
	// reserved is set while caches hold room reserveCaches made, until
	// fitCaches (event goroutine only): the end of every other catch-up
	// takes no lock for it.
	reserved bool
	// otherStream is set while the watcher re-lists a stream other than
	// the one its caches come from (a resumed watcher's bucket made again,
	// a stream that went back): the revisions of the cached entries say
	// nothing about the stream's.
	otherStream bool
	// rewound says why a resumed watcher found its stream gone back since
	// the checkpoint.
	rewound string
	// checkedAt is the connection's reconnect count when the stream was
	// last checked (ensureSameStream); msgGetRefused is set once the
	// connection was refused the stream's message API, which checks the
	// stream without direct get.
	checkedAt     uint64
	msgGetRefused bool
	// seenFrom is the revision after which the watcher has seen every
	// entry in its scopes: a resumed watcher's delta knows those at or
	// below its checkpoint only as the checkpoint's entries, not their
	// deletes.
	seenFrom uint64
	// unknownKeys are the keys matching no template reported so far.
	unknownKeys unknownKeys
}

// For generated code (WatchNetwork and the like call it). Start validates
// scopes, checks that the bucket exists and starts watching. Scope values
// are checked before anything is sent to the server (a *ScopeError,
// matching ErrInvalidScope). Empty scopes watch nothing: no
// consumer is created and the watcher is synced at once.
//
// Start returns once the bucket was found; the initial state is read and
// the consumer created in the background (see WaitSynced). ctx bounds the
// whole watch, not only Start.
func Start(ctx context.Context, js jetstream.JetStream, spec *BucketSpec, scopes Scopes, bindings []AnyBinding, opts ...kvwatch.Option) (*Watcher, error) {
	cfg := config.DefaultWatch()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	bucket := cmp.Or(cfg.Bucket, spec.Bucket)
	if err := validBucketName(bucket); err != nil {
		return nil, err
	}
	w := &Watcher{
		js:            js,
		cfg:           cfg,
		spec:          spec,
		bucket:        bucket,
		stream:        "KV_" + bucket,
		directStream:  "KV_" + bucket,
		subjectPrefix: "$KV." + bucket + ".",
		bindings:      bindings,
		ended:         make(chan struct{}),
		done:          make(chan struct{}),
		synced:        make(chan struct{}),
		waiterCame:    make(chan struct{}, 1),
		room:          make(chan struct{}, 1),
		rescopes:      rescopeQueue{wake: make(chan struct{}, 1)},
	}
	if f := cfg.CheckpointFile; f != nil {
		w.ckptFile = &checkpointFile{cfg: *f}
		w.ckptFile.stats.Path = f.Path
	}
	w.listening.Store(&[]*Registration{})
	w.consumer = newTailConsumer(w)
	if last := js.Conn().LastError(); last != nil {
		w.errAtStart = last.Error()
	}
	w.checkedAt = js.Conn().Stats().Reconnects // Start reads the stream as it is
	var err error
	if w.templates, err = checkBindings(bindings); err != nil {
		return nil, err
	}
	if w.scopes, err = compileScopes(spec, w.templates); err != nil {
		return nil, err
	}
	// Scope values are checked before anything is sent.
	if _, err = w.filtersFor(scopes); err != nil {
		return nil, err
	}
	stream, err := w.findStream(ctx)
	if err != nil {
		return nil, err
	}
	w.startStream = stream
	w.learnStream(stream.CachedInfo())
	w.learnSchema(stream.CachedInfo())
	if w.filters, err = w.filtersFor(scopes); err != nil {
		return nil, err
	}
	w.scopeKeys = w.keyMatcher(w.filters)
	for _, b := range bindings {
		b.attach(w)
	}
	w.loadCheckpointFile() // a valid file is the checkpoint restore resumes from
	if err := w.restore(); err != nil {
		return nil, err
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.watchCallerContext(ctx)
	if err := w.startOwn(); err != nil {
		w.cancel()
		return nil, err
	}
	if w.mirror.snapshot() != nil && w.cfg.MirrorStaleAfter > 0 {
		w.bg.Go(w.watchMirror)
	}
	w.startCheckpointSaver()
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelDebug, "kvwatch: start",
		slog.String("bucket", w.bucket), slog.String("subjects", w.subjectPrefix+">"), slog.Int("filters", len(w.filters)))
	go w.run()
	return w, nil
}

// findStream looks the bucket's stream up for Start. A server that does
// not answer (restarting, unreachable while the connection reconnects) is
// asked again with the watch's backoff until ctx ends, as every later
// phase of the watch retries: a node that starts during an outage gets
// its watcher once the server is back. What retrying cannot fix fails at
// once: no such bucket, no JetStream, missing permissions, a closed
// connection.
func (w *Watcher) findStream(ctx context.Context) (jetstream.Stream, error) {
	for attempt := 0; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, w.cfg.RequestTimeout)
		stream, err := w.js.Stream(rctx, w.stream)
		cancel()
		if err == nil {
			return stream, nil
		}
		err = noJetStream(w.js, err)
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("kvwatch: bucket %s: the server did not answer before the context ended (%w): %w", w.bucket, ctx.Err(), err)
		case terminal(err), errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
			return nil, w.streamErr(err)
		}
		if perr := w.permissionError(); perr != nil {
			return nil, perr
		}
		wait := min(100*time.Millisecond<<min(attempt, 5), 2*time.Second)
		w.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "kvwatch: the server does not answer: looking the bucket up again",
			slog.String("bucket", w.bucket), slog.Int("attempt", attempt+1), slog.Duration("in", wait), slog.Any("error", err))
		if !sleep(ctx, wait) {
			return nil, fmt.Errorf("kvwatch: bucket %s: the server did not answer before the context ended (%w): %w", w.bucket, ctx.Err(), err)
		}
	}
}

// scopeSubjects returns the subject filters of scopes, validating every
// value.
func (w *Watcher) scopeSubjects(scopes Scopes) ([]string, error) {
	if scopes.All {
		return []string{w.subjectPrefix + ">"}, nil
	}
	var out []string
	err := w.eachScopeValue(scopes, w.subjectPrefix, func(fs []string) { out = append(out, fs...) })
	return out, err
}

// keyPrefixes returns the literal key prefix of every scope value, for
// Cache.In.
func (w *Watcher) keyPrefixes(scopes Scopes) ([]string, error) {
	var out []string
	err := w.eachScopeValue(scopes, "", func(fs []string) { out = append(out, strings.TrimSuffix(fs[0], ".>")) })
	return out, err
}

// eachScopeValue calls fn with the filters (prefixed by prefix) of every
// scope value, in order, after checking the value.
func (w *Watcher) eachScopeValue(scopes Scopes, prefix string, fn func(filters []string)) error {
	for _, v := range scopes.Values {
		if v.Scope < 0 || v.Scope >= len(w.scopes) {
			return fmt.Errorf("kvwatch: bucket %s: no scope #%d", w.bucket, v.Scope)
		}
		fs, err := w.scopes[v.Scope].filters(prefix, v.Params)
		if err != nil {
			return err
		}
		fn(fs)
	}
	return nil
}

func (w *Watcher) setErr(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

// Done returns a channel closed when the watch has ended and every
// goroutine of the watcher has exited, the callbacks' included: after Stop
// from a handler, once that handler has returned (so a callback must not
// wait for it).
func (w *Watcher) Done() <-chan struct{} { return w.done }

// Err returns the error that ended the watch on its own, or nil (still
// running, or stopped by Stop or by the context).
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop ends the watch: no handler, OnSynced, OnError or Events loop body
// starts after it returns. It returns once the watcher's consumer was
// deleted from the server (best effort: an unreachable server drops it
// after the inactive threshold) and every goroutine of the watcher has
// exited, but for one running a callback at that moment, which runs
// nothing after it: Stop never waits for a callback, since it may be
// called from one (Done waits for that too). It is idempotent, and
// returns from anywhere: a handler, the body of an Events loop, another
// goroutine.
func (w *Watcher) Stop() {
	idle := w.halt()
	<-w.ended
	for _, l := range idle {
		<-l.exited
	}
}

// startOwn registers the watcher's own handlers, OnSynced and OnError, if
// it has any, as the first listener (with no replay: a resumed watcher's
// restored entries are no events).
func (w *Watcher) startOwn() error {
	handlers := make([]AnyHandler, len(w.bindings))
	has := w.cfg.OnSynced != nil || w.cfg.OnError != nil
	for i, b := range w.bindings {
		handlers[i] = b.ownHandler()
		has = has || b.hasHandler()
	}
	if !has {
		return nil
	}
	w.own = w.newRegistration(w.cfg.OnSynced, w.cfg.OnError)
	return w.register(w.own, handlers, false, true)
}

// Filters returns the normalized subject filters of the watcher's consumer,
// sorted; none when it watches nothing. The caller owns the slice.
func (w *Watcher) Filters() []string { return slices.Clone(w.currentFilters()) }

// Bucket returns the watched bucket's name: the schema's, or the one
// WithBucket gave.
func (w *Watcher) Bucket() string { return w.bucket }

// filtersFor returns the consumer filters of scopes: their subjects,
// normalized, within the maximum count. Scope subjects are literal tokens
// with an optional trailing ">", which normalization never widens (see
// subjects.Normalize): the filters match exactly the keys in scope, and the
// server does all the filtering.
func (w *Watcher) filtersFor(scopes Scopes) ([]string, error) {
	scoped, err := w.scopeSubjects(scopes)
	if err != nil {
		return nil, err
	}
	filters, _ := subjects.Normalize(scoped)
	if err := w.checkFilterCount(filters); err != nil {
		return nil, err
	}
	return filters, nil
}

// matchesScopes reports whether key matches a scope filter.
func (w *Watcher) matchesScopes(key string) bool { return w.scopeKeys.Matches(key) }

// Consumer creation costs O(F²) in the number of filters F, because the
// server checks every pair, and it is paid at creation and again at every
// reset of the consumer (BENCHMARKS.md, Design decisions: "consumer.go:
// creation cost O(F²) and createTimeout"). Above warnFilters a watcher
// logs a warning; above its maximum (WithMaxFilters) it refuses to start.
const warnFilters = 1000

// checkFilterCount refuses more filters than the configured maximum and
// warns above warnFilters, with the cost that comes with them.
func (w *Watcher) checkFilterCount(filters []string) error {
	n := len(filters)
	if n > w.cfg.MaxFilters {
		return fmt.Errorf("%w: %d filters, at most %d (WithMaxFilters): consumer creation costs the server O(filters²), "+
			"again at every reset (see BENCHMARKS.md); split the scopes over several watchers or use broader scopes",
			kvwatch.ErrTooManyFilters, n, w.cfg.MaxFilters)
	}
	if n > warnFilters {
		w.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn, "kvwatch: many subject filters on one consumer",
			slog.String("bucket", w.bucket), slog.Int("filters", n),
			slog.String("cost", "consumer creation costs the server O(filters²), again at every reset; see BENCHMARKS.md"))
	}
	return nil
}

// keyMatcher matches keys against subject filters of this bucket.
func (w *Watcher) keyMatcher(filters []string) *subjects.Matcher {
	keys := make([]string, len(filters))
	for i, f := range filters {
		keys[i] = strings.TrimPrefix(f, w.subjectPrefix)
	}
	return subjects.NewMatcher(keys)
}

// deliver prepares and commits one raw entry on the event goroutine: the
// cache change and the revision, and the event queued for the handlers,
// in one critical section of the state lock (so that a revision Stats
// reports has its events queued; see Stats.Queued). The entry is passed
// by value: a pointer would move it to the heap, once per message.
func (w *Watcher) deliver(e rawEntry) {
	p := w.prepare(e, false)
	w.state.mu.Lock()
	if p.applyLocked(w) {
		p.after(w)
	}
	w.state.mu.Unlock()
	if w.cfg.OnApplied != nil {
		w.cfg.OnApplied()
	}
}

// deliverBatch applies entries, the changes of one atomic batch as the
// consumer delivered them, under one lock: no cache reader and no
// checkpoint sees part of them. Their events are queued in order.
func (w *Watcher) deliverBatch(entries []rawEntry) {
	ps := make([]prepared, len(entries))
	for i, e := range entries {
		ps[i] = w.prepare(e, true)
	}
	w.state.mu.Lock()
	for _, p := range ps {
		if p.applyLocked(w) {
			p.after(w)
		}
	}
	w.state.mu.Unlock()
	if w.cfg.OnApplied != nil {
		w.cfg.OnApplied()
	}
}

// prepare routes one raw entry to the binding whose template it matches
// and prepares it there. An entry matching no template only advances the
// revision, and is reported.
func (w *Watcher) prepare(e rawEntry, owned bool) prepared {
	for i, t := range w.templates {
		if t.Match(e.key) {
			return w.bindings[i].prepare(e, owned)
		}
	}
	return &unknownEntry{e: e}
}

// unknownEntry is an entry in scope that matches no template.
type unknownEntry struct{ e rawEntry }

func (u *unknownEntry) applyLocked(w *Watcher) bool {
	w.commitRevisionLocked(&u.e)
	return !w.skips(&u.e)
}

// after counts the entry, and reports it if its key is one to report
// (unknownKeys).
func (u *unknownEntry) after(w *Watcher) {
	w.stats.unknownKeys.Add(1)
	if err := w.unknownKeys.report(u.e.key, u.e.revision); err != nil {
		w.reportSkipped(err)
	}
}

// commitRevision records that an ordered entry was applied.
func (w *Watcher) commitRevision(e *rawEntry) {
	if !e.ordered {
		return
	}
	w.state.mu.Lock()
	w.commitRevisionLocked(e)
	w.state.mu.Unlock()
}

// commitRevisionLocked is commitRevision with the state lock held, in the
// same critical section as the cache change, so that a checkpoint never
// sees a cache ahead of (or behind) its revision. The revision never goes
// back: after SetScopes read an added scope from a replica behind the
// watcher, the tail delivers its entries from there.
func (w *Watcher) commitRevisionLocked(e *rawEntry) {
	w.noteApplied(e)
	if e.ordered && e.revision > w.state.revision {
		w.state.revision = e.revision
	}
}

// older reports whether e is older than the entry at revision rev the
// cache holds for its key, or the same one again from the stream (a read
// of the same entry is nothing new: see unchanged in commit). Revisions of
// one stream only compare with each other (otherStream).
func (w *Watcher) older(e *rawEntry, rev uint64) bool {
	return !w.otherStream && (e.revision < rev || (e.revision == rev && !e.initial))
}

// skips reports whether an ordered entry is one a read already delivered
// (the plan's dedupe window).
func (w *Watcher) skips(e *rawEntry) bool { return w.plan != nil && w.plan.skip.covers(e) }

// raiseRevision moves the watcher's revision up to rev: a seal read the
// stream up to it.
func (w *Watcher) raiseRevision(rev uint64) {
	w.state.mu.Lock()
	w.state.revision = max(w.state.revision, rev)
	w.state.mu.Unlock()
}

// setStreamCreated records the creation time of the stream the caches
// come from.
func (w *Watcher) setStreamCreated(t time.Time) {
	w.state.mu.Lock()
	w.state.streamCreated = t
	w.state.mu.Unlock()
}

// setRevision sets the revision the caches reflect (after the initial
// state was read at it).
func (w *Watcher) setRevision(rev uint64) {
	w.state.mu.Lock()
	w.state.revision = rev
	w.state.mu.Unlock()
}

// keyOf returns the key of a subject of this bucket.
func (w *Watcher) keyOf(subject string) (string, bool) {
	return strings.CutPrefix(subject, w.subjectPrefix)
}

// streamErr wraps an error of a stream request, mapping a missing stream
// to jetstream.ErrBucketNotFound.
func (w *Watcher) streamErr(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return bucketNotFound(w.js, w.bucket)
	}
	return fmt.Errorf("kvwatch: bucket %s: %w", w.bucket, err)
}
