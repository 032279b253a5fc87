package kvwatchimpl

import (
	"context"
	"slices"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// WithSyncPointHook makes a watcher call f, on its event goroutine, with a
// checkpoint of its caches at every sync point (when it is synced, and
// when a SetScopes change is sealed); the function f returns, if any,
// then runs in order with the events of its own handlers: they have had
// every event up to the sync point, and none after. The robustness test
// checks each against the recorded history of writes.
func WithSyncPointHook(f func(Checkpoint) func()) kvwatch.Option {
	return func(c *config.Watch) { c.OnSyncPoint = f }
}

// RegistrationState is what AddHandlers saw when it took its snapshot of
// the caches (see ProbeRegistration).
type RegistrationState struct {
	// Revision is the watcher's revision then: the last revision applied
	// in stream order.
	Revision uint64
	// Synced and Rescoping: whether the watcher was synced, and whether a
	// SetScopes change was being brought in (the caches were then no
	// state of the filters).
	Synced, Rescoping bool
	// Filters are the watcher's filters then.
	Filters []string
	// Cached is the number of entries in the caches of every binding:
	// the events of the replay of a registration of all the kinds.
	Cached int
}

// ProbeRegistration returns a handler for AddHandlers that handles no
// kind: when AddHandlers attaches it, with the state lock held, in the
// same critical section as the snapshot of the caches and the insertion
// of the registration's other handlers, it calls f with what the watcher
// is at. f must not call the watcher.
func ProbeRegistration(f func(RegistrationState)) AnyHandler { return &probe{f: f} }

type probe struct{ f func(RegistrationState) }

func (p *probe) attachLocked(r *Registration) func() {
	w := r.w
	s := RegistrationState{Revision: w.state.revision, Synced: w.isSynced(), Rescoping: w.state.rescoping,
		Filters: slices.Clone(w.currentFilters())}
	for _, b := range w.bindings {
		s.Cached += b.lenLocked()
	}
	p.f(s)
	return nil
}

func (p *probe) detachLocked(*Registration) {}

// ProbeBinding is ProbeRegistration for Watcher.Events: passed with the
// watcher's bindings, it adds the probe to the loop's registration and
// delivers nothing. Events calls only its streamHandler.
func ProbeBinding(f func(RegistrationState)) AnyBinding { return probeBinding{f: f} }

type probeBinding struct {
	AnyBinding // nil: no other method is called
	f          func(RegistrationState)
}

func (p probeBinding) streamHandler(func(kvwatch.AnyEvent)) AnyHandler { return ProbeRegistration(p.f) }

// MaxQueued is how many changes a set of handlers may have queued before
// the watcher stops reading from the server.
const MaxQueued = maxQueued

// UpTo is how WaitRevision decides, each time it checks, whether every
// change up to rev within the watcher's scopes is in its caches.
func (w *Watcher) UpTo(ctx context.Context, rev uint64) (bool, error) { return w.upTo(ctx, rev) }

// WithReplicaBehind makes the watcher's direct gets of the entry at or
// after a revision (the checks of its stream) answer "none" where behind
// returns true, as a replica of a replicated stream that has not stored
// that revision yet answers.
func WithReplicaBehind(behind func(seq uint64) bool) kvwatch.Option {
	return func(c *config.Watch) { c.ReplicaBehind = behind }
}

// WithInfoBehind makes the watcher's checks of its stream take the
// stream info's last sequence as one below the watcher's revision rev
// where behind returns true, as an answer from a leader in touch with its
// replicas that lacks the newest entry the watcher applied.
func WithInfoBehind(behind func(rev uint64) bool) kvwatch.Option {
	return func(c *config.Watch) { c.InfoBehind = behind }
}

// WithApplyHook makes a watcher call f on its event goroutine after each
// apply to its caches (an entry, or an atomic batch whole), outside the
// state lock: what a cache reader can see between two applies.
func WithApplyHook(f func()) kvwatch.Option { return func(c *config.Watch) { c.OnApplied = f } }

// WithReadPath sets how the initial state is read (config.Watch.ReadPath):
// "choose" chooses between direct get and the consumer by the share of
// the bucket the scopes hold on every read, also when the state fits one
// answer (otherwise read by direct get at once: the robustness test's
// buckets are small); "direct-get" and "consumer" take that way.
func WithReadPath(path string) kvwatch.Option { return func(c *config.Watch) { c.ReadPath = path } }

// EndFeed ends the live tail's feed of its consumer's messages, as a
// broken delivery would (no SetScopes request waits): the tail fails, and
// the watcher retries. It reports false, doing nothing, until the tail is
// live and waits for messages (right after OnSynced the event goroutine
// may not be back there yet).
func (w *Watcher) EndFeed() bool { return w.interruptTail() }
