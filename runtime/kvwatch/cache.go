package kvwatch

import (
	"maps"
	"sync"
	"time"
)

// Item is one cached entry: the current value of a key and its revision.
type Item[V any] struct {
	Value    V
	Revision uint64
	Created  time.Time
}

// Cache is the read-only, materialized view of one kind of entry within a
// watcher's scopes, like a Kubernetes lister. The watcher updates it before
// calling the handler for the same event, and it is exact (every key in
// scope with its current value) once the watcher is synced.
//
// Reads are safe from any goroutine and hold a read lock only for the
// copy they make. Values are shared with events: treat them as read-only.
type Cache[K comparable, V any] struct {
	mu    sync.RWMutex
	items map[K]Item[V]
}

func newCache[K comparable, V any]() *Cache[K, V] {
	return &Cache[K, V]{items: make(map[K]Item[V])}
}

// Get returns the current value of key.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	c.mu.RLock()
	it, ok := c.items[key]
	c.mu.RUnlock()
	return it.Value, ok
}

// GetItem returns the current value of key with its revision.
func (c *Cache[K, V]) GetItem(key K) (Item[V], bool) {
	c.mu.RLock()
	it, ok := c.items[key]
	c.mu.RUnlock()
	return it, ok
}

// Len returns the number of cached keys.
func (c *Cache[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.items)
}

// Snapshot returns a copy of the cache: a map the caller owns (its values
// are still shared and read-only).
func (c *Cache[K, V]) Snapshot() map[K]Item[V] {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return maps.Clone(c.items)
}

// put stores it under key and returns the value it replaced.
func (c *Cache[K, V]) put(key K, it Item[V]) (prev V, had bool) {
	c.mu.Lock()
	old, had := c.items[key]
	c.items[key] = it
	c.mu.Unlock()
	return old.Value, had
}

// delete removes key and returns its last value.
func (c *Cache[K, V]) delete(key K) (prev V, had bool) {
	c.mu.Lock()
	old, had := c.items[key]
	delete(c.items, key)
	c.mu.Unlock()
	return old.Value, had
}
