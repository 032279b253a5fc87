package kvwatchimpl

import (
	"strconv"
	"time"
)

// BucketConfig is the configuration of a bucket's stream that the schema
// declares (BucketSpec.Config); kvwatch.CreateOrUpdateBucket creates the
// bucket with it and updates an existing bucket to it. A zero field is one
// the schema does not declare: the default in its comment applies, also
// to an existing bucket (the schema states the whole configuration).
// Generated code writes the declared fields only.
type BucketConfig struct {
	// History is the number of values kept per key, 1..64; default 1.
	History int
	// TTL is the bucket's MaxAge: entries older than it expire; default
	// none.
	TTL time.Duration
	// MaxValueSize is the largest value in bytes; default unlimited.
	MaxValueSize int32
	// MaxBytes is the largest size of the bucket in bytes; default
	// unlimited.
	MaxBytes int64
	// Storage is where the stream keeps its messages; default FileStorage.
	Storage Storage
	// Replicas is the number of copies in a cluster, 1..5; default 1.
	Replicas int
	// MaxConsumers is the stream's MaxConsumers, the most watchers of the
	// bucket (each has one consumer); default kvwatch.DefaultMaxConsumers.
	MaxConsumers int
	// LimitMarkerTTL is how long the delete markers of entries removed by
	// a limit (TTL, per-key TTL) stay, which makes watchers see those
	// removals and enables per-key TTLs (nats-server 2.11+); default none.
	LimitMarkerTTL time.Duration
	// AtomicBatches lets the stream take atomic batches of writes (its
	// AllowAtomicPublish; nats-server 2.12+); default off.
	AtomicBatches bool
	// Description is the stream's description; default none.
	Description string
}

// Storage is where a bucket's stream keeps its messages. The zero value is
// not declared, which is file storage.
type Storage uint8

// The storages a schema declares.
const (
	FileStorage Storage = iota + 1
	MemoryStorage
)

// String returns the schema's name of s: "file" or "memory" ("file" for
// the zero value).
func (s Storage) String() string {
	switch s {
	case 0, FileStorage:
		return "file"
	case MemoryStorage:
		return "memory"
	}
	return "Storage(" + strconv.Itoa(int(s)) + ")"
}
