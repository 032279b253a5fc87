package kvwatchimpl

import (
	"fmt"
	"sync"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// For generated code. Binding attaches a Kind to one watcher: the handler that receives its
// events and the cache that holds its current entries. Create it with Bind
// and pass it to Start; do not share it between watchers.
type Binding[K comparable, V any] struct {
	kind *Kind[K, V]
	// handler is the watcher's own handler of the kind: Start adds it to
	// the watcher's own registration (ownHandler).
	handler func(kvwatch.Event[K, V])
	cache   *Cache[K, V]
	stats   kindCounters
	// unseen holds, during a re-list (a resumed watcher's, or a read
	// retried after it had delivered entries), the cached keys no entry
	// has confirmed yet; those left when the read is caught up are gone.
	unseen map[K]struct{}
	// scratch is reused by prepare: the event goroutine prepares and
	// commits one entry at a time, so one suffices (and spares an
	// allocation per event).
	scratch preparedEntry[K, V]
	// json and decoding decode the values of a kind with the JSON codec
	// (decodeWith): decoding is reused as scratch is.
	json     *JSON[V]
	decoding *fastDecoding[V]
	// calls pools the queue entries of its events (*eventCall, shared.go).
	calls sync.Pool
	// regs are the handlers of the kind, the watcher's own first, then
	// those AddHandlers and Events added; guarded by the state lock and
	// copied on write (shared.go).
	regs []regHandler[K, V]
}

// For generated code. Bind creates a Binding of kind with handler, which may be nil: the
// cache is kept either way.
func Bind[K comparable, V any](kind *Kind[K, V], handler func(kvwatch.Event[K, V])) *Binding[K, V] {
	b := &Binding[K, V]{kind: kind, handler: handler, cache: newCache(kind)}
	if j, ok := kind.Codec.(JSON[V]); ok {
		b.json, b.decoding = &j, new(fastDecoding[V])
	}
	return b
}

// Cache returns the binding's read-only cache.
func (b *Binding[K, V]) Cache() *Cache[K, V] { return b.cache }

// For generated code. AnyBinding is a *Binding of any key and value type, as Start takes them.
// It is implemented only by *Binding.
type AnyBinding interface {
	kindName() string
	keyTemplate() (*Template, error)
	check() error
	counters() *kindCounters
	attach(w *Watcher)
	prepare(e rawEntry, owned bool) prepared
	restore(entries any, inScope func(string) bool, note func(anchor)) (n int, oldest uint64, err error)
	entriesLocked() any
	cloneEntries(entries any) any
	lenLocked() int
	reserveLocked(n int)
	fitLocked()
	beginRelist(match func(raw string) bool)
	cancelRelist()
	endRelistLocked(w *Watcher, revision uint64) (deliver func())
	leaveScopeLocked(w *Watcher, inScope func(string) bool, revision uint64) (deliver func())
	streamHandler(send func(kvwatch.AnyEvent)) AnyHandler
	ownHandler() AnyHandler
	hasHandler() bool
}

func (b *Binding[K, V]) kindName() string                { return b.kind.Name }
func (b *Binding[K, V]) ownHandler() AnyHandler          { return HandlerOf(b, b.handler) }
func (b *Binding[K, V]) hasHandler() bool                { return b.handler != nil }
func (b *Binding[K, V]) keyTemplate() (*Template, error) { return b.kind.KeyTemplate() }
func (b *Binding[K, V]) counters() *kindCounters         { return &b.stats }

// check reports a Kind missing what the runtime calls.
func (b *Binding[K, V]) check() error {
	k := b.kind
	if k.ParseKey == nil || k.FormatKey == nil || k.Codec == nil {
		return fmt.Errorf("kvwatch: kind %s needs ParseKey, FormatKey and Codec", k.Name)
	}
	return nil
}

// attach makes the binding's cache share the watcher's state lock.
func (b *Binding[K, V]) attach(w *Watcher) {
	b.cache.st = &w.state
	b.cache.scopes = w
}

// rawEntry is one KV record as read from the stream, before typing.
type rawEntry struct {
	key   string
	value []byte
	op    kvwatch.Op
	// marker is the server's reason when the entry is a marker it wrote.
	marker   kvwatch.Marker
	revision uint64
	created  time.Time
	initial  bool
	// ordered is set for entries read in stream order (from the
	// consumer): applying one advances the watcher's revision.
	ordered bool
	// state is set for an entry that is its key's newest as a state is
	// read (a consumer delivering the last entry per subject), not a
	// change: a delete there is a key absent from the state, nothing to
	// deliver when the caches do not hold it. Any other delete is a write
	// and is delivered (a purge may have rolled up the put before it).
	state bool
}

// prepared is an entry typed and decoded, ready to commit: preparing
// parses and decodes and touches nothing shared; committing updates the
// cache and queues the event for the handlers, in stream order. Both run
// on the event goroutine.
type prepared interface {
	// applyLocked updates the caches, with the state lock held; it
	// reports whether after must run.
	applyLocked(w *Watcher) bool
	// after queues the event for the handlers, or reports what could not
	// be typed; with the state lock still held.
	after(w *Watcher)
}

// preparedEntry is a prepared entry of a binding.
type preparedEntry[K comparable, V any] struct {
	b      *Binding[K, V]
	e      rawEntry
	key    K
	value  V     // the decoded value: the handler's
	stored V     // the cache's deep copy
	err    error // the key did not parse (keyBad) or the value did not decode
	keyBad bool
	// ev is the event applyLocked made, for after, and regs the
	// registrations' handlers it goes to as well.
	ev   kvwatch.Event[K, V]
	regs []regHandler[K, V]
}

// prepare parses the key and, for a put, decodes and copies the value. The
// result is valid until the next prepare of the binding, unless owned is
// set (an entry of a batch, applied with the others).
func (b *Binding[K, V]) prepare(e rawEntry, owned bool) prepared {
	p := &b.scratch
	if owned {
		p = new(preparedEntry[K, V])
	}
	*p = preparedEntry[K, V]{b: b, e: e}
	p.key, p.err = b.kind.ParseKey(e.key)
	if p.err != nil {
		p.keyBad = true
		return p
	}
	if e.op == kvwatch.OpPut {
		if b.json != nil {
			p.value, p.err = b.json.decodeWith(b.decoding, e.value)
		} else {
			p.value, p.err = b.kind.Codec.Decode(e.value)
		}
		if p.err == nil {
			p.stored, p.err = b.safeClone(p.value)
		}
	}
	return p
}

// applyLocked updates the cache, with the state lock held, and reports
// whether after has something to do: queue the event, or report an entry
// that could not be typed (skipped; a value that does not decode also
// takes its key out of the cache: the cache holds current values only).
// Handlers run on their listeners' goroutines, after the change they see
// is in the cache.
//
// Ownership: the handler owns ev.Value (the cache keeps its own copy) and
// ev.Prev (no longer in the cache), so nothing a handler does can change
// the cache.
func (p *preparedEntry[K, V]) applyLocked(w *Watcher) bool {
	b, e := p.b, &p.e
	if p.err != nil {
		if w.skips(e) {
			w.commitRevisionLocked(e) // replayed after a read: reported already
			return false
		}
		if item, had := b.cache.items[p.key]; had && w.older(e, item.Revision) {
			w.commitRevisionLocked(e) // the cache holds a newer entry
			return false
		}
		if !p.keyBad {
			b.cache.deleteLocked(p.key)
			delete(b.unseen, p.key)
		}
		w.commitRevisionLocked(e)
		return true
	}

	item, had := b.cache.items[p.key]
	var old kvwatch.Item[V]
	if had {
		old = item.Item
	}
	if w.skips(e) && (!had || old.Revision >= e.revision) {
		// Replayed after a read (initial, or of scopes SetScopes added)
		// that already holds this revision or a newer one (or the key's
		// deletion).
		w.commitRevisionLocked(e)
		return false
	}
	delete(b.unseen, p.key) // a no-op on a nil map: no re-list running
	if had && w.older(e, old.Revision) {
		// The cache holds a newer entry of the key: this one comes from a
		// read answered by a replica behind the watcher (SetScopes
		// widening a scope), or a consumer replaying after a reset.
		w.commitRevisionLocked(e)
		return false
	}
	// An initial entry the cache already holds is nothing new: a restored
	// entry a re-list finds as it was, or an entry read again when a read
	// is retried. The same entry means the same revision and the same
	// time: a bucket deleted and made again can give another entry the
	// same revision, never the same nanosecond.
	unchanged := e.initial && had && old.Revision == e.revision && old.Created.Equal(e.created)
	stored := kvwatch.Item[V]{Value: p.stored, Revision: e.revision, Created: e.created}
	switch {
	case unchanged:
	case e.op == kvwatch.OpPut && had && len(b.cache.indexes) == 0:
		item.Item = stored // the common case, one map lookup
	case e.op == kvwatch.OpPut && !had:
		b.cache.addLocked(p.key, e.key, stored) // a new key: not looked up again
	case e.op == kvwatch.OpPut:
		b.cache.putLocked(p.key, e.key, stored)
	default:
		b.cache.deleteLocked(p.key)
	}
	w.commitRevisionLocked(e)

	if unchanged || (e.op != kvwatch.OpPut && e.state && !had) {
		return false // nothing changed, or a key absent from the state read
	}
	p.ev = kvwatch.Event[K, V]{Op: e.op, Key: p.key, Value: p.value, Prev: old.Value, HasPrev: had,
		Revision: e.revision, Created: e.created, Initial: e.initial, Marker: e.marker}
	p.regs = b.regs
	return true
}

func (p *preparedEntry[K, V]) after(w *Watcher) {
	b, e := p.b, &p.e
	if p.err != nil {
		b.stats.dataErrors.Add(1)
		de := &kvwatch.DataError{Kind: b.kind.Name, Key: e.key, Revision: e.revision, Err: p.err}
		if !p.keyBad {
			de.Value = e.value
		}
		w.reportSkipped(de)
		return
	}
	b.stats.count(e.op)
	b.dispatch(e, p.ev, p.regs)
}

// safeClone deep-copies v for the cache; a copy function that panics (an
// external type that does not round-trip) makes the entry a data error
// instead of ending the watch.
func (b *Binding[K, V]) safeClone(v V) (out V, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("copying the value for the cache: %v", p)
		}
	}()
	return b.kind.Copy(v), nil
}

// restore fills the cache from a checkpoint's entries (a []Entry[K, V]),
// dropping those outside the watcher's scopes, passes each kept one to
// note, and returns how many it kept and the oldest revision among them.
// The cache takes ownership of the values.
func (b *Binding[K, V]) restore(entries any, inScope func(string) bool, note func(anchor)) (n int, oldest uint64, err error) {
	list, ok := entries.([]kvwatch.Entry[K, V])
	if !ok && entries != nil {
		return 0, 0, fmt.Errorf("kvwatch: resume: entries for kind %s are %T, want []Entry of its key and value", b.kind.Name, entries)
	}
	for _, e := range list {
		raw := b.kind.FormatKey(e.Key)
		if !inScope(raw) {
			continue
		}
		b.cache.putLocked(e.Key, raw, kvwatch.Item[V]{Value: e.Value, Revision: e.Revision, Created: e.Created})
		note(anchor{revision: e.Revision, key: raw, created: e.Created})
		if n == 0 || e.Revision < oldest {
			oldest = e.Revision
		}
		n++
	}
	return n, oldest, nil
}

// entriesLocked returns the cache's entries as a []Entry[K, V], sorted by
// key. The caller holds the state lock.
func (b *Binding[K, V]) entriesLocked() any { return b.cache.listLocked(nil) }

// cloneEntries deep-copies the values of entriesLocked's result, outside
// the lock (cached values are never modified, only replaced).
func (b *Binding[K, V]) cloneEntries(entries any) any {
	return b.cache.cloneAll(entries.([]kvwatch.Entry[K, V]))
}

// lenLocked returns the cache size; the caller holds the state lock.
func (b *Binding[K, V]) lenLocked() int { return len(b.cache.items) }

// reserveLocked makes room for n entries in the cache if it is empty; the
// caller holds the state lock.
func (b *Binding[K, V]) reserveLocked(n int) { b.cache.reserveLocked(n) }

// fitLocked gives back what reserveLocked reserved and the state did not
// need; the caller holds the state lock.
func (b *Binding[K, V]) fitLocked() { b.cache.fitLocked() }

// beginRelist marks the cached keys that match unseen (every key when
// match is nil).
func (b *Binding[K, V]) beginRelist(match func(raw string) bool) {
	b.unseen = make(map[K]struct{}, len(b.cache.items))
	for k, item := range b.cache.items {
		if match == nil || match(item.key) {
			b.unseen[k] = struct{}{}
		}
	}
}

// cancelRelist forgets the unseen marks: the cache is trusted as it is.
func (b *Binding[K, V]) cancelRelist() { b.unseen = nil }

// endRelist delivers a delete, with its final state unknown, for every
// key the re-list did not find: it vanished while the watcher was away
// (or between a failed read and its retry), and the stream no longer says
// how.
// The caller holds the state lock, and runs what it returns with it held,
// once every binding has taken its keys out (Watcher.removeAll).
func (b *Binding[K, V]) endRelistLocked(w *Watcher, revision uint64) func() {
	if b.unseen == nil {
		return nil
	}
	unseen := b.unseen
	b.unseen = nil
	return b.removeLocked(w, revision, func(k K, _ string) bool { _, ok := unseen[k]; return ok },
		func(ev *kvwatch.Event[K, V]) { ev.Initial, ev.FinalStateUnknown = true, true })
}

// leaveScopeLocked removes the keys outside the watcher's new scopes, to be
// delivered each as a delete with LeftScope set (as endRelistLocked).
func (b *Binding[K, V]) leaveScopeLocked(w *Watcher, inScope func(string) bool, revision uint64) func() {
	return b.removeLocked(w, revision, func(_ K, raw string) bool { return !inScope(raw) },
		func(ev *kvwatch.Event[K, V]) { ev.LeftScope = true })
}

// removeLocked takes the entries that match out of the cache, with the
// state lock held, and returns their delivery, each as an OpDelete
// carrying its last value, in key order, marked by mark.
func (b *Binding[K, V]) removeLocked(w *Watcher, revision uint64, match func(K, string) bool, mark func(*kvwatch.Event[K, V])) func() {
	gone := b.cache.listLocked(match)
	if len(gone) == 0 {
		return nil
	}
	for _, e := range gone {
		b.cache.deleteLocked(e.Key)
	}
	regs := b.regs
	return func() { b.deliverRemoved(w, revision, gone, mark, regs) }
}

// deliverRemoved queues the removal of gone for the handlers.
func (b *Binding[K, V]) deliverRemoved(w *Watcher, revision uint64, gone []kvwatch.Entry[K, V], mark func(*kvwatch.Event[K, V]), regs []regHandler[K, V]) {
	for _, e := range gone {
		ev := kvwatch.Event[K, V]{Op: kvwatch.OpDelete, Key: e.Key, Prev: e.Value, HasPrev: true, Revision: revision}
		mark(&ev)
		b.stats.count(kvwatch.OpDelete)
		if len(regs) > 0 {
			raw := &rawEntry{key: b.kind.FormatKey(e.Key), revision: revision}
			b.dispatch(raw, ev, regs)
		}
	}
}

// checkBindings returns the key templates of the bindings, in order.
func checkBindings(bindings []AnyBinding) ([]*Template, error) {
	out := make([]*Template, len(bindings))
	for i, b := range bindings {
		if err := b.check(); err != nil {
			return nil, err
		}
		t, err := b.keyTemplate()
		if err != nil {
			return nil, fmt.Errorf("kvwatch: kind %s: %w", b.kindName(), err)
		}
		out[i] = t
	}
	return out, nil
}
