package kvwatchimpl_test

import (
	"testing"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// Stats names the bucket watched: the schema's, or the one WithBucket
// gave, as Bucket does.
func TestStatsNameTheBucket(t *testing.T) {
	js, _ := setup(t)
	kvwatchtest.Bucket(t, js, "network-staging")
	for _, tc := range []struct {
		opts []kvwatch.Option
		want string
	}{
		{nil, "network"},
		{[]kvwatch.Option{kvwatch.WithBucket("network-staging")}, "network-staging"},
	} {
		w := startNetwork(t, js, vpcs("a"), newRecorder(), tc.opts...)
		if got := w.Stats().Bucket; got != tc.want || got != w.Bucket() {
			t.Errorf("Stats().Bucket = %q, Bucket() = %q, want %q", got, w.Bucket(), tc.want)
		}
	}
}
