package kvwatch_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// A batched direct get answer stops at the byte limit the watcher asks
// for (8 MiB). With 40 values of ~300 KB in scope the first answer is cut
// short: the read goes on where it stopped, and the cache ends equal to
// the bucket.
func TestDirectGetAnswerCutShort(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Storage: jetstream.MemoryStorage})
	big := strings.Repeat("x", 300_000)
	for i := range 40 {
		put(t, kv, fmt.Sprintf("vpc.a.route.r%02d", i), route{CIDR: big, NextHop: "first"})
	}
	// An overwrite inside the stream leaves an interior delete: the state
	// is then read by direct get, not by the consumer.
	put(t, kv, "vpc.a.route.r05", route{CIDR: big, NextHop: "again"})

	requests := directGetRequests(t, s)

	r := newRecorder()
	w, routes, configs := startCached(t, js, vpcs("a"), r)
	if got := w.Stats().InitialState; got != "direct-get" {
		t.Fatalf("InitialState = %q, want direct-get", got)
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, "a"); !slices.Equal(got, want) {
		t.Fatalf("the cache has %d entries, want %d", len(got), len(want))
	}
	if _, errs := r.snapshot(); len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	if n, _, _ := requests.Pending(); n < 2 {
		t.Errorf("%d read requests: the first answer was not cut short", n)
	}
}

// Many small scopes holding more than 1,024 keys in all are read in a few
// requests (the filters split in halves until each answer fits), not one
// request per scope, and the state is exact.
func TestManySmallScopesReadInFewRequests(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Storage: jetstream.MemoryStorage})
	names := make([]string, 1200)
	for i := range names {
		names[i] = fmt.Sprintf("v%d", i)
		put(t, kv, "vpc."+names[i]+".route.r", route{CIDR: names[i]})
	}
	requests := directGetRequests(t, s)
	r := newRecorder()
	w, routes, configs := startCached(t, js, vpcs(names...), r)
	if got := w.Stats().InitialState; got != "direct-get" {
		t.Fatalf("InitialState = %q, want direct-get", got)
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, names...); !slices.Equal(got, want) {
		t.Fatalf("the cache has %d entries, want %d", len(got), len(want))
	}
	// 2,400 filters: one request that matches too many keys, then two
	// halves of 600 keys each.
	if n, _, _ := requests.Pending(); n > 5 {
		t.Errorf("%d read requests for 1,200 scopes of one key, want a few", n)
	}
}

// directGetRequests subscribes a second client to the network bucket's
// direct get subject: its pending count is the number of read requests
// sent from then on.
func directGetRequests(t *testing.T, s *server.Server) *nats.Subscription {
	t.Helper()
	observer, _ := kvwatchtest.Connect(t, s)
	requests, err := observer.SubscribeSync("$JS.API.DIRECT.GET.KV_network")
	if err != nil {
		t.Fatal(err)
	}
	if err := observer.Flush(); err != nil {
		t.Fatal(err)
	}
	return requests
}
