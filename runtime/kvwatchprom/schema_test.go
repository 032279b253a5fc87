package kvwatchprom_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchprom"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// kvwatch_schema_info says which schema a watcher's code and its bucket
// come from, kvwatch_schema_behind whether the bucket's is newer: on a
// bucket made by the code's own CreateOrUpdate, the same schema and 0;
// once a newer one is recorded (here by a stream update, as the next
// revision's CreateOrUpdate would), its labels at the watcher's next
// stream check (here, its consumer recreated), and 1.
func TestCollectorReportsWhichSchema(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js := kvwatchtest.JetStream(t)
	if _, err := fleetkv.CreateOrUpdateNetworkBucket(ctx, js); err != nil {
		t.Fatal(err)
	}
	w := watch(t, ctx, js, fleetkv.NetworkHandlers{}, []string{"a"})
	c := kvwatchprom.NewCollector()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if err := c.Add(w.Watcher, "routing"); err != nil {
		t.Fatal(err)
	}
	fp, rev := w.Stats().Schema.Fingerprint, strconv.Itoa(w.Stats().Schema.Revision)
	if len(fp) != 16 {
		t.Fatalf("Stats().Schema.Fingerprint = %q, want the 16 hex digits of the generated code", fp)
	}
	want := func(bucketRevision, bucketFingerprint, behind string) []string {
		l := `bucket="network",watcher="routing"`
		return []string{
			`kvwatch_schema_behind{` + l + `} ` + behind,
			`kvwatch_schema_info{bucket="network",bucket_fingerprint="` + bucketFingerprint + `",bucket_revision="` + bucketRevision +
				`",fingerprint="` + fp + `",revision="` + rev + `",watcher="routing"} 1`,
		}
	}
	if got := series(t, reg, "kvwatch_schema_"); !slices.Equal(got, want(rev, fp, "0")) {
		t.Errorf("gathered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want(rev, fp, "0"), "\n"))
	}

	s, err := js.Stream(ctx, "KV_network")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Metadata["kvwatchgen.schema.revision"] = strconv.Itoa(w.Stats().Schema.Revision + 1)
	cfg.Metadata["kvwatchgen.schema.fingerprint"] = "0123456789abcdef"
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	name := w.Stats().Consumer
	if err := js.DeleteConsumer(ctx, "KV_network", name); err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the newer schema learned", func() bool { return w.Stats().Schema.Behind })
	if got := series(t, reg, "kvwatch_schema_"); !slices.Equal(got, want(strconv.Itoa(w.Stats().Schema.Revision+1), "0123456789abcdef", "1")) {
		t.Errorf("gathered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want(strconv.Itoa(w.Stats().Schema.Revision+1), "0123456789abcdef", "1"), "\n"))
	}
}
