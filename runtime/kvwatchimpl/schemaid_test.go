package kvwatchimpl_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// Tests of which schema wrote a bucket: CreateOrUpdateBucket records its
// spec's SchemaID in the stream's metadata, and a watcher reads it from
// the stream info it fetches, shows it in Stats().Schema and logs once
// when its own code is of an older schema.

var (
	schemaA = kvwatchimpl.SchemaID{Revision: 3, Fingerprint: "00000000000000aa"}
	schemaB = kvwatchimpl.SchemaID{Revision: 4, Fingerprint: "00000000000000bb"}
	// schemaC is of schemaB's revision, and another fingerprint: a change
	// made without raising revision:.
	schemaC = kvwatchimpl.SchemaID{Revision: 4, Fingerprint: "00000000000000cc"}
	schemaD = kvwatchimpl.SchemaID{Revision: 5, Fingerprint: "00000000000000dd"}
)

// specOf is the network bucket's spec as code of schema id has it.
func specOf(id kvwatchimpl.SchemaID) *kvwatchimpl.BucketSpec {
	s := network
	s.Schema = id
	return &s
}

func (e *bucketEnv) applySchema(t *testing.T, name string, c kvwatchimpl.BucketConfig, id kvwatchimpl.SchemaID) (jetstream.KeyValue, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return kvwatchimpl.CreateOrUpdateBucket(ctx, e.js, &kvwatchimpl.BucketSpec{Bucket: name, Config: c, Schema: id})
}

// wantRecord fails the test unless bucket name's stream metadata records
// revision and fingerprint ("" for no key) and keeps owner=ops and the
// server's own _nats.ver.
func (e *bucketEnv) wantRecord(t *testing.T, name, revision, fingerprint string) {
	t.Helper()
	meta := e.stream(t, name).Metadata
	rev, hasRev := meta["kvwatchgen.schema.revision"]
	fp, hasFP := meta["kvwatchgen.schema.fingerprint"]
	if rev != revision || fp != fingerprint || hasRev != (revision != "") || hasFP != (fingerprint != "") {
		t.Errorf("bucket %s records revision %q, fingerprint %q; want %q, %q (metadata %v)", name, rev, fp, revision, fingerprint, meta)
	}
	if meta["owner"] != "ops" || meta["_nats.ver"] == "" {
		t.Errorf("bucket %s: metadata %v lost a key it had", name, meta)
	}
}

// CreateOrUpdateBucket records the schema in the stream's metadata,
// keeping every other key: on a bucket it adopts, again with no request
// when nothing differs, updated to a newer schema and, written as given,
// to an older one; a spec without a SchemaID (version 5 code) changes
// nothing; a refusal lists the record's change with the others, and makes
// none. A bucket it creates records it too.
func TestCreateOrUpdateBucketRecordsTheSchema(t *testing.T) {
	e := newBucketEnv(t)
	kvwatchtest.BucketWith(t, e.js, jetstream.KeyValueConfig{Bucket: "b", History: 5, Metadata: map[string]string{"owner": "ops"}})
	e.mutations(t)
	apply := func(id kvwatchimpl.SchemaID) {
		t.Helper()
		if _, err := e.applySchema(t, "b", kvwatchimpl.BucketConfig{History: 5}, id); err != nil {
			t.Fatalf("CreateOrUpdateBucket with %+v: %v", id, err)
		}
	}
	apply(schemaA)
	wantMutations(t, e, "adopting a bucket", "UPDATE KV_b")
	e.wantRecord(t, "b", "3", schemaA.Fingerprint)
	apply(schemaA)
	wantMutations(t, e, "the same schema again")
	apply(schemaB)
	wantMutations(t, e, "a newer schema", "UPDATE KV_b")
	e.wantRecord(t, "b", "4", schemaB.Fingerprint)
	apply(schemaA)
	wantMutations(t, e, "an older schema", "UPDATE KV_b")
	e.wantRecord(t, "b", "3", schemaA.Fingerprint)
	apply(kvwatchimpl.SchemaID{})
	wantMutations(t, e, "a spec of version 5 code")
	e.wantRecord(t, "b", "3", schemaA.Fingerprint)

	_, err := e.applySchema(t, "b", kvwatchimpl.BucketConfig{History: 2}, schemaB)
	const want = `kvclient: bucket b not updated, nothing changed: ` +
		`history 5 → 2 (drops the older revisions of every key; kvclient.AllowDataLoss() allows it), ` +
		`schema_revision 3 → 4, schema_fingerprint 00000000000000aa → 00000000000000bb`
	var ce *kvclient.BucketConfigError
	if !errors.As(err, &ce) || err.Error() != want {
		t.Errorf("a refused change with a new schema: err\n%v\nwant\n%s", err, want)
	}
	wantMutations(t, e, "a refusal")
	e.wantRecord(t, "b", "3", schemaA.Fingerprint)

	if _, err := e.applySchema(t, "fresh", kvwatchimpl.BucketConfig{}, kvwatchimpl.SchemaID{Fingerprint: "00000000000000ff"}); err != nil {
		t.Fatal(err)
	}
	// A schema without revision: is recorded as revision 0.
	if meta := e.stream(t, "fresh").Metadata; meta["kvwatchgen.schema.revision"] != "0" || meta["kvwatchgen.schema.fingerprint"] != "00000000000000ff" {
		t.Errorf("a bucket created: metadata %v, want revision 0 and its fingerprint", meta)
	}
}

// schemaWarnings returns the lines of log that say the bucket's schema is
// newer than the watcher's.
func schemaWarnings(log *lineLog) []string {
	var out []string
	for line := range strings.Lines(log.text()) {
		if strings.Contains(line, "WARN kvwatch: the bucket records a newer schema") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// startSchema starts a watcher of VPC a with code of schema id (and
// opts), logging into the lineLog returned, and waits until it is synced.
func startSchema(t *testing.T, js jetstream.JetStream, id kvwatchimpl.SchemaID, opts ...kvwatch.Option) (*kvwatchimpl.Watcher, *lineLog) {
	t.Helper()
	log := &lineLog{}
	_, _, bindings := networkBindings(newRecorder())
	w, err := kvwatchimpl.Start(context.Background(), js, specOf(id), vpcs("a"), bindings, append(opts, kvwatch.WithLogger(slog.New(log)))...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)
	return w, log
}

// resetConsumer deletes w's consumer and waits until w made another: it
// checked its stream in between.
func resetConsumer(t *testing.T, js jetstream.JetStream, w *kvwatchimpl.Watcher) {
	t.Helper()
	name := w.Stats().Consumer
	if err := js.DeleteConsumer(context.Background(), "KV_"+w.Bucket(), name); err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the consumer recreated", func() bool {
		c := w.Stats().Consumer
		return c != "" && c != name
	})
}

// A watcher shows its own schema and the one its bucket records
// (Stats().Schema), and logs once, at WARN, when the bucket's is newer: a
// higher revision, or the same with another fingerprint. Code of the
// bucket's schema, code without a SchemaID (version 5) and a bucket
// without a record log nothing. A schema deployed while watchers run is
// learned from the stream info they fetch at their next check (here,
// their consumer recreated), and logged by those it leaves behind, once.
func TestWatcherShowsWhichSchemaWroteTheBucket(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv, err := kvwatchimpl.CreateOrUpdateBucket(ctx, js, specOf(schemaB))
	if err != nil {
		t.Fatal(err)
	}
	put(t, kv, "vpc.a.route.r1", route{CIDR: "a"})
	stats := func(own, bucket kvwatchimpl.SchemaID, behind bool) kvwatch.SchemaStats {
		return kvwatch.SchemaStats{Revision: own.Revision, Fingerprint: own.Fingerprint,
			BucketRevision: bucket.Revision, BucketFingerprint: bucket.Fingerprint, Behind: behind}
	}
	cases := []struct {
		name   string
		own    kvwatchimpl.SchemaID
		behind bool
	}{
		{"older code", schemaA, true},
		{"the bucket's code", schemaB, false},
		{"another schema of the same revision", schemaC, true},
		{"version 5 code", kvwatchimpl.SchemaID{}, false},
	}
	watchers := make([]*kvwatchimpl.Watcher, len(cases))
	logs := make([]*lineLog, len(cases))
	for i, c := range cases {
		watchers[i], logs[i] = startSchema(t, js, c.own)
		if got, want := watchers[i].Stats().Schema, stats(c.own, schemaB, c.behind); got != want {
			t.Errorf("%s: Stats().Schema = %+v, want %+v", c.name, got, want)
		}
		if warned := schemaWarnings(logs[i]); len(warned) != map[bool]int{true: 1}[c.behind] {
			t.Errorf("%s: logged %q", c.name, warned)
		}
	}
	const line = "WARN kvwatch: the bucket records a newer schema than this watcher's code was generated from (or another of the same revision): " +
		"entries of kinds it does not know are skipped and fields it does not know ignored until the node runs code generated from the bucket's schema " +
		"bucket=network revision=3 fingerprint=00000000000000aa bucket_revision=4 bucket_fingerprint=00000000000000bb"
	if warned := schemaWarnings(logs[0]); len(warned) == 1 && !strings.HasSuffix(warned[0], line) {
		t.Errorf("logged\n%s\nwant\n%s", warned[0], line)
	}

	// A newer schema deployed: every watcher learns it at its next check.
	if _, err := kvwatchimpl.CreateOrUpdateBucket(ctx, js, specOf(schemaD)); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		resetConsumer(t, js, watchers[i])
		behind := c.own.Fingerprint != ""
		kvwatchtest.Eventually(t, 10*time.Second, c.name+" learning the new record", func() bool {
			return watchers[i].Stats().Schema == stats(c.own, schemaD, behind)
		})
		if warned := schemaWarnings(logs[i]); len(warned) != map[bool]int{true: 1}[behind] {
			t.Errorf("%s, after the newer schema: logged %q", c.name, warned)
		}
	}

	kvwatchtest.Bucket(t, js, "plain")
	w, log := startSchema(t, js, schemaA, kvwatch.WithBucket("plain"))
	if got, want := w.Stats().Schema, stats(schemaA, kvwatchimpl.SchemaID{}, false); got != want {
		t.Errorf("a bucket with no record: Stats().Schema = %+v, want %+v", got, want)
	}
	if warned := schemaWarnings(log); len(warned) != 0 {
		t.Errorf("a bucket with no record: logged %q", warned)
	}
}

// On an edge, a watcher sees its mirror's own metadata: nats-server does
// not copy the origin's to a mirror, neither when the origin's changes
// nor when a mirror is created after it. The hub's bucket records the
// schema; the edge's watcher shows no record, and logs nothing.
func TestSchemaOnAnEdgeMirror(t *testing.T) {
	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, kvwatchtest.FleetOptions{})
	_, hub := f.ConnectHub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hubKV, err := kvwatchimpl.CreateOrUpdateBucket(ctx, hub, specOf(schemaB))
	if err != nil {
		t.Fatal(err)
	}
	edge := f.Edges[0]
	_, js := edge.Connect(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "network-late",
		Mirror: &jetstream.StreamSource{Name: "network", Domain: kvwatchtest.HubDomain}}); err != nil {
		t.Fatal(err)
	}
	rev := put(t, hubKV, "vpc.a.route.r1", route{CIDR: "a"})
	f.WaitMirrored(t, edge, rev)
	for _, bucket := range []string{"network", "network-late"} {
		w, log := startSchema(t, js, schemaA, kvwatch.WithBucket(bucket))
		if err := w.WaitRevision(ctx, rev); err != nil {
			t.Fatal(err)
		}
		s := w.Stats()
		if s.Mirror == nil || s.Schema != (kvwatch.SchemaStats{Revision: 3, Fingerprint: schemaA.Fingerprint}) {
			t.Errorf("mirror %s: Stats().Mirror %+v, Schema %+v: want a mirror, and no record", bucket, s.Mirror, s.Schema)
		}
		if warned := schemaWarnings(log); len(warned) != 0 {
			t.Errorf("mirror %s: logged %q", bucket, warned)
		}
	}
	s, err := hub.Stream(ctx, "KV_network")
	if err != nil {
		t.Fatal(err)
	}
	if meta := s.CachedInfo().Config.Metadata; meta["kvwatchgen.schema.revision"] != "4" {
		t.Errorf("the hub's bucket: metadata %v, want schema revision 4 recorded", meta)
	}
}
