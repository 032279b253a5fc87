package kvwatchimpl

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/keys"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is typed access to single entries, for writers and one-off
// reads. Keys are checked to round-trip through the kind's parser before
// anything is sent: a struct field holding "a.b" or "*" would otherwise
// address another key, or another tenant's. The bucket is the one kv
// names, whatever the schema calls it: the schema fixes keys and types,
// the environment the bucket's name (as WithBucket does for watchers).

// checkedKey formats key and checks that it parses back to the same key.
func checkedKey[K comparable, V any](kind *Kind[K, V], key K) (string, error) {
	s := kind.FormatKey(key)
	if kind.KeyParams != nil && kind.Key != nil {
		names := kind.Key.Params()
		for i, v := range kind.KeyParams(key) {
			if err := keys.ValidToken(v); err != nil && i < len(names) {
				return "", fmt.Errorf("kvwatch: %s key: %w", kind.Name, &kvwatch.ParamError{Key: s, Param: names[i], Err: err})
			}
		}
	}
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
func Put[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *Kind[K, V], key K, value V) (uint64, error) {
	k, data, err := encodeEntry(kind, key, value)
	if err != nil {
		return 0, err
	}
	return kv.Put(ctx, k, data)
}

// For generated code. Create stores value under key only if the key does
// not exist or was deleted, returning the new revision; otherwise the
// error matches jetstream.ErrKeyExists (errors.Is). opts are nats.go's:
// jetstream.KeyTTL gives the entry a time to live, on a bucket that allows
// per-message TTLs (its LimitMarkerTTL set).
func Create[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *Kind[K, V], key K, value V, opts ...jetstream.KVCreateOpt) (uint64, error) {
	k, data, err := encodeEntry(kind, key, value)
	if err != nil {
		return 0, err
	}
	return kv.Create(ctx, k, data, opts...)
}

// For generated code. Update stores value under key only if the key's
// newest revision is revision (compare-and-set), returning the new one;
// otherwise the error matches jetstream.ErrKeyRevisionMismatch, whichever
// of the codes 10071 and 10164 the server answered with.
func Update[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *Kind[K, V], key K, value V, revision uint64) (uint64, error) {
	k, data, err := encodeEntry(kind, key, value)
	if err != nil {
		return 0, err
	}
	return kv.Update(ctx, k, data, revision)
}

// encodeEntry checks key and encodes value.
func encodeEntry[K comparable, V any](kind *Kind[K, V], key K, value V) (string, []byte, error) {
	k, err := checkedKey(kind, key)
	if err != nil {
		return "", nil, err
	}
	data, err := kind.Codec.Encode(value)
	if err != nil {
		return "", nil, fmt.Errorf("kvwatch: encoding %s %s: %w", kind.Name, k, err)
	}
	return k, data, nil
}

// For generated code. Get reads the current value of key. A missing or deleted key is
// jetstream.ErrKeyNotFound.
func Get[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *Kind[K, V], key K) (kvwatch.Item[V], error) {
	k, err := checkedKey(kind, key)
	if err != nil {
		return kvwatch.Item[V]{}, err
	}
	e, err := kv.Get(ctx, k)
	if err != nil {
		return kvwatch.Item[V]{}, err
	}
	return decodeItem(kind, k, e)
}

// For generated code. GetRevision reads key as it was at revision. A
// revision that is not one of key's, or a delete or purge, is
// jetstream.ErrKeyNotFound.
func GetRevision[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *Kind[K, V], key K, revision uint64) (kvwatch.Item[V], error) {
	k, err := checkedKey(kind, key)
	if err != nil {
		return kvwatch.Item[V]{}, err
	}
	e, err := kv.GetRevision(ctx, k, revision)
	if err != nil {
		return kvwatch.Item[V]{}, err
	}
	return decodeItem(kind, k, e)
}

// decodeItem types an entry nats.go read.
func decodeItem[K comparable, V any](kind *Kind[K, V], k string, e jetstream.KeyValueEntry) (kvwatch.Item[V], error) {
	v, err := kind.Codec.Decode(e.Value())
	if err != nil {
		return kvwatch.Item[V]{}, &kvwatch.DataError{Kind: kind.Name, Key: k, Revision: e.Revision(), Err: err, Value: e.Value()}
	}
	return kvwatch.Item[V]{Value: v, Revision: e.Revision(), Created: e.Created()}, nil
}

// For generated code. Delete deletes key (a delete marker; watchers see
// OpDelete). opts are nats.go's: with jetstream.LastRevision the delete
// happens only if the key's newest revision is that one (otherwise
// jetstream.ErrKeyRevisionMismatch).
func Delete[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *Kind[K, V], key K, opts ...jetstream.KVDeleteOpt) error {
	k, err := checkedKey(kind, key)
	if err != nil {
		return err
	}
	return kv.Delete(ctx, k, opts...)
}

// For generated code. Purge deletes key and every earlier revision of it
// (watchers see OpPurge). opts are nats.go's: jetstream.LastRevision as
// for Delete, and jetstream.PurgeTTL to let the purge marker itself
// expire, on a bucket that allows per-message TTLs.
func Purge[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *Kind[K, V], key K, opts ...jetstream.KVDeleteOpt) error {
	k, err := checkedKey(kind, key)
	if err != nil {
		return err
	}
	return kv.Purge(ctx, k, opts...)
}

// For generated code. OpenBucket opens the bucket of spec: the one
// kvclient.WithBucketName among opts names, spec.Bucket otherwise. A
// missing bucket matches jetstream.ErrBucketNotFound.
func OpenBucket(ctx context.Context, js jetstream.JetStream, spec *BucketSpec, opts ...kvclient.OpenOption) (jetstream.KeyValue, error) {
	var cfg config.Open
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	name := cmp.Or(cfg.Name, spec.Bucket)
	if err := validBucketName(name); err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, bucketNotFound(js, name)
	}
	if err != nil {
		return nil, fmt.Errorf("kvwatch: opening bucket %s: %w", name, noJetStream(js, err))
	}
	return kv, nil
}
