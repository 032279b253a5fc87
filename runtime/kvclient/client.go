package kvclient

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// ErrNoJetStream is returned by a typed client's List, Keys, History and a
// batch's Commit on a bucket handle made without the JetStream context they read through (a generated
// NewXBucket(kv) rather than OpenXBucket).
var ErrNoJetStream = errors.New("kvclient: reading without a consumer needs the JetStream context: open the bucket with the generated OpenXBucket")

// HistoryEntry is one stored revision of a key: a value (kvwatch.OpPut), or a
// delete or purge.
type HistoryEntry[V any] struct {
	// Op is kvwatch.OpPut, OpDelete or OpPurge.
	Op kvwatch.Op
	// Value is the value stored for OpPut; the zero value otherwise.
	Value V
	// Revision is the revision's stream sequence.
	Revision uint64
	// Created is when the server stored it.
	Created time.Time
}

// ErrUnchanged, returned by a Modify function, ends ModifyX without
// writing: the value needs no change. ModifyX then returns the key's
// revision and no error.
var ErrUnchanged = errors.New("kvclient: unchanged")

// ErrConflicts is matched (errors.Is) by the error of a ModifyX that gave
// up: every attempt found the key changed by another writer between its
// read and its write.
var ErrConflicts = errors.New("kvclient: the key kept changing under the modification")

// ModifyOption configures a generated ModifyX.
type ModifyOption func(*config.Modify)

// CreateIfAbsent makes ModifyX apply its function to the zero value when
// the key does not exist (or was deleted), and create the key; without it
// ModifyX of a missing key is jetstream.ErrKeyNotFound.
func CreateIfAbsent() ModifyOption { return func(c *config.Modify) { c.Create = true } }

// MaxAttempts bounds the reads and writes ModifyX makes (default 10); n < 1
// is 1.
func MaxAttempts(n int) ModifyOption { return func(c *config.Modify) { c.Attempts = max(n, 1) } }

// BucketOption configures a generated CreateOrUpdateXBucket.
type BucketOption func(*config.Bucket)

// AllowDataLoss lets CreateOrUpdateXBucket apply changes to an existing
// bucket that make the server drop data: lowering history (the older
// revisions of every key go), setting or lowering the ttl (entries older
// than it expire at once), and lowering max_bytes of a stream that
// discards old messages. A change of storage stays refused: the server
// cannot change it in place, and recreating the bucket would delete it.
func AllowDataLoss() BucketOption {
	return func(o *config.Bucket) { o.AllowDataLoss = true }
}

// BucketConfigError is CreateOrUpdateXBucket's refusal to update an existing
// bucket: some setting differs from the schema's in a way that drops data
// (without AllowDataLoss) or that the server cannot change. Nothing was
// changed.
type BucketConfigError struct {
	Bucket string
	// Changes are all the settings that differ, in the schema's order;
	// those refused say why.
	Changes []BucketChange
}

// BucketChange is one setting of a bucket that differs from the schema's.
type BucketChange struct {
	// Setting is the schema's name of it: "history", "ttl", ….
	Setting string
	// Old and New are the bucket's value and the schema's, as the schema
	// writes them ("5", "24h", "unlimited", "file", a quoted description).
	Old, New string
	// Refused says why the change is not applied, "" for one that would be
	// applied with the others.
	Refused string
}

// Error lists every change: "kvclient: bucket network not updated: history
// 5 → 2 (…), description "" → "x"".
func (e *BucketConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kvclient: bucket %s not updated, nothing changed: ", e.Bucket)
	for i, c := range e.Changes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s → %s", c.Setting, c.Old, c.New)
		if c.Refused != "" {
			fmt.Fprintf(&b, " (%s)", c.Refused)
		}
	}
	return b.String()
}

// ErrBatchDisabled is matched (errors.Is) by the error of a Commit to a
// bucket whose stream does not allow atomic batches: set
// AllowAtomicPublish on its stream (the schema's bucket config).
var ErrBatchDisabled = errors.New("kvclient: the bucket's stream does not allow atomic batches")

// OpenOption configures a generated OpenXBucket.
type OpenOption func(*config.Open)

// WithBucketName opens the bucket named name instead of the schema's: the
// schema fixes keys and types, not the environment, so one client type
// serves "network-staging" and an edge server's mirror alike (whose writes
// go to its origin). Watch that bucket with kvwatch.WithBucket.
func WithBucketName(name string) OpenOption {
	return func(o *config.Open) { o.Name = name }
}
