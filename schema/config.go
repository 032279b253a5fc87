package schema

import (
	"fmt"
	"math"
	"time"

	"go.yaml.in/yaml/v3"
)

// This file reads a bucket's "config:" mapping: the settings of the
// bucket's stream that the generated CreateOrUpdate function applies.
// Every setting is optional; one the schema does not declare takes the
// runtime's default. Values are checked against what nats-server accepts,
// so that a schema that loads never makes the server refuse the bucket for
// a value alone.

// BucketConfig is what a bucket's "config:" mapping declares (Bucket.Config,
// nil without one). A zero field is not declared: the runtime's default
// applies (history 1, no ttl, no size limits, file storage, 1 replica,
// kvwatch.DefaultMaxConsumers, no limit markers, no description).
type BucketConfig struct {
	History        int           // values kept per key, 1..64
	TTL            time.Duration // the stream's MaxAge, ≥ 100ms
	MaxValueSize   int32         // bytes, ≥ 1
	MaxBytes       int64         // bytes, ≥ 1
	Storage        Storage       // "" when not declared
	Replicas       int           // 1..5
	MaxConsumers   int           // the stream's MaxConsumers, ≥ 1
	LimitMarkerTTL time.Duration // how long limit delete markers stay, ≥ 1s (nats-server 2.11+)
	AtomicBatches  bool          // the stream takes atomic batches (nats-server 2.12+)
	Description    string
	Pos            Pos // of the mapping
	// SettingPos is where each setting written is, by its name in
	// config: ("history"), for messages about one setting.
	SettingPos map[string]Pos
}

// Storage is where a bucket's stream keeps its messages.
type Storage string

// The storages.
const (
	StorageFile   Storage = "file"
	StorageMemory Storage = "memory"
)

// Limits of the config settings: nats.go's KeyValueMaxHistory, the
// server's shortest MaxAge and delete-marker TTL, its largest replica count.
const (
	maxHistory        = 64
	minTTL            = 100 * time.Millisecond
	minLimitMarkerTTL = time.Second
	maxReplicas       = 5
)

// configFields are the settings of "config:", in the order of BucketConfig
// (the order the generator writes them in, whatever the schema's order).
var (
	configFields = []string{"history", "ttl", "max_value_size", "max_bytes", "storage", "replicas", "max_consumers", "limit_marker_ttl", "atomic_batches", "description"}
	storages     = []string{string(StorageFile), string(StorageMemory)}
)

// bucketConfig reads the "config:" mapping of bucket b. Every setting is
// checked, and every problem reported; it returns nil when n is not a
// mapping.
func (l *loader) bucketConfig(b *Bucket, n *yaml.Node) *BucketConfig {
	what := "the config of bucket " + b.label()
	f := l.fields(n, what, configFields)
	if f == nil {
		return nil
	}
	c := &BucketConfig{Pos: pos(n), SettingPos: map[string]Pos{}}
	for _, name := range configFields {
		if v := f[name]; v != nil {
			c.SettingPos[name] = pos(v)
		}
	}
	if n := f["history"]; n != nil {
		if v, ok := l.configInt(n, "history", 1, maxHistory, "values kept per key"); ok {
			c.History = int(v)
		}
	}
	if n := f["ttl"]; n != nil {
		c.TTL = l.configDuration(n, "ttl", minTTL, "the server's shortest max age")
	}
	if n := f["max_value_size"]; n != nil {
		if v, ok := l.configInt(n, "max_value_size", 1, math.MaxInt32, "bytes"); ok {
			c.MaxValueSize = int32(v)
		}
	}
	if n := f["max_bytes"]; n != nil {
		if v, ok := l.configInt(n, "max_bytes", 1, math.MaxInt64, "bytes"); ok {
			c.MaxBytes = v
		}
	}
	if n := f["storage"]; n != nil {
		if v, ok := l.scalar(n, "storage"); ok {
			if contains(storages, v) {
				c.Storage = Storage(v)
			} else {
				l.add(pos(n), "unknown storage %q: use file or memory%s", v, suggest(closest(v, storages)))
			}
		}
	}
	if n := f["replicas"]; n != nil {
		if v, ok := l.configInt(n, "replicas", 1, maxReplicas, "copies of the stream in a cluster"); ok {
			c.Replicas = int(v)
		}
	}
	if n := f["max_consumers"]; n != nil {
		if v, ok := l.configInt(n, "max_consumers", 1, math.MaxInt32, "consumers of the stream: one per watcher"); ok {
			c.MaxConsumers = int(v)
		}
	}
	if n := f["limit_marker_ttl"]; n != nil {
		c.LimitMarkerTTL = l.configDuration(n, "limit_marker_ttl", minLimitMarkerTTL, "the server's shortest delete-marker TTL")
	}
	if n := f["atomic_batches"]; n != nil {
		if v, ok := l.scalar(n, "atomic_batches"); ok {
			if n.Tag == "!!bool" {
				c.AtomicBatches = v == "true"
			} else {
				l.add(pos(n), "atomic_batches must be true or false, not %s", describeValue(n, v))
			}
		}
	}
	if n := f["description"]; n != nil {
		c.Description, _ = l.scalar(n, "description")
	}
	return c
}

// configInt reads a whole number between lo and hi; unit says what it
// counts, for the message.
func (l *loader) configInt(n *yaml.Node, what string, lo, hi int64, unit string) (int64, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		if v, ok := l.scalar(n, what); ok {
			l.add(pos(n), "%s must be a whole number (%s), not %s", what, unit, describeValue(n, v))
		}
		return 0, false
	}
	var v int64
	err := n.Decode(&v)
	switch {
	case err == nil && v < lo && hi >= math.MaxInt32:
		l.add(pos(n), "%s must be at least %d (%s), not %s", what, lo, unit, n.Value)
	case err != nil || v < lo || v > hi:
		l.add(pos(n), "%s must be between %d and %d (%s), not %s", what, lo, hi, unit, n.Value)
	default:
		return v, true
	}
	return 0, false
}

// configDuration reads a Go duration ("30s", "24h") of at least least;
// why says where that bound comes from. It returns 0 for a bad value.
func (l *loader) configDuration(n *yaml.Node, what string, least time.Duration, why string) time.Duration {
	v, ok := l.scalar(n, what)
	if !ok {
		return 0
	}
	if n.Tag != "!!str" {
		l.add(pos(n), "%s must be a duration with a unit, such as \"30s\" or \"24h\", not %s", what, describeValue(n, v))
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		l.add(pos(n), "%s must be a duration such as \"30s\" or \"24h\", not %q", what, v)
		return 0
	}
	if d < least {
		l.add(pos(n), "%s must be at least %s (%s), not %s", what, least, why, v)
		return 0
	}
	return d
}

// describeValue names a scalar for messages: a string quoted, anything
// else as the kind of YAML value it is.
func describeValue(n *yaml.Node, v string) string {
	switch n.Tag {
	case "!!str":
		return fmt.Sprintf("the string %q", v)
	case "!!int", "!!float":
		return "the number " + v
	case "!!bool":
		return "the boolean " + v
	}
	return fmt.Sprintf("%q", v)
}
