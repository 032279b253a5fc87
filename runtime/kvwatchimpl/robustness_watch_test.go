package kvwatchimpl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file is the robustness test's watcher side: each watcher records
// what it delivers in every life (a start, or a resume from a checkpoint,
// until it stops), with the caches at each sync point, for checks against
// the history once the run is over.

// revent is one delivered event, flattened.
type revent struct {
	key      string
	op       kvwatch.Op
	value    string // JSON of the value, for puts
	rev      uint64
	initial  bool
	left     bool // LeftScope
	unknown  bool // FinalStateUnknown
	inferred bool // LeftScope or FinalStateUnknown: no entry of the stream
	// sync marks a sync point in the sequence (no event), with the
	// filters and the bucket's incarnation then.
	sync    bool
	filters []string
	epoch   int
	// dropped marks a data error in the sequence (no event): the value at
	// rev did not decode, and the watcher took key out of its cache.
	dropped bool
	// rewound marks the watcher's report that the store went back (no
	// event): the life is checked in two parts (robustness_rewind_test.go).
	rewound bool
}

// newRevent flattens an event.
func newRevent(key string, op kvwatch.Op, value any, rev uint64, initial, left, unknown bool) revent {
	e := revent{key: key, op: op, rev: rev, initial: initial, left: left, unknown: unknown, inferred: left || unknown}
	if op == kvwatch.OpPut {
		b, _ := json.Marshal(value)
		e.value = string(b)
	}
	return e
}

// life is one run of a watcher, from Start to its end.
type life struct {
	// epoch is the bucket's incarnation the watcher started on; one that
	// started with nothing to watch reads the bucket when scopes are
	// added, maybe another incarnation (see checkLife).
	epoch int
	// resumed is the checkpoint it resumed from, if any, the epoch it was
	// taken in, and how the watcher caught up ("delta" or "relist").
	resumed      *kvwatchimpl.Checkpoint
	resumedEpoch int
	resumePath   string
	// statePath is how its initial state was read (Stats.InitialState),
	// for the run's report: the test's traffic must reach every way.
	statePath string
	// startFilters are the filters it started with.
	startFilters []string
	mu           sync.Mutex
	events       []revent
	syncs        []kvwatchimpl.Checkpoint
	consumers    map[string]bool // prefixes of its consumers' names
	ended        error           // the error the watch ended on, if it did
	// reported holds the revisions of the entries reported as data
	// errors (undecodable values): never events.
	reported map[uint64]bool
	// log keeps the watcher's debug log, shown when a check fails.
	log lineLog

	// The bindings the watcher was started with: registrations and loops
	// over its events are made of them (robustness_shared_test.go).
	routes  *kvwatchimpl.Binding[routeKey, route]
	configs *kvwatchimpl.Binding[vpcKey, vpcConfig]
	// regs are the registrations and loops added to the watcher.
	regs []*rreg
	// syncedAt is len(events) when the watcher's own OnSynced ran, -1 if
	// it did not.
	syncedAt int
	// stopAt is len(events) when Stop was called, -1 if it was not (the
	// watch ended on its own).
	stopAt int
	// final is the checkpoint that matched the bucket's final state at
	// the end of the run (converge), and quiet is set once the watcher's
	// events (with its data errors) made that state too (quiesce).
	final *kvwatchimpl.Checkpoint
	quiet bool
	// noRegs is set once the store is about to go back (storeGoesBack):
	// no registration starts in this life after. logShift is how many
	// entries of the whole life's log precede this part's (a part of a life
	// the store going back split: robustness_rewind_test.go).
	noRegs   bool
	logShift int
	// goneBack records where in its log the store went back
	// (storeGoesBack): a watcher that had applied nothing past the
	// revision the store kept has nothing to notice (rewind.go), and goes
	// on with the new history (goneBackEpoch).
	goneBack []goneBackAt
	// syncEpoch is the history's epoch at the watcher's last sync point,
	// recorded on the event goroutine when it syncs (the sync point's
	// event in events is recorded by its handlers, which Stop may cut
	// short): what readEpoch takes when events hold no sync point and it
	// is above the life's own.
	syncEpoch int
	// hookedScopes are the filters of every sync point, recorded on the
	// event goroutine as it is reached; the first loggedSyncs of them are
	// in events too. Those past them, which Stop cut off with the
	// handlers, still changed the scopes a registration's events past
	// the cut were delivered in (checkReg).
	hookedScopes []hookedSync
	loggedSyncs  int
	// lateChange is set when a SetScopes from user code was cut short by
	// the end of the run: its change may come after quiesce.
	lateChange bool
}

// lineLog is a slog handler keeping the last 400 lines logged, but for
// entries skipped (bad data) unless skipped is set.
type lineLog struct {
	skipped bool
	mu      sync.Mutex
	lines   []string
}

func (h *lineLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *lineLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *lineLog) WithGroup(string) slog.Handler            { return h }
func (h *lineLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "kvwatch: skipped" && !h.skipped {
		return nil // bad data, on purpose: noise here
	}
	line := r.Time.Format("15:04:05.000") + " " + r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	h.note(line)
	return nil
}

func (h *lineLog) note(line string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.lines) >= 400 {
		h.lines = h.lines[100:]
	}
	h.lines = append(h.lines, line)
}

// last returns the last n lines.
func (h *lineLog) last(n int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.lines[max(0, len(h.lines)-n):], "\n")
}

func (h *lineLog) text() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.lines, "\n")
}

func (l *life) add(e revent) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// robustWatcher is one watcher of the run across its lives.
type robustWatcher struct {
	id  int
	js  jetstream.JetStream
	run *robustRun

	mu      sync.Mutex
	w       *kvwatchimpl.Watcher
	current *life
	lives   []*life
	// saved is the last checkpoint taken, as JSON: what a node would keep
	// on disk to resume from; savedEpoch the bucket's incarnation then.
	saved      []byte
	savedEpoch int

	// Set by the driver, read by handlers: a handler sleeps slow (ns);
	// the next callback of each kind makes the call inCall holds
	// (robustness_calls_test.go), counted in made (mu).
	slow   atomic.Int64
	inCall [callees]atomic.Pointer[callPlan]
	made   callsMade
	// regMu makes adding a registration and ending them all (before the
	// store goes back) exclusive.
	regMu sync.Mutex
	// wentBack counts its reports that the store went back.
	wentBack atomic.Int64
}

// savedCheckpoint is a checkpoint as JSON, typed as generated code types
// it.
type savedCheckpoint struct {
	Revision      uint64
	Filters       []string
	StreamCreated time.Time
	Routes        []kvwatch.Entry[routeKey, route]
	Configs       []kvwatch.Entry[vpcKey, vpcConfig]
}

func (s savedCheckpoint) checkpoint() kvwatchimpl.Checkpoint {
	cp := kvwatchimpl.Checkpoint{Revision: s.Revision, Filters: s.Filters, StreamCreated: s.StreamCreated}
	kvwatchimpl.WithEntries(&cp, &routeKind, s.Routes)
	kvwatchimpl.WithEntries(&cp, &vpcKind, s.Configs)
	return cp
}

// start starts a life: fresh, or resumed from the saved checkpoint.
func (rw *robustWatcher) start(scopes kvwatchimpl.Scopes, resume bool) error {
	l := &life{epoch: rw.run.hist.currentEpoch(), consumers: map[string]bool{}, reported: map[uint64]bool{}, stopAt: -1, syncedAt: -1}
	var opts []kvwatch.Option
	if resume && rw.saved != nil {
		var s savedCheckpoint
		if err := json.Unmarshal(rw.saved, &s); err != nil {
			return err
		}
		// The watcher takes the entries over: the life keeps a copy of its
		// own to check with.
		var kept savedCheckpoint
		_ = json.Unmarshal(rw.saved, &kept)
		keptCP := kept.checkpoint()
		l.resumed, l.resumedEpoch = &keptCP, rw.savedEpoch
		opts = append(opts, kvwatchimpl.Resume(s.checkpoint()))
		l.log.note(fmt.Sprintf("resuming from a checkpoint at %d of epoch %d (stream created %s, %d+%d entries), now epoch %d",
			s.Revision, rw.savedEpoch, s.StreamCreated.Format(time.RFC3339Nano), len(s.Routes), len(s.Configs), l.epoch))
	}
	var self atomic.Pointer[kvwatchimpl.Watcher]
	routes := kvwatchimpl.Bind(&routeKind, func(ev kvwatch.Event[routeKey, route]) {
		rw.handle(l, &self, ev.Key.String(), ev.Op, ev.Value, ev.Revision, ev.Initial, ev.LeftScope, ev.FinalStateUnknown)
	})
	configs := kvwatchimpl.Bind(&vpcKind, func(ev kvwatch.Event[vpcKey, vpcConfig]) {
		rw.handle(l, &self, ev.Key.String(), ev.Op, ev.Value, ev.Revision, ev.Initial, ev.LeftScope, ev.FinalStateUnknown)
	})
	l.routes, l.configs = routes, configs
	opts = append(opts,
		kvwatch.WithLogger(slog.New(&l.log)),
		kvwatchimpl.OnSynced(func() {
			if w := self.Load(); w != nil && !w.Synced() {
				rw.run.violation("watcher %d: its OnSynced ran, the watcher not synced", rw.id)
			}
			l.mu.Lock()
			l.syncedAt = len(l.events)
			l.mu.Unlock()
		}),
		kvwatchimpl.WithSyncPointHook(func(cp kvwatchimpl.Checkpoint) func() {
			epoch := rw.run.hist.currentEpoch() // now, at the sync point
			l.mu.Lock()
			l.syncEpoch = epoch
			l.hookedScopes = append(l.hookedScopes, hookedSync{rev: cp.Revision, filters: cp.Filters})
			l.mu.Unlock()
			return func() {
				l.log.note(fmt.Sprintf("sync point at %d, filters %v", cp.Revision, cp.Filters))
				for self.Load() == nil { // Start has not returned yet
					time.Sleep(time.Millisecond)
				}
				st := self.Load().Stats()
				l.mu.Lock()
				if l.resumePath == "" {
					l.resumePath = st.Resume
				}
				if l.statePath == "" {
					l.statePath = st.InitialState
				}
				l.syncs = append(l.syncs, cp)
				l.events = append(l.events, revent{sync: true, rev: cp.Revision, filters: cp.Filters, epoch: epoch})
				l.loggedSyncs++
				l.mu.Unlock()
			}
		}),
		kvwatchimpl.OnError(func(err error) {
			var data *kvwatch.DataError
			var unknown *kvwatch.UnknownKeyError
			var wentBack *kvwatch.StreamWentBackError
			if errors.As(err, &wentBack) {
				l.mu.Lock()
				// With the epoch now: the store went back before the watcher
				// could see it (storeGoesBack begins the epoch while the
				// server is down).
				l.events = append(l.events, revent{rewound: true, rev: wentBack.Revision, epoch: rw.run.hist.currentEpoch()})
				l.mu.Unlock()
				rw.wentBack.Add(1)
				// Said, with what led to it: a report where no loss was
				// injected is a finding.
				rw.run.noteReport(fmt.Sprintf("watcher %d: %v; its last log lines:\n%s", rw.id, err, l.log.last(20)))
				return
			}
			if errors.As(err, &data) {
				l.mu.Lock()
				l.reported[data.Revision] = true
				// In the sequence: the key left the cache (registrations
				// are not told, as handlers are not).
				l.events = append(l.events, revent{dropped: true, key: data.Key, rev: data.Revision})
				l.mu.Unlock()
			}
			if !errors.As(err, &data) && !errors.As(err, &unknown) {
				l.mu.Lock()
				l.ended = err
				l.mu.Unlock()
			}
		}),
		kvwatch.WithHeartbeat(time.Second), kvwatch.WithInactiveThreshold(5*time.Second), kvwatch.WithRequestTimeout(2*time.Second),
		// Small buckets read by the consumer too, where the scopes hold
		// most of them (readpath.go).
		kvwatchimpl.WithReadPath("choose"))
	w, err := kvwatchimpl.Start(context.Background(), rw.js, &network, scopes, []kvwatchimpl.AnyBinding{routes, configs}, opts...)
	if err != nil {
		return err
	}
	self.Store(w)
	l.startFilters = w.Filters()
	rw.mu.Lock()
	rw.w, rw.current = w, l
	rw.lives = append(rw.lives, l)
	rw.mu.Unlock()
	return nil
}

// handle records an event and does what the driver asked handlers to do.
func (rw *robustWatcher) handle(l *life, self *atomic.Pointer[kvwatchimpl.Watcher], key string, op kvwatch.Op, value any, rev uint64, initial, left, unknown bool) {
	l.add(newRevent(key, op, value, rev, initial, left, unknown))
	if d := rw.slow.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	rw.calls(fromHandler, l, self.Load())
}

// watcher returns the running watcher and its life.
func (rw *robustWatcher) watcher() (*kvwatchimpl.Watcher, *life) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.w, rw.current
}

// noteConsumer records the prefix of the watcher's current consumer.
func (rw *robustWatcher) noteConsumer() { noteConsumerOf(rw.watcher()) }

// noteConsumerOf records the prefix of the consumer of w, the watcher of
// life l.
func noteConsumerOf(w *kvwatchimpl.Watcher, l *life) {
	if name := w.Stats().Consumer; name != "" {
		l.mu.Lock()
		l.consumers[consumerPrefix(name)] = true
		l.mu.Unlock()
	}
}

// consumerPrefix is a watcher's part of its consumers' names
// (kvw_<token>_<n>).
func consumerPrefix(name string) string {
	if i := strings.LastIndexByte(name, '_'); i > 0 {
		return name[:i]
	}
	return name
}

// save takes a checkpoint and keeps it as JSON; before sync (and while
// SetScopes brings scopes in) there is none to take.
func (rw *robustWatcher) save() {
	w, _ := rw.watcher()
	cp, err := w.Checkpoint()
	if err != nil {
		return
	}
	s := savedCheckpoint{Revision: cp.Revision, Filters: cp.Filters, StreamCreated: cp.StreamCreated,
		Routes: kvwatchimpl.EntriesOf(cp, &routeKind), Configs: kvwatchimpl.EntriesOf(cp, &vpcKind)}
	data, err := json.Marshal(s)
	if err != nil {
		rw.run.violation("watcher %d: checkpoint to JSON: %v", rw.id, err)
		return
	}
	rw.mu.Lock()
	rw.saved, rw.savedEpoch = data, rw.current.epoch
	rw.mu.Unlock()
}

// stop stops the running watcher and checks that it leaves no consumer.
func (rw *robustWatcher) stop(healthy bool) {
	w, l := rw.watcher()
	rw.noteConsumer()
	rw.endLoops(l) // before Stop: a loop's registration is removed, not cut short
	l.mu.Lock()
	if l.stopAt < 0 {
		l.stopAt = len(l.events)
	}
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { w.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		rw.run.violation("watcher %d: Stop did not return within 10 s", rw.id)
		return
	}
	rw.checkConsumersGone(l, healthy)
}

// checkConsumersGone checks, once Stop has returned, that the watcher of
// life l left no consumer on the stream; not after a fault (a consumer on
// an unreachable server lingers until its inactive threshold).
func (rw *robustWatcher) checkConsumersGone(l *life, healthy bool) {
	if !healthy {
		return
	}
	l.mu.Lock()
	prefixes := l.consumers
	l.mu.Unlock()
	// A cluster lists consumers from the stream leader's view, which can
	// lag the deletion by a moment: gone within a second is gone.
	var left []string
	for deadline := time.Now().Add(time.Second); ; time.Sleep(50 * time.Millisecond) {
		left = left[:0]
		for name := range rw.run.consumers(context.Background()) {
			if prefixes[consumerPrefix(name)] {
				left = append(left, name)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		rw.run.violation("watcher %d: consumers %v still on the stream a second after Stop; its log:\n%s", rw.id, left, l.log.text())
	}
}

// randomScopes returns 1 to 4 VPCs of n, now and then with a single route
// scope, or (rarely) nothing.
func randomScopes(rng *rand.Rand, n int) kvwatchimpl.Scopes {
	var s kvwatchimpl.Scopes
	if rng.IntN(25) == 0 {
		return s
	}
	count := 1 + rng.IntN(min(4, n))
	if rng.IntN(5) == 0 {
		count = n // every VPC: most of the bucket, read by the consumer
	}
	for _, i := range rng.Perm(n)[:count] {
		s.Values = append(s.Values, kvwatchimpl.ScopeValue{Scope: 0, Params: []string{fmt.Sprintf("v%d", i)}})
	}
	if rng.IntN(4) == 0 {
		vpc := fmt.Sprintf("v%d", rng.IntN(n))
		s.Values = append(s.Values, kvwatchimpl.ScopeValue{Scope: 1, Params: []string{vpc, fmt.Sprintf("r%d", rng.IntN(40))}})
	}
	return s
}
