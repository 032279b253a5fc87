package kvwatchimpl

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
)

// This file is read-modify-write with retry, as Kubernetes' RetryOnConflict
// and etcd's STM do it: read the key's newest revision, apply the caller's
// change to its value, write it back only if the key is still at that
// revision, and on a conflict read again and retry, with backoff, a
// bounded number of times. No update is lost: a write lands only on the
// revision its change was computed from.

// For generated code. Modify reads key, calls fn with a copy of its value
// that fn may change in place, and writes the result back if the key is
// still at the revision read; on a conflict it waits (randomized, from
// 1 ms doubling to 100 ms) and starts again, at most MaxAttempts times, so
// that concurrent modifiers of one key each apply their change exactly
// once. It returns the revision written. fn may run several times, and
// must depend only on the value it is given; an error from it ends Modify
// with that error (ErrUnchanged: with the key's revision and no error).
// After the last attempt the error matches ErrConflicts and the conflict.
func Modify[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *Kind[K, V], key K, fn func(*V) error, opts ...kvclient.ModifyOption) (uint64, error) {
	cfg := config.Modify{Attempts: 10, Backoff: time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	var conflict error
	for attempt := range cfg.Attempts {
		if attempt > 0 {
			if !sleep(ctx, jitter(cfg.Backoff<<min(attempt-1, 7), 100*time.Millisecond)) {
				return 0, ctx.Err()
			}
		}
		rev, err := modifyOnce(ctx, kv, kind, key, fn, cfg.Create)
		if !isConflict(err) {
			return rev, err
		}
		conflict = err
	}
	return 0, fmt.Errorf("%w (%d attempts): %w", kvclient.ErrConflicts, cfg.Attempts, conflict)
}

// modifyOnce is one read, change and conditional write.
func modifyOnce[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *Kind[K, V], key K, fn func(*V) error, create bool) (uint64, error) {
	item, err := Get(ctx, kv, kind, key)
	absent := errors.Is(err, jetstream.ErrKeyNotFound)
	switch {
	case absent && !create:
		return 0, err
	case err != nil && !absent:
		return 0, err
	}
	v := kind.Copy(item.Value)
	if err := fn(&v); errors.Is(err, kvclient.ErrUnchanged) {
		return item.Revision, nil
	} else if err != nil {
		return 0, err
	}
	if absent {
		return Create(ctx, kv, kind, key, v)
	}
	return Update(ctx, kv, kind, key, v, item.Revision)
}

// isConflict reports whether err is a lost compare-and-set: the key moved
// on (ErrKeyRevisionMismatch) or was created meanwhile (ErrKeyExists).
func isConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
}

// jitter returns a random duration in [d/2, d], d capped at limit, so that
// modifiers that collided do not collide again in step.
func jitter(d, limit time.Duration) time.Duration {
	d = min(d, limit)
	return d/2 + rand.N(d/2+1)
}
