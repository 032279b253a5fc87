package kvwatch

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file is typed access to single entries, for writers and one-off
// reads. Keys are checked to round-trip through the kind's parser before
// anything is sent: a struct field holding "a.b" or "*" would otherwise
// address another key, or another tenant's. The bucket is the one kv
// names, whatever the schema calls it: the schema fixes keys and types,
// the environment the bucket's name (as WithBucket does for watchers).

// checkedKey formats key and checks that it parses back to the same key.
func checkedKey[K comparable, V any](kind *kvwatchimpl.Kind[K, V], key K) (string, error) {
	s := kind.FormatKey(key)
	parsed, err := kind.ParseKey(s)
	if err != nil {
		return "", fmt.Errorf("kvwatch: %s key %+v is not a valid key: %w", kind.Name, key, err)
	}
	if parsed != key {
		return "", fmt.Errorf("kvwatch: %s key %+v formats as %q, which parses as %+v", kind.Name, key, s, parsed)
	}
	return s, nil
}

// For generated code. Put encodes value and stores it under key, returning the new revision.
func Put[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *kvwatchimpl.Kind[K, V], key K, value V) (uint64, error) {
	k, err := checkedKey(kind, key)
	if err != nil {
		return 0, err
	}
	data, err := kind.Codec.Encode(value)
	if err != nil {
		return 0, fmt.Errorf("kvwatch: encoding %s %s: %w", kind.Name, k, err)
	}
	return kv.Put(ctx, k, data)
}

// For generated code. Get reads the current value of key. A missing or deleted key is
// jetstream.ErrKeyNotFound.
func Get[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *kvwatchimpl.Kind[K, V], key K) (Item[V], error) {
	k, err := checkedKey(kind, key)
	if err != nil {
		return Item[V]{}, err
	}
	e, err := kv.Get(ctx, k)
	if err != nil {
		return Item[V]{}, err
	}
	v, err := kind.Codec.Decode(e.Value())
	if err != nil {
		return Item[V]{}, &DataError{Kind: kind.Name, Key: k, Revision: e.Revision(), Err: err}
	}
	return Item[V]{Value: v, Revision: e.Revision(), Created: e.Created()}, nil
}

// For generated code. Delete deletes key (a delete marker; watchers see OpDelete).
func Delete[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *kvwatchimpl.Kind[K, V], key K) error {
	k, err := checkedKey(kind, key)
	if err != nil {
		return err
	}
	return kv.Delete(ctx, k)
}
