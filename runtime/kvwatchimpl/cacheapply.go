package kvwatchimpl

import (
	"cmp"
	"slices"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is the indexes a schema declares on a kind's cache
// (Index): the cache keeps, per index, its keys by the indexed
// field's value, updated with every change under the same lock, so that a
// lookup reads the matching entries only, where ListFunc reads them all.

// cacheIndex is one index: the cached keys by the value of the field.
type cacheIndex[K comparable, V any] struct {
	name  string
	value func(V) any
	keys  map[any]map[K]struct{}
}

// newIndexes makes the indexes a kind declares.
func (c *Cache[K, V]) newIndexes() {
	for _, ix := range c.kind.Indexes {
		c.indexes = append(c.indexes, &cacheIndex[K, V]{name: ix.Name, value: ix.Value, keys: map[any]map[K]struct{}{}})
	}
}

// indexLocked adds key, holding v, to every index; the caller holds the
// state lock.
func (c *Cache[K, V]) indexLocked(key K, v V) {
	for _, ix := range c.indexes {
		val := ix.value(v)
		set := ix.keys[val]
		if set == nil {
			set = map[K]struct{}{}
			ix.keys[val] = set
		}
		set[key] = struct{}{}
	}
}

// unindexLocked removes key, which held v, from every index.
func (c *Cache[K, V]) unindexLocked(key K, v V) {
	for _, ix := range c.indexes {
		val := ix.value(v)
		if set := ix.keys[val]; set != nil {
			delete(set, key)
			if len(set) == 0 {
				delete(ix.keys, val)
			}
		}
	}
}

// putLocked stores item under key (raw: its string form), replacing and
// unindexing what the key held.
func (c *Cache[K, V]) putLocked(key K, raw string, item kvwatch.Item[V]) {
	old, ok := c.items[key]
	if !ok {
		c.addLocked(key, raw, item)
		return
	}
	c.unindexLocked(key, old.Value)
	old.Item = item
	c.indexLocked(key, item.Value)
}

// addLocked stores item under key, which the cache does not hold.
func (c *Cache[K, V]) addLocked(key K, raw string, item kvwatch.Item[V]) {
	c.items[key] = &cacheItem[V]{Item: item, key: raw}
	c.indexLocked(key, item.Value)
}

// deleteLocked removes key.
func (c *Cache[K, V]) deleteLocked(key K) {
	if len(c.indexes) > 0 {
		if old, ok := c.items[key]; ok {
			c.unindexLocked(key, old.Value)
		}
	}
	delete(c.items, key)
}

// ByIndex returns (copies of) the entries whose indexed field, in the
// index named name, equals value, sorted by key; nil for an index the
// kind does not have. The generated cache's lookups (ByNextHop, …) call
// it with the field's type; value must have that type.
func (c *Cache[K, V]) ByIndex(name string, value any) []kvwatch.Entry[K, V] {
	type keyed struct {
		raw   string
		entry kvwatch.Entry[K, V]
	}
	var found []keyed
	c.st.mu.RLock()
	for _, ix := range c.indexes {
		if ix.name != name {
			continue
		}
		for k := range ix.keys[value] {
			it := c.items[k]
			found = append(found, keyed{it.key, kvwatch.Entry[K, V]{Key: k, Value: it.Value, Revision: it.Revision, Created: it.Created}})
		}
	}
	c.st.mu.RUnlock()
	if len(found) == 0 {
		return nil
	}
	slices.SortFunc(found, func(a, b keyed) int { return cmp.Compare(a.raw, b.raw) })
	list := make([]kvwatch.Entry[K, V], len(found))
	for i, f := range found {
		list[i] = f.entry
	}
	return c.cloneAll(list)
}
