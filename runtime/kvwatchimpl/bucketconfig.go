package kvwatchimpl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/duration"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
)

// This file creates a bucket with the configuration its schema declares
// (BucketConfig), and updates an existing bucket to it: in
// place, only where it differs, and never dropping entries or revisions
// unless AllowDataLoss says so. It works on the bucket's stream
// configuration, so what the schema does not govern (compression,
// placement, republish, metadata other than the schema's record
// (schemaid.go), sources, the duplicate window) stays as the bucket has
// it.

// DefaultMaxConsumers is the MaxConsumers CreateOrUpdateBucket gives a
// bucket's stream when the schema declares no max_consumers. It is
// nats-server 2.15's own default per stream, written into the stream so
// that stream info shows the limit every watcher counts against (each has
// one consumer), whatever the server's version or default_max_consumers:
// nats.go writes -1, which a 2.15 server reads as "not set" and caps at its
// default anyway, and which older servers read as unlimited.
const DefaultMaxConsumers = 1000

// For generated code (CreateOrUpdateNetworkBucket and the like call it).
// CreateOrUpdateBucket creates bucket spec.Bucket with spec.Config, or
// updates the existing bucket to it, and returns the bucket. Settings the
// config leaves zero take their defaults (BucketConfig), on an
// existing bucket too; the stream's MaxConsumers is always set, to
// DefaultMaxConsumers by default. It records spec.Schema (when it has a
// fingerprint) in the stream's metadata, as kvwatchgen.schema.revision
// and kvwatchgen.schema.fingerprint, keeping every other metadata key:
// watchers read it to tell which schema configured the bucket
// (kvwatch.Stats.Schema). The record is a setting like the others
// (schema_revision, schema_fingerprint), never refused: it is written as
// given, an older revision too, so CreateOrUpdateBucket belongs to the
// deploy of a schema (one call when it rolls out), not to the start of
// every node, where nodes of the old and the new code would write their
// own record in turn. An existing bucket is updated only where
// it differs, with one stream update; a change that drops data is refused
// without AllowDataLoss, and a change of storage always is. A refusal is a
// *BucketConfigError listing every setting that differs, and changes
// nothing. It deletes no bucket and no entry; errors of the server wrap
// nats.go's. It needs the JetStream API subjects $JS.API.INFO and
// $JS.API.STREAM.{INFO,CREATE,UPDATE}.KV_<bucket>; a bucket it creates is
// created, then updated (MaxConsumers), so a failed update leaves it with
// nats.go's -1 until the next call.
func CreateOrUpdateBucket(ctx context.Context, js jetstream.JetStream, spec *BucketSpec, opts ...kvclient.BucketOption) (jetstream.KeyValue, error) {
	if spec == nil {
		return nil, errors.New("kvwatch: CreateOrUpdateBucket: nil spec")
	}
	var o config.Bucket
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	name := spec.Bucket
	if err := validBucketName(name); err != nil {
		return nil, err
	}
	if err := checkBucketConfig(&spec.Config); err != nil {
		return nil, fmt.Errorf("kvwatch: bucket %s: %w", name, err)
	}
	cur, err := streamConfig(ctx, js, name)
	err = noJetStream(js, err)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// Create with nats.go's stream settings for a KV bucket, then set
		// what KeyValueConfig cannot hold (MaxConsumers) as an update. A
		// bucket another process created in between is updated like any.
		_, err = js.CreateKeyValue(ctx, keyValueConfig(name, &spec.Config))
		if err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
			return nil, fmt.Errorf("kvwatch: creating bucket %s: %w", name, err)
		}
		cur, err = streamConfig(ctx, js, name)
	}
	if err != nil {
		return nil, fmt.Errorf("kvwatch: reading bucket %s: %w", name, err)
	}
	if cur.MaxMsgsPerSubject < 1 {
		return nil, fmt.Errorf("kvwatch: stream %s is not a KV bucket (no history per key): %w", cur.Name, jetstream.ErrBadBucket)
	}
	want := desiredConfig(cur, &spec.Config)
	recordSchema(want, spec.Schema)
	if changes, refused := bucketChanges(cur, want, o.AllowDataLoss); refused {
		return nil, &kvclient.BucketConfigError{Bucket: name, Changes: changes}
	} else if len(changes) > 0 {
		s, err := js.UpdateStream(ctx, *want)
		if err != nil {
			return nil, fmt.Errorf("kvwatch: updating bucket %s: %w", name, err)
		}
		if missed, _ := bucketChanges(&s.CachedInfo().Config, want, true); len(missed) > 0 {
			return nil, fmt.Errorf("kvwatch: bucket %s: the server did not apply %s (an older nats-server ignores settings it does not know: limit_marker_ttl needs 2.11, atomic_batches 2.12)",
				name, describeChanges(missed))
		}
	}
	kv, err := js.KeyValue(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("kvwatch: opening bucket %s: %w", name, err)
	}
	return kv, nil
}

// streamConfig reads the configuration of bucket name's stream.
func streamConfig(ctx context.Context, js jetstream.JetStream, name string) (*jetstream.StreamConfig, error) {
	s, err := js.Stream(ctx, "KV_"+name)
	if err != nil {
		return nil, err
	}
	cfg := s.CachedInfo().Config
	return &cfg, nil
}

// checkBucketConfig rejects values no schema can declare (a hand-written
// spec's), before anything is sent.
func checkBucketConfig(c *BucketConfig) error {
	switch {
	case c.History < 0 || c.History > jetstream.KeyValueMaxHistory:
		return fmt.Errorf("history %d is not in 1..%d", c.History, jetstream.KeyValueMaxHistory)
	case c.TTL < 0:
		return fmt.Errorf("negative ttl %v", c.TTL)
	case c.MaxValueSize < 0:
		return fmt.Errorf("negative max_value_size %d", c.MaxValueSize)
	case c.MaxBytes < 0:
		return fmt.Errorf("negative max_bytes %d", c.MaxBytes)
	case c.Storage > MemoryStorage:
		return fmt.Errorf("unknown storage %v", c.Storage)
	case c.Replicas < 0 || c.Replicas > 5:
		return fmt.Errorf("replicas %d is not in 1..5", c.Replicas)
	case c.MaxConsumers < 0:
		return fmt.Errorf("negative max_consumers %d", c.MaxConsumers)
	case c.LimitMarkerTTL < 0:
		return fmt.Errorf("negative limit_marker_ttl %v", c.LimitMarkerTTL)
	}
	return nil
}

// keyValueConfig is what nats.go creates bucket name with.
func keyValueConfig(name string, c *BucketConfig) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:         name,
		Description:    c.Description,
		MaxValueSize:   c.MaxValueSize,
		History:        uint8(c.History), // checked: 0..64
		TTL:            c.TTL,
		MaxBytes:       c.MaxBytes,
		Storage:        storageType(c.Storage),
		Replicas:       c.Replicas,
		LimitMarkerTTL: c.LimitMarkerTTL,
	}
}

func storageType(s Storage) jetstream.StorageType {
	if s == MemoryStorage {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

// desiredConfig is cur with the settings of c, defaults for its zero
// fields, and what those settings need: a duplicate window no longer than
// the ttl, per-message TTLs for limit markers (the server cannot turn them
// off again, so they stay on once on).
func desiredConfig(cur *jetstream.StreamConfig, c *BucketConfig) *jetstream.StreamConfig {
	want := *cur
	want.MaxMsgsPerSubject = int64(orDefault(c.History, 1))
	want.MaxAge = c.TTL
	if want.MaxAge > 0 && want.Duplicates > want.MaxAge {
		want.Duplicates = want.MaxAge
	}
	want.MaxMsgSize = c.MaxValueSize
	if want.MaxMsgSize == 0 {
		want.MaxMsgSize = -1
	}
	want.MaxBytes = c.MaxBytes
	if want.MaxBytes == 0 {
		want.MaxBytes = -1
	}
	want.Storage = storageType(c.Storage)
	want.Replicas = orDefault(c.Replicas, 1)
	want.MaxConsumers = orDefault(c.MaxConsumers, DefaultMaxConsumers)
	want.SubjectDeleteMarkerTTL = c.LimitMarkerTTL
	if c.LimitMarkerTTL > 0 {
		want.AllowMsgTTL = true
	}
	want.AllowAtomicPublish = c.AtomicBatches
	want.Description = c.Description
	return &want
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// bucketSetting is one setting a schema declares, read from a stream's
// configuration.
type bucketSetting struct {
	name  string
	value func(c *jetstream.StreamConfig) string
	// loss says what changing old to new makes the server drop, "" when
	// it drops nothing (nil: never).
	loss func(old, new *jetstream.StreamConfig) string
	// fixed is set for a setting the server cannot change in place.
	fixed bool
}

// bucketSettings are the settings of BucketConfig, in its
// order.
var bucketSettings = []bucketSetting{
	{name: "history", value: func(c *jetstream.StreamConfig) string { return strconv.FormatInt(c.MaxMsgsPerSubject, 10) },
		loss: func(o, n *jetstream.StreamConfig) string {
			if n.MaxMsgsPerSubject < o.MaxMsgsPerSubject {
				return "drops the older revisions of every key"
			}
			return ""
		}},
	{name: "ttl", value: func(c *jetstream.StreamConfig) string { return duration.OrNone(c.MaxAge) },
		loss: func(o, n *jetstream.StreamConfig) string {
			if n.MaxAge > 0 && (o.MaxAge == 0 || n.MaxAge < o.MaxAge) {
				return "entries older than it expire at once"
			}
			return ""
		}},
	{name: "max_value_size", value: func(c *jetstream.StreamConfig) string { return sizeOrUnlimited(int64(c.MaxMsgSize)) }},
	{name: "max_bytes", value: func(c *jetstream.StreamConfig) string { return sizeOrUnlimited(c.MaxBytes) },
		loss: func(o, n *jetstream.StreamConfig) string {
			// A KV stream discards new messages when full, and then
			// drops nothing; one an older nats.go made discards old ones.
			if o.Discard == jetstream.DiscardOld && n.MaxBytes > 0 && (o.MaxBytes <= 0 || n.MaxBytes < o.MaxBytes) {
				return "the oldest entries are dropped to fit"
			}
			return ""
		}},
	{name: "storage", value: func(c *jetstream.StreamConfig) string { return storageName(c.Storage) }, fixed: true},
	{name: "replicas", value: func(c *jetstream.StreamConfig) string { return strconv.Itoa(max(c.Replicas, 1)) }},
	{name: "max_consumers", value: func(c *jetstream.StreamConfig) string {
		if c.MaxConsumers <= 0 {
			return "-1 (server default)"
		}
		return strconv.Itoa(c.MaxConsumers)
	}},
	{name: "limit_marker_ttl", value: func(c *jetstream.StreamConfig) string { return duration.OrNone(c.SubjectDeleteMarkerTTL) }},
	{name: "atomic_batches", value: func(c *jetstream.StreamConfig) string { return strconv.FormatBool(c.AllowAtomicPublish) }},
	{name: "description", value: func(c *jetstream.StreamConfig) string { return strconv.Quote(c.Description) }},
}

// bucketChanges lists the settings in which cur and want differ, and
// whether one of them is refused: it cannot change in place, or it drops
// data and allowDataLoss is not set.
func bucketChanges(cur, want *jetstream.StreamConfig, allowDataLoss bool) (changes []kvclient.BucketChange, refused bool) {
	for _, s := range slices.Concat(bucketSettings, schemaSettings) {
		was, now := s.value(cur), s.value(want)
		if was == now {
			continue
		}
		c := kvclient.BucketChange{Setting: s.name, Old: was, New: now}
		switch {
		case s.fixed:
			c.Refused = "the server cannot change " + s.name + " in place: create a new bucket and copy the entries"
		case s.loss != nil && !allowDataLoss:
			if why := s.loss(cur, want); why != "" {
				c.Refused = why + "; kvclient.AllowDataLoss() allows it"
			}
		}
		refused = refused || c.Refused != ""
		changes = append(changes, c)
	}
	return changes, refused
}

// describeChanges writes changes as "history (it is 1, want 5), …".
func describeChanges(changes []kvclient.BucketChange) string {
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = fmt.Sprintf("%s (it is %s, want %s)", c.Setting, c.Old, c.New)
	}
	return strings.Join(parts, ", ")
}

func storageName(s jetstream.StorageType) string {
	if s == jetstream.MemoryStorage {
		return "memory"
	}
	return "file"
}

func sizeOrUnlimited(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}
