package kvwatchimpl

import (
	"context"
	"log/slog"
	"maps"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is which schema wrote a bucket: CreateOrUpdateBucket records
// the spec's SchemaID in the stream's metadata (nats-server 2.10+), and a
// watcher reads that record from the stream info it fetches anyway,
// compares it with its own and says so (Stats.Schema, a log line).

// The stream metadata keys of the record: the schema's revision, in
// decimal ("0" when it declares none), and the bucket's fingerprint.
const (
	metaSchemaRevision    = "kvwatchgen.schema.revision"
	metaSchemaFingerprint = "kvwatchgen.schema.fingerprint"
)

// schemaSettings are the settings of the record, listed by
// CreateOrUpdateBucket like the config's (bucketSettings): a change is
// never refused.
var schemaSettings = []bucketSetting{
	{name: "schema_revision", value: func(c *jetstream.StreamConfig) string { return metaOrNone(c, metaSchemaRevision) }},
	{name: "schema_fingerprint", value: func(c *jetstream.StreamConfig) string { return metaOrNone(c, metaSchemaFingerprint) }},
}

func metaOrNone(c *jetstream.StreamConfig, key string) string {
	if v, ok := c.Metadata[key]; ok {
		return v
	}
	return "none"
}

// recordSchema writes id into want's metadata, keeping every other key (the
// server's own _nats.* included); nothing for an id without a fingerprint
// (no schema). want's map is replaced, not written to: it is shared with
// the configuration read.
func recordSchema(want *jetstream.StreamConfig, id SchemaID) {
	if id.Fingerprint == "" {
		return
	}
	meta := maps.Clone(want.Metadata)
	if meta == nil {
		meta = map[string]string{}
	}
	meta[metaSchemaRevision] = strconv.Itoa(id.Revision)
	meta[metaSchemaFingerprint] = id.Fingerprint
	want.Metadata = meta
}

// recordedSchema reads the record from a stream's metadata; zero when
// there is none. A revision that is no decimal (written by hand) reads
// as 0.
func recordedSchema(meta map[string]string) SchemaID {
	rev, _ := strconv.Atoi(meta[metaSchemaRevision])
	return SchemaID{Revision: max(rev, 0), Fingerprint: meta[metaSchemaFingerprint]}
}

// behind reports whether the bucket records a newer schema than own: a
// higher revision, or the same with another fingerprint. Nothing is newer
// than an unknown own (no fingerprint: code before version 6), and no
// record is newer than anything.
func behind(own, bucket SchemaID) bool {
	if own.Fingerprint == "" || bucket.Fingerprint == "" {
		return false
	}
	return bucket.Revision > own.Revision || (bucket.Revision == own.Revision && bucket.Fingerprint != own.Fingerprint)
}

// schemaRecord is what a watcher last read of its bucket's record.
type schemaRecord struct {
	mu     sync.Mutex
	bucket SchemaID
	// logged is set once the watcher logged that it is behind.
	logged bool
}

// learnSchema takes the bucket's record from a stream info the watcher
// fetched, and logs, once in the watcher's life, that the bucket records a
// newer schema than its own. Any goroutine calls it.
func (w *Watcher) learnSchema(info *jetstream.StreamInfo) {
	if info == nil {
		return
	}
	bucket := recordedSchema(info.Config.Metadata)
	own := w.spec.Schema
	r := &w.schemaRecord
	r.mu.Lock()
	r.bucket = bucket
	log := !r.logged && behind(own, bucket)
	r.logged = r.logged || log
	r.mu.Unlock()
	if log {
		w.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn,
			"kvwatch: the bucket records a newer schema than this watcher's code was generated from (or another of the same revision): entries of kinds it does not know are skipped and fields it does not know ignored until the node runs code generated from the bucket's schema",
			slog.String("bucket", w.bucket), slog.Int("revision", own.Revision), slog.String("fingerprint", own.Fingerprint),
			slog.Int("bucket_revision", bucket.Revision), slog.String("bucket_fingerprint", bucket.Fingerprint))
	}
}

// schemaStats returns Stats.Schema.
func (w *Watcher) schemaStats() kvwatch.SchemaStats {
	own := w.spec.Schema
	r := &w.schemaRecord
	r.mu.Lock()
	bucket := r.bucket
	r.mu.Unlock()
	return kvwatch.SchemaStats{Revision: own.Revision, Fingerprint: own.Fingerprint,
		BucketRevision: bucket.Revision, BucketFingerprint: bucket.Fingerprint, Behind: behind(own, bucket)}
}
