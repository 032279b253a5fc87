package kvwatch

import (
	"fmt"
	"time"
)

// Kind describes one kind of entry of a bucket: its key template, its
// typed key parser and its value codec. Generated code declares one per
// kind; it is read-only after that.
type Kind[K comparable, V any] struct {
	// Name is the Go name of the kind, e.g. "Route"; used in errors.
	Name string
	// Bucket is the name of the bucket the kind belongs to.
	Bucket string
	// Template is the key template, e.g. "vpc.{vpc}.route.{route_id}".
	Template string
	// ParseKey parses a key matching Template into K.
	ParseKey func(string) (K, error)
	// FormatKey formats K as a key; ParseKey(FormatKey(k)) == k for every
	// valid key.
	FormatKey func(K) string
	// Codec converts values.
	Codec Codec[V]
}

// Binding attaches a Kind to one watcher: the handler that receives its
// events and the cache that holds its current entries. Create it with Bind
// and pass it to Start; do not share it between watchers.
type Binding[K comparable, V any] struct {
	kind    *Kind[K, V]
	handler func(Event[K, V])
	cache   *Cache[K, V]
}

// Bind creates a Binding of kind with handler, which may be nil: the
// cache is kept either way.
func Bind[K comparable, V any](kind *Kind[K, V], handler func(Event[K, V])) *Binding[K, V] {
	return &Binding[K, V]{kind: kind, handler: handler, cache: newCache[K, V]()}
}

// Cache returns the binding's read-only cache.
func (b *Binding[K, V]) Cache() *Cache[K, V] { return b.cache }

// AnyBinding is a *Binding of any key and value type, as Start takes them.
// It is implemented only by *Binding.
type AnyBinding interface {
	kindName() string
	keyTemplate() string
	apply(d *dispatcher, e *rawEntry)
}

func (b *Binding[K, V]) kindName() string    { return b.kind.Name }
func (b *Binding[K, V]) keyTemplate() string { return b.kind.Template }

// rawEntry is one KV record as read from the stream, before typing.
type rawEntry struct {
	key      string
	value    []byte
	op       Op
	revision uint64
	created  time.Time
	initial  bool
}

// apply types e, updates the cache and calls the handler. Entries that
// cannot be typed are reported through d and skipped.
func (b *Binding[K, V]) apply(d *dispatcher, e *rawEntry) {
	key, err := b.kind.ParseKey(e.key)
	if err != nil {
		d.reportData(&DataError{Kind: b.kind.Name, Key: e.key, Revision: e.revision, Err: err})
		return
	}
	ev := Event[K, V]{Op: e.op, Key: key, Revision: e.revision, Created: e.created, Initial: e.initial}
	if e.op == OpPut {
		v, err := b.kind.Codec.Decode(e.value)
		if err != nil {
			b.cache.delete(key)
			d.reportData(&DataError{Kind: b.kind.Name, Key: e.key, Revision: e.revision, Err: err})
			return
		}
		ev.Value = v
		ev.Prev, ev.HasPrev = b.cache.put(key, Item[V]{Value: v, Revision: e.revision, Created: e.created})
	} else {
		ev.Prev, ev.HasPrev = b.cache.delete(key)
		if e.initial && !ev.HasPrev {
			return // not part of the state being listed: nothing to tell
		}
	}
	d.counted(b.kind.Name, e.op)
	if b.handler == nil {
		return
	}
	d.call(b.kind.Name, e, func() { b.handler(ev) })
}

// checkBindings compiles the templates of the bindings, in order.
func checkBindings(bindings []AnyBinding) ([]*Template, error) {
	out := make([]*Template, len(bindings))
	for i, b := range bindings {
		t, err := CompileTemplate(b.keyTemplate())
		if err != nil {
			return nil, fmt.Errorf("kvwatch: kind %s: %w", b.kindName(), err)
		}
		out[i] = t
	}
	return out, nil
}
