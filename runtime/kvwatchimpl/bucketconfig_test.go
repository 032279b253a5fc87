package kvwatchimpl_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// Tests of CreateOrUpdateBucket against a real server. What it sends is
// read off the wire: a second connection subscribes to the JetStream API
// subjects, so "nothing changed" is checked as "no request that changes a
// stream was sent", not only as an unchanged configuration.

// bucketEnv is a server, a client of it, and a recorder of the requests
// that change streams.
type bucketEnv struct {
	js  jetstream.JetStream
	nc  *nats.Conn
	obs chan *nats.Msg
}

const markSubject = "kvwtest.mark"

func newBucketEnv(t *testing.T) *bucketEnv {
	t.Helper()
	s := kvwatchtest.Server(t)
	nc, js := kvwatchtest.Connect(t, s)
	e := &bucketEnv{js: js, nc: nc, obs: make(chan *nats.Msg, 256)}
	e.observe(t, s)
	return e
}

func (e *bucketEnv) observe(t *testing.T, s *server.Server) {
	t.Helper()
	obs, _ := kvwatchtest.Connect(t, s)
	for _, subj := range []string{"$JS.API.STREAM.>", markSubject} {
		if _, err := obs.ChanSubscribe(subj, e.obs); err != nil {
			t.Fatal(err)
		}
	}
	if err := obs.Flush(); err != nil {
		t.Fatal(err)
	}
}

// mutations returns the stream-changing API requests sent since the last
// call, as "CREATE KV_b", "UPDATE KV_b". It publishes a mark after them on
// the client's connection: messages of one connection reach a subscriber
// in order, so every request sent before the mark arrives before it.
func (e *bucketEnv) mutations(t *testing.T) []string {
	t.Helper()
	if err := e.nc.Publish(markSubject, nil); err != nil {
		t.Fatal(err)
	}
	var out []string
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-e.obs:
			if m.Subject == markSubject {
				return out
			}
			verb, stream, _ := strings.Cut(strings.TrimPrefix(m.Subject, "$JS.API.STREAM."), ".")
			switch verb {
			case "CREATE", "UPDATE", "DELETE", "PURGE", "MSG": // MSG.DELETE
				out = append(out, verb+" "+stream)
			}
		case <-deadline:
			t.Fatal("the mark did not arrive within 10s")
		}
	}
}

func (e *bucketEnv) apply(t *testing.T, name string, c kvwatchimpl.BucketConfig, opts ...kvclient.BucketOption) (jetstream.KeyValue, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return kvwatchimpl.CreateOrUpdateBucket(ctx, e.js, &kvwatchimpl.BucketSpec{Bucket: name, Config: c}, opts...)
}

func (e *bucketEnv) mustApply(t *testing.T, name string, c kvwatchimpl.BucketConfig, opts ...kvclient.BucketOption) jetstream.KeyValue {
	t.Helper()
	kv, err := e.apply(t, name, c, opts...)
	if err != nil {
		t.Fatalf("CreateOrUpdateBucket(%s): %v", name, err)
	}
	return kv
}

func (e *bucketEnv) stream(t *testing.T, name string) jetstream.StreamConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := e.js.Stream(ctx, "KV_"+name)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config
}

func wantMutations(t *testing.T, e *bucketEnv, what string, want ...string) {
	t.Helper()
	if got := e.mutations(t); !slices.Equal(got, want) {
		t.Errorf("%s sent %q, want %q", what, got, want)
	}
}

var fullConfig = kvwatchimpl.BucketConfig{
	History:        5,
	TTL:            time.Hour,
	MaxValueSize:   1024,
	MaxBytes:       1 << 20,
	Storage:        kvwatchimpl.MemoryStorage,
	Replicas:       1,
	MaxConsumers:   7,
	LimitMarkerTTL: 2 * time.Second,
	AtomicBatches:  true,
	Description:    "routes",
}

// Every declared setting reaches the stream, MaxConsumers included, which
// nats.go's KeyValueConfig cannot hold: one create and one update.
func TestCreateOrUpdateBucketCreates(t *testing.T) {
	e := newBucketEnv(t)
	kv := e.mustApply(t, "full", fullConfig)
	wantMutations(t, e, "creating", "CREATE KV_full", "UPDATE KV_full")
	c := e.stream(t, "full")
	if c.MaxMsgsPerSubject != 5 || c.MaxAge != time.Hour || c.MaxMsgSize != 1024 || c.MaxBytes != 1<<20 ||
		c.Storage != jetstream.MemoryStorage || c.Replicas != 1 || c.MaxConsumers != 7 ||
		c.SubjectDeleteMarkerTTL != 2*time.Second || !c.AllowMsgTTL || !c.AllowAtomicPublish || c.Description != "routes" {
		t.Errorf("stream config %+v does not hold %+v", c, fullConfig)
	}
	if _, err := kv.Put(context.Background(), "k", []byte("v")); err != nil {
		t.Errorf("the returned bucket: %v", err)
	}
}

// A config that declares nothing gives nats.go's KV defaults, and
// DefaultMaxConsumers written into the stream.
func TestCreateOrUpdateBucketDefaults(t *testing.T) {
	e := newBucketEnv(t)
	e.mustApply(t, "plain", kvwatchimpl.BucketConfig{})
	c := e.stream(t, "plain")
	if c.MaxMsgsPerSubject != 1 || c.MaxAge != 0 || c.MaxMsgSize != -1 || c.MaxBytes != -1 ||
		c.Storage != jetstream.FileStorage || c.Replicas != 1 || c.MaxConsumers != kvwatchimpl.DefaultMaxConsumers ||
		c.SubjectDeleteMarkerTTL != 0 || c.AllowMsgTTL || c.AllowAtomicPublish || c.Description != "" {
		t.Errorf("stream config %+v: want the defaults", c)
	}
}

// Applying the same config again sends no change, for a full config and
// for one of defaults.
func TestCreateOrUpdateBucketUnchangedIsNoOp(t *testing.T) {
	e := newBucketEnv(t)
	for _, tc := range []struct {
		name string
		cfg  kvwatchimpl.BucketConfig
	}{{"full", fullConfig}, {"plain", kvwatchimpl.BucketConfig{}}} {
		e.mustApply(t, tc.name, tc.cfg)
		e.mutations(t)
		before := e.stream(t, tc.name)
		e.mustApply(t, tc.name, tc.cfg)
		wantMutations(t, e, "applying "+tc.name+" again")
		if after := e.stream(t, tc.name); after.MaxConsumers != before.MaxConsumers || after.MaxMsgsPerSubject != before.MaxMsgsPerSubject {
			t.Errorf("%s: config changed from %+v to %+v", tc.name, before, after)
		}
	}
}

// Changes that drop nothing are applied in one update, and the entries
// stay.
func TestCreateOrUpdateBucketUpdates(t *testing.T) {
	e := newBucketEnv(t)
	kv := e.mustApply(t, "b", kvwatchimpl.BucketConfig{History: 2, TTL: time.Hour})
	for range 2 {
		if _, err := kv.Put(context.Background(), "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	e.mutations(t)
	e.mustApply(t, "b", kvwatchimpl.BucketConfig{History: 4, TTL: 2 * time.Hour, MaxValueSize: 64, MaxConsumers: 3, Description: "d"})
	wantMutations(t, e, "updating", "UPDATE KV_b")
	c := e.stream(t, "b")
	if c.MaxMsgsPerSubject != 4 || c.MaxAge != 2*time.Hour || c.MaxMsgSize != 64 || c.MaxConsumers != 3 || c.Description != "d" {
		t.Errorf("stream config %+v: the update is missing", c)
	}
	if n := historyLen(t, kv, "k"); n != 2 {
		t.Errorf("key k has %d revisions after the update, want 2", n)
	}
}

// Changes that drop data, or that the server cannot make, are refused with
// every difference listed, and nothing is sent.
func TestCreateOrUpdateBucketRefuses(t *testing.T) {
	e := newBucketEnv(t)
	kv := e.mustApply(t, "b", kvwatchimpl.BucketConfig{History: 5, Description: "a"})
	for range 5 {
		if _, err := kv.Put(context.Background(), "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	e.mutations(t)
	_, err := e.apply(t, "b", kvwatchimpl.BucketConfig{History: 2, TTL: 30 * time.Minute, Storage: kvwatchimpl.MemoryStorage, MaxConsumers: 5, Description: "b"})
	const want = `kvclient: bucket b not updated, nothing changed: ` +
		`history 5 → 2 (drops the older revisions of every key; kvclient.AllowDataLoss() allows it), ` +
		`ttl none → 30m (entries older than it expire at once; kvclient.AllowDataLoss() allows it), ` +
		`storage file → memory (the server cannot change storage in place: create a new bucket and copy the entries), ` +
		`max_consumers 1000 → 5, description "a" → "b"`
	var ce *kvclient.BucketConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *BucketConfigError", err)
	}
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	if len(ce.Changes) != 5 || ce.Bucket != "b" {
		t.Errorf("error holds %+v", ce)
	}
	wantMutations(t, e, "a refusal")
	if c := e.stream(t, "b"); c.MaxMsgsPerSubject != 5 || c.Description != "a" || c.MaxConsumers != kvwatchimpl.DefaultMaxConsumers {
		t.Errorf("the refusal changed the stream: %+v", c)
	}
	if n := historyLen(t, kv, "k"); n != 5 {
		t.Errorf("key k has %d revisions after a refusal, want 5", n)
	}
}

// AllowDataLoss applies what drops data, and the server drops it; a change
// of storage stays refused.
func TestCreateOrUpdateBucketAllowDataLoss(t *testing.T) {
	e := newBucketEnv(t)
	kv := e.mustApply(t, "b", kvwatchimpl.BucketConfig{History: 5})
	for range 5 {
		if _, err := kv.Put(context.Background(), "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	e.mutations(t)
	_, err := e.apply(t, "b", kvwatchimpl.BucketConfig{History: 2, Storage: kvwatchimpl.MemoryStorage}, kvclient.AllowDataLoss())
	const want = `kvclient: bucket b not updated, nothing changed: history 5 → 2, ` +
		`storage file → memory (the server cannot change storage in place: create a new bucket and copy the entries)`
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
	wantMutations(t, e, "a refused storage change")

	e.mustApply(t, "b", kvwatchimpl.BucketConfig{History: 2}, kvclient.AllowDataLoss())
	wantMutations(t, e, "lowering history", "UPDATE KV_b")
	if c := e.stream(t, "b"); c.MaxMsgsPerSubject != 2 {
		t.Errorf("history is %d, want 2", c.MaxMsgsPerSubject)
	}
	kvwatchtest.Eventually(t, 5*time.Second, "the server keeps 2 revisions of k", func() bool { return historyLen(t, kv, "k") == 2 })
}

// Which changes drop data: each case creates a bucket with from, applies
// to without AllowDataLoss, and expects a refusal or an update.
func TestCreateOrUpdateBucketWhatIsRefused(t *testing.T) {
	e := newBucketEnv(t)
	type cfg = kvwatchimpl.BucketConfig
	cases := []struct {
		name     string
		from, to cfg
		refused  bool
	}{
		{"history-raised", cfg{History: 3}, cfg{History: 5}, false},
		{"history-lowered", cfg{History: 5}, cfg{History: 3}, true},
		{"ttl-set", cfg{}, cfg{TTL: time.Hour}, true},
		{"ttl-raised", cfg{TTL: time.Hour}, cfg{TTL: 2 * time.Hour}, false},
		{"ttl-lowered", cfg{TTL: 2 * time.Hour}, cfg{TTL: time.Hour}, true},
		{"ttl-removed", cfg{TTL: time.Hour}, cfg{}, false},
		{"max-bytes-set", cfg{}, cfg{MaxBytes: 1 << 20}, false}, // discard new: puts fail when full
		{"max-value-size-lowered", cfg{MaxValueSize: 1024}, cfg{MaxValueSize: 16}, false},
		{"storage-changed", cfg{Storage: kvwatchimpl.MemoryStorage}, cfg{}, true},
		{"markers-set", cfg{}, cfg{LimitMarkerTTL: time.Second}, false},
		{"markers-removed", cfg{LimitMarkerTTL: time.Second}, cfg{}, false},
		{"max-consumers-lowered", cfg{MaxConsumers: 10}, cfg{MaxConsumers: 2}, false},
	}
	for _, tc := range cases {
		e.mustApply(t, tc.name, tc.from)
		e.mutations(t)
		_, err := e.apply(t, tc.name, tc.to)
		var ce *kvclient.BucketConfigError
		switch {
		case tc.refused && !errors.As(err, &ce):
			t.Errorf("%s: err = %v, want a refusal", tc.name, err)
		case tc.refused:
			wantMutations(t, e, tc.name+" refused")
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		default:
			wantMutations(t, e, tc.name, "UPDATE KV_"+tc.name)
		}
	}
	// Per-message TTLs stay on once on (the server cannot turn them off);
	// the markers are gone.
	if c := e.stream(t, "markers-removed"); c.SubjectDeleteMarkerTTL != 0 || !c.AllowMsgTTL {
		t.Errorf("markers removed: SubjectDeleteMarkerTTL %v, AllowMsgTTL %v", c.SubjectDeleteMarkerTTL, c.AllowMsgTTL)
	}
}

// MaxConsumers is set on the stream and the server enforces it; a bucket
// made without it (nats.go writes -1) gets DefaultMaxConsumers.
func TestCreateOrUpdateBucketMaxConsumers(t *testing.T) {
	e := newBucketEnv(t)
	e.mustApply(t, "b", kvwatchimpl.BucketConfig{MaxConsumers: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := e.js.Stream(ctx, "KV_b")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{InactiveThreshold: time.Minute})
		switch {
		case i < 2 && err != nil:
			t.Fatalf("consumer %d: %v", i+1, err)
		case i == 2 && !errors.Is(err, jetstream.ErrMaximumConsumersLimit):
			t.Errorf("consumer 3 of a stream with max_consumers 2: err = %v, want ErrMaximumConsumersLimit", err)
		}
	}

	kvwatchtest.Bucket(t, e.js, "bare")
	if c := e.stream(t, "bare"); c.MaxConsumers != -1 {
		t.Fatalf("nats.go made MaxConsumers %d, the test expects -1", c.MaxConsumers)
	}
	e.mutations(t)
	e.mustApply(t, "bare", kvwatchimpl.BucketConfig{})
	wantMutations(t, e, "adopting a bucket", "UPDATE KV_bare")
	if c := e.stream(t, "bare"); c.MaxConsumers != kvwatchimpl.DefaultMaxConsumers {
		t.Errorf("MaxConsumers %d, want %d", c.MaxConsumers, kvwatchimpl.DefaultMaxConsumers)
	}
}

// Settings the schema does not govern stay as the bucket has them.
func TestCreateOrUpdateBucketKeepsOtherSettings(t *testing.T) {
	e := newBucketEnv(t)
	kvwatchtest.BucketWith(t, e.js, jetstream.KeyValueConfig{Bucket: "b", Compression: true, Metadata: map[string]string{"owner": "ops"}})
	e.mustApply(t, "b", kvwatchimpl.BucketConfig{History: 3})
	c := e.stream(t, "b")
	if c.MaxMsgsPerSubject != 3 || c.Compression != jetstream.S2Compression || c.Metadata["owner"] != "ops" {
		t.Errorf("stream config %+v: want history 3, compression and metadata kept", c)
	}
}

// Bad input is an error before anything is sent; the server's refusals
// wrap nats.go's errors.
func TestCreateOrUpdateBucketErrors(t *testing.T) {
	e := newBucketEnv(t)
	ctx := context.Background()
	if _, err := kvwatchimpl.CreateOrUpdateBucket(ctx, e.js, nil); err == nil {
		t.Error("nil spec: no error")
	}
	for _, spec := range []kvwatchimpl.BucketSpec{
		{Bucket: "a.b"},
		{Bucket: "b", Config: kvwatchimpl.BucketConfig{History: 65}},
		{Bucket: "b", Config: kvwatchimpl.BucketConfig{TTL: -time.Second}},
		{Bucket: "b", Config: kvwatchimpl.BucketConfig{Storage: 3}},
	} {
		if _, err := kvwatchimpl.CreateOrUpdateBucket(ctx, e.js, &spec); err == nil {
			t.Errorf("%+v: no error", spec)
		}
	}
	wantMutations(t, e, "bad specs")

	_, err := e.apply(t, "b", kvwatchimpl.BucketConfig{Replicas: 3}) // one server
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "bucket b") {
		t.Errorf("replicas 3 on one server: err = %v, want the server's *jetstream.APIError, naming the bucket", err)
	}

	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "KV_plain", Subjects: []string{"plain.>"}}); err != nil {
		t.Fatal(err)
	}
	e.mutations(t)
	if _, err := e.apply(t, "plain", kvwatchimpl.BucketConfig{}); !errors.Is(err, jetstream.ErrBadBucket) {
		t.Errorf("a stream KV_plain that is no bucket: err = %v, want ErrBadBucket", err)
	}
	wantMutations(t, e, "a stream that is no bucket")
}

// historyLen is the number of revisions the bucket keeps of key.
func historyLen(t *testing.T, kv jetstream.KeyValue, key string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h, err := kv.History(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	return len(h)
}
