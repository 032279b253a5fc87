package kvwatchimpl

import (
	"cmp"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// cacheItem is an Item with its raw key, for sorting and scope matching.
type cacheItem[V any] struct {
	kvwatch.Item[V]
	key string
}

// state is what a watcher's caches share: one lock, so that a checkpoint
// sees every cache at one revision, and the revision itself.
type state struct {
	mu sync.RWMutex
	// revision is the last revision applied in stream order; every entry
	// up to it is reflected in the caches. Guarded by mu.
	revision uint64
	// rescoping is set while SetScopes brings scopes in: the caches are
	// not a state of the new scopes yet. Guarded by mu.
	rescoping bool
	// streamCreated is the creation time of the stream the caches come
	// from, for checkpoints. Guarded by mu.
	streamCreated time.Time
}

// scopePrefixer turns scope values into key prefixes; the watcher is one.
type scopePrefixer interface {
	keyPrefixes(Scopes) ([]string, error)
}

// Cache is the read-only, materialized view of one kind of entry within a
// watcher's scopes, like a Kubernetes lister. The watcher updates it before
// calling the handler for the same event, and it is exact (every key in
// scope with its current value) once the watcher is synced.
//
// Reads are safe from any goroutine. They hold the watcher's read lock only
// while they copy, and every value they return is a deep copy: callers own
// it and may modify it without touching the cache.
type Cache[K comparable, V any] struct {
	kind   *Kind[K, V]
	st     *state
	scopes scopePrefixer
	// items holds pointers: an update rewrites the item in place with one
	// map lookup, and growing the map moves 8 bytes per entry, not the
	// value. Items are rewritten whole, never modified field by field, so
	// a reader's copy taken under the lock stays valid after it.
	items map[K]*cacheItem[V] // guarded by st.mu
	// reserved is the room reserveLocked made for a state being read,
	// until fitLocked; guarded by st.mu.
	reserved int
	// indexes are those the kind declares (index.go), guarded by st.mu.
	indexes []*cacheIndex[K, V]
}

func newCache[K comparable, V any](kind *Kind[K, V]) *Cache[K, V] {
	c := &Cache[K, V]{kind: kind, st: &state{}, items: make(map[K]*cacheItem[V])}
	c.newIndexes()
	return c
}

// reserveLocked makes room for n entries when the cache is empty, as a
// large state is about to be read into it: a map grown entry by entry
// rehashes its entries at every step and leaves each outgrown table to the
// garbage collector, which showed in the client's cost per entry of an
// initial read (BENCHMARKS.md, Design decisions: "cache.go: room for the
// state before it is read"). The caller holds the state lock.
func (c *Cache[K, V]) reserveLocked(n int) {
	if len(c.items) == 0 && n > 0 {
		c.items = make(map[K]*cacheItem[V], n)
		c.reserved = n
	}
}

// fitLocked ends what reserveLocked began, once the state is read: a
// cache that holds less than a quarter of the room it got (a kind with few
// keys, the room being shared evenly among kinds) is copied into a map of
// its size, which a map never becomes by itself. The caller holds the
// state lock.
func (c *Cache[K, V]) fitLocked() {
	if c.reserved > 0 && len(c.items) < c.reserved/4 {
		items := make(map[K]*cacheItem[V], len(c.items)) // maps.Clone keeps the room
		maps.Copy(items, c.items)
		c.items = items
	}
	c.reserved = 0
}

// Get returns (a copy of) the current value of key.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	it, ok := c.GetItem(key)
	return it.Value, ok
}

// GetItem returns (a copy of) the current value of key with its revision.
func (c *Cache[K, V]) GetItem(key K) (kvwatch.Item[V], bool) {
	c.st.mu.RLock()
	p, ok := c.items[key]
	var it kvwatch.Item[V]
	if ok {
		it = p.Item
	}
	c.st.mu.RUnlock()
	if !ok {
		return kvwatch.Item[V]{}, false
	}
	it.Value = c.kind.Copy(it.Value)
	return it, true
}

// Len returns the number of cached keys.
func (c *Cache[K, V]) Len() int {
	c.st.mu.RLock()
	defer c.st.mu.RUnlock()
	return len(c.items)
}

// List returns (copies of) every entry, sorted by key.
func (c *Cache[K, V]) List() []kvwatch.Entry[K, V] {
	return c.ListFunc(nil)
}

// ListFunc returns (copies of) the entries whose key satisfies match,
// sorted by key: a list by partial key, such as
// func(k RouteKey) bool { return k.VPC == "blue" }. match runs under the
// read lock: keep it short and do not call the cache from it.
func (c *Cache[K, V]) ListFunc(match func(K) bool) []kvwatch.Entry[K, V] {
	c.st.mu.RLock()
	list := c.listLocked(func(k K, _ string) bool { return match == nil || match(k) })
	c.st.mu.RUnlock()
	return c.cloneAll(list)
}

// In returns (copies of) the entries under the given scope values, sorted
// by key: a list by scope, such as
// w.RouteCache().In(fleetkv.NetworkScopes{VPC: []string{"blue"}}). The
// values are checked like a watcher's (*ScopeError).
func (c *Cache[K, V]) In(scopes kvwatch.ScopeSet) ([]kvwatch.Entry[K, V], error) {
	if c.scopes == nil {
		return nil, nil // not attached to a watcher: nothing in any scope
	}
	s := scopes.KVWatchScopes()
	prefixes, err := c.scopes.keyPrefixes(s)
	if err != nil {
		return nil, err
	}
	c.st.mu.RLock()
	list := c.listLocked(func(_ K, key string) bool { return s.All || hasKeyPrefix(key, prefixes) })
	c.st.mu.RUnlock()
	return c.cloneAll(list), nil
}

// All returns an iterator over the entries in key order, as of when the
// loop starts (the lock is held only to take the keys and references, in
// one pass, as List does); each value is deep-copied when the loop
// reaches it, so a loop that stops early copies only what it read. The
// loop owns the values.
func (c *Cache[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		c.st.mu.RLock()
		list := c.listLocked(nil)
		c.st.mu.RUnlock()
		c.yieldCopies(list, yield)
	}
}

// AllIn is All for the entries under the given scope values, as In lists
// them; the values are checked first (*ScopeError).
func (c *Cache[K, V]) AllIn(scopes kvwatch.ScopeSet) (iter.Seq2[K, V], error) {
	if c.scopes == nil {
		return func(func(K, V) bool) {}, nil
	}
	s := scopes.KVWatchScopes()
	prefixes, err := c.scopes.keyPrefixes(s)
	if err != nil {
		return nil, err
	}
	return func(yield func(K, V) bool) {
		c.st.mu.RLock()
		list := c.listLocked(func(_ K, key string) bool { return s.All || hasKeyPrefix(key, prefixes) })
		c.st.mu.RUnlock()
		c.yieldCopies(list, yield)
	}, nil
}

// yieldCopies yields the entries of list with their values deep-copied.
func (c *Cache[K, V]) yieldCopies(list []kvwatch.Entry[K, V], yield func(K, V) bool) {
	for _, e := range list {
		if !yield(e.Key, c.kind.Copy(e.Value)) {
			return
		}
	}
}

// hasKeyPrefix reports whether key is one of prefixes or lies under one
// (prefix + ".").
func hasKeyPrefix(key string, prefixes []string) bool {
	for _, p := range prefixes {
		if key == p || (len(key) > len(p) && key[len(p)] == '.' && strings.HasPrefix(key, p)) {
			return true
		}
	}
	return false
}

// listLocked returns the entries that satisfy match (given the typed and
// the raw key; all when match is nil), sorted by raw key, sharing values
// with the cache. The caller holds the lock.
func (c *Cache[K, V]) listLocked(match func(K, string) bool) []kvwatch.Entry[K, V] {
	type keyed struct {
		key   string
		entry kvwatch.Entry[K, V]
	}
	sorted := make([]keyed, 0, len(c.items))
	for k, it := range c.items {
		if match == nil || match(k, it.key) {
			sorted = append(sorted, keyed{it.key, kvwatch.Entry[K, V]{Key: k, Value: it.Value, Revision: it.Revision, Created: it.Created}})
		}
	}
	slices.SortFunc(sorted, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	list := make([]kvwatch.Entry[K, V], len(sorted))
	for i, s := range sorted {
		list[i] = s.entry
	}
	return list
}

// cloneAll deep-copies the values of list in place, outside the lock.
func (c *Cache[K, V]) cloneAll(list []kvwatch.Entry[K, V]) []kvwatch.Entry[K, V] {
	if c.kind.Clone != nil {
		for i := range list {
			list[i].Value = c.kind.Clone(list[i].Value)
		}
	}
	return list
}
