package kvwatch

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file is read-modify-write with retry, as Kubernetes' RetryOnConflict
// and etcd's STM do it: read the key's newest revision, apply the caller's
// change to its value, write it back only if the key is still at that
// revision, and on a conflict read again and retry, with backoff, a
// bounded number of times. No update is lost: a write lands only on the
// revision its change was computed from.

// ErrUnchanged, returned by a Modify function, ends Modify without
// writing: the value needs no change. Modify then returns the key's
// revision and no error.
var ErrUnchanged = errors.New("kvwatch: unchanged")

// ErrConflicts is matched (errors.Is) by the error of a Modify that gave
// up: every attempt found the key changed by another writer between its
// read and its write.
var ErrConflicts = errors.New("kvwatch: the key kept changing under the modification")

// ModifyOption configures a Modify.
type ModifyOption func(*modifyConfig)

type modifyConfig struct {
	create   bool
	attempts int
	backoff  time.Duration
}

// CreateIfAbsent makes Modify apply its function to the zero value when
// the key does not exist (or was deleted), and create the key; without it
// Modify of a missing key is jetstream.ErrKeyNotFound.
func CreateIfAbsent() ModifyOption { return func(c *modifyConfig) { c.create = true } }

// MaxAttempts bounds the reads and writes Modify makes (default 10); n < 1
// is 1.
func MaxAttempts(n int) ModifyOption { return func(c *modifyConfig) { c.attempts = max(n, 1) } }

// For generated code. Modify reads key, calls fn with a copy of its value
// that fn may change in place, and writes the result back if the key is
// still at the revision read; on a conflict it waits (randomized, from
// 1 ms doubling to 100 ms) and starts again, at most MaxAttempts times, so
// that concurrent modifiers of one key each apply their change exactly
// once. It returns the revision written. fn may run several times, and
// must depend only on the value it is given; an error from it ends Modify
// with that error (ErrUnchanged: with the key's revision and no error).
// After the last attempt the error matches ErrConflicts and the conflict.
func Modify[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *kvwatchimpl.Kind[K, V], key K, fn func(*V) error, opts ...ModifyOption) (uint64, error) {
	cfg := modifyConfig{attempts: 10, backoff: time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	var conflict error
	for attempt := range cfg.attempts {
		if attempt > 0 {
			if !sleep(ctx, jitter(cfg.backoff<<min(attempt-1, 7), 100*time.Millisecond)) {
				return 0, ctx.Err()
			}
		}
		rev, err := modifyOnce(ctx, kv, kind, key, fn, cfg.create)
		if !isConflict(err) {
			return rev, err
		}
		conflict = err
	}
	return 0, fmt.Errorf("%w (%d attempts): %w", ErrConflicts, cfg.attempts, conflict)
}

// modifyOnce is one read, change and conditional write.
func modifyOnce[K comparable, V any](ctx context.Context, kv jetstream.KeyValue, kind *kvwatchimpl.Kind[K, V], key K, fn func(*V) error, create bool) (uint64, error) {
	item, err := Get(ctx, kv, kind, key)
	absent := errors.Is(err, jetstream.ErrKeyNotFound)
	switch {
	case absent && !create:
		return 0, err
	case err != nil && !absent:
		return 0, err
	}
	v := kind.Copy(item.Value)
	if err := fn(&v); errors.Is(err, ErrUnchanged) {
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
