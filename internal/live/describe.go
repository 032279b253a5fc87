package live

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/duration"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file is kvwatchgen describe: per bucket, what an operator asks
// first. The stream's configuration against the schema's config: (as
// CreateOrUpdate…Bucket would set it), entries per kind, the consumers on
// the stream and how many more it takes, the mirror's health on an edge,
// and which schema the bucket records having been configured with.

// The stream metadata keys CreateOrUpdate…Bucket records (schema
// evolution): the schema's revision and the bucket's fingerprint.
const (
	metaRevision    = "kvwatchgen.schema.revision"
	metaFingerprint = "kvwatchgen.schema.fingerprint"
)

// description is describe's result for one bucket (-json: one object a
// line, "type": "bucket").
type description struct {
	Type     string `json:"type"`
	Bucket   string `json:"bucket"`
	Live     string `json:"live_bucket"`
	Stream   string `json:"stream"`
	NotFound string `json:"not_found,omitempty"` // why there is nothing else
	// Recorded is the schema the bucket records (absent: none recorded);
	// Schema this schema's.
	Recorded *schemaMark  `json:"recorded_schema,omitempty"`
	Schema   schemaMark   `json:"schema"`
	Config   []setting    `json:"config,omitempty"`
	Revision uint64       `json:"revision"`
	Entries  int          `json:"entries"`
	Kinds    []kindCount  `json:"kinds,omitempty"`
	MaxCons  int          `json:"max_consumers"` // -1: the server's default
	Cons     []consumer   `json:"consumers"`
	Mirror   *mirrorState `json:"mirror,omitempty"`
}

// schemaMark identifies a schema: its revision and the bucket's fingerprint.
type schemaMark struct {
	Revision    string `json:"revision"`
	Fingerprint string `json:"fingerprint"`
}

// setting is one setting of config:, as the stream has it and as the
// schema wants it (declared, or the default CreateOrUpdate applies).
type setting struct {
	Name   string `json:"name"`
	Bucket string `json:"bucket"`
	Schema string `json:"schema"`
}

type consumer struct {
	Name       string     `json:"name"`
	Watcher    bool       `json:"kvwatch_watcher"` // named as the runtime names its consumers
	Filters    int        `json:"filters"`
	Pending    uint64     `json:"pending"`
	LastActive *time.Time `json:"last_active,omitempty"`
}

type mirrorState struct {
	Origin    string        `json:"origin"`
	APIPrefix string        `json:"api_prefix,omitempty"`
	Lag       uint64        `json:"lag"`
	LastHeard time.Duration `json:"last_heard_ns"` // -1: never
	Error     string        `json:"error,omitempty"`
}

func runDescribe(ctx context.Context, o *options) int {
	s, err := connect(o, "describe")
	if err != nil {
		return o.fail(ExitUsage, err)
	}
	defer s.close()
	code := ExitOK
	for _, t := range o.buckets {
		d, err := describeBucket(ctx, s, o, t)
		var notFound *bucketNotFound
		switch {
		case errors.As(err, &notFound):
			d.NotFound, code = err.Error(), ExitError
		case err != nil:
			return o.fail(ExitUsage, err)
		}
		writeDescription(o, d)
	}
	return code
}

// bucketNotFound is a bucket of the schema that is not on the server.
type bucketNotFound struct{ err error }

func (e *bucketNotFound) Error() string { return e.err.Error() }
func (e *bucketNotFound) Unwrap() error { return e.err }

func describeBucket(ctx context.Context, s *session, o *options, t *target) (*description, error) {
	d := &description{Type: "bucket", Bucket: t.Schema.Name, Live: t.live, Stream: "KV_" + t.live,
		Schema: schemaMark{Revision: strconv.Itoa(o.revision), Fingerprint: t.Schema.Fingerprint()}}
	b, err := s.openBucket(ctx, t.live)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return d, &bucketNotFound{err}
	} else if err != nil {
		return d, err
	}
	cfg := b.info.Config
	if fp, ok := cfg.Metadata[metaFingerprint]; ok {
		d.Recorded = &schemaMark{Revision: cfg.Metadata[metaRevision], Fingerprint: fp}
	}
	d.Config = settings(&cfg, t.Schema.Config)
	d.MaxCons = cfg.MaxConsumers
	if m := b.info.Mirror; m != nil {
		d.Mirror = &mirrorState{Origin: m.Name, Lag: m.Lag, LastHeard: m.Active}
		if m.External != nil {
			d.Mirror.APIPrefix = m.External.APIPrefix
		}
		if m.Error != nil {
			d.Mirror.Error = m.Error.Error()
		}
	}
	counts := map[string]int{}
	prog := newProgress(o.env, "describe "+t.live)
	d.Revision, err = s.readState(ctx, b, []string{b.prefix + ">"}, prog.update, func(e entry) error {
		if e.Op == kvwatch.OpPut {
			d.Entries++
			kind, _, _ := t.Classify(e.Key)
			if kind != nil {
				counts[kind.Name()]++
			} else {
				counts[""]++
			}
		}
		return nil
	})
	prog.clear()
	if err != nil {
		return d, err
	}
	for _, k := range t.Kinds {
		d.Kinds = append(d.Kinds, kindCount{Kind: k.Name(), Template: k.Template.String(), Entries: counts[k.Name()]})
	}
	if n := counts[""]; n > 0 {
		d.Kinds = append(d.Kinds, kindCount{Entries: n})
	}
	cctx, done := s.op(ctx, true)
	defer done()
	list := b.stream.ListConsumers(cctx)
	for ci := range list.Info() {
		c := consumer{Name: ci.Name, Watcher: strings.HasPrefix(ci.Name, "kvw_"), Filters: len(ci.Config.FilterSubjects), Pending: ci.NumPending, LastActive: ci.Delivered.Last}
		if ci.Config.FilterSubject != "" {
			c.Filters = 1
		}
		d.Cons = append(d.Cons, c)
	}
	if err := list.Err(); err != nil {
		return d, fmt.Errorf("listing the consumers of %s: %w", d.Stream, s.explain(cctx, t.live, err))
	}
	return d, nil
}

// settings lists the settings of config: as the stream has them and as
// CreateOrUpdate…Bucket would set them: declared, or their defaults
// (runtime/kvwatchimpl's BucketConfig).
func settings(cfg *jetstream.StreamConfig, c *schema.BucketConfig) []setting {
	if c == nil {
		c = &schema.BucketConfig{}
	}
	storage := "file"
	if cfg.Storage == jetstream.MemoryStorage {
		storage = "memory"
	}
	return []setting{
		{"history", strconv.FormatInt(cfg.MaxMsgsPerSubject, 10), strconv.Itoa(max(c.History, 1))},
		{"ttl", duration.OrNone(cfg.MaxAge), duration.OrNone(c.TTL)},
		{"max_value_size", sizeOrUnlimited(int64(cfg.MaxMsgSize)), sizeOrUnlimited(int64(c.MaxValueSize))},
		{"max_bytes", sizeOrUnlimited(cfg.MaxBytes), sizeOrUnlimited(c.MaxBytes)},
		{"storage", storage, string(cmpOrStorage(c.Storage))},
		{"replicas", strconv.Itoa(max(cfg.Replicas, 1)), strconv.Itoa(max(c.Replicas, 1))},
		{"max_consumers", consumersLimit(cfg.MaxConsumers), consumersLimit(orDefault(c.MaxConsumers, kvwatchimpl.DefaultMaxConsumers))},
		{"limit_marker_ttl", duration.OrNone(cfg.SubjectDeleteMarkerTTL), duration.OrNone(c.LimitMarkerTTL)},
		{"atomic_batches", strconv.FormatBool(cfg.AllowAtomicPublish), strconv.FormatBool(c.AtomicBatches)},
		{"description", strconv.Quote(cfg.Description), strconv.Quote(c.Description)},
	}
}

func cmpOrStorage(s schema.Storage) schema.Storage {
	if s == "" {
		return schema.StorageFile
	}
	return s
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func consumersLimit(n int) string {
	if n <= 0 {
		return "-1 (the server's default: 1000 on nats-server 2.15+)"
	}
	return strconv.Itoa(n)
}

func sizeOrUnlimited(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}
