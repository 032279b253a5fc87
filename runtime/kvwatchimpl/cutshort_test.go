package kvwatchimpl_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
	if n := requests(); n < 2 {
		t.Errorf("%d read requests: the first answer was not cut short", n)
	}
}

// Many small scopes holding more than 1,024 keys in all are read in a few
// requests (sized by the keys per filter the first answers held), not one
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
	ballast(t, js, 2400)
	requests := directGetRequests(t, s)
	r := newRecorder()
	w, routes, configs := startCached(t, js, vpcs(names...), r)
	if got := w.Stats().InitialState; got != "direct-get" {
		t.Fatalf("InitialState = %q, want direct-get", got)
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, names...); !slices.Equal(got, want) {
		t.Fatalf("the cache has %d entries, want %d", len(got), len(want))
	}
	// 2,400 filters: one request that matches too many keys, a probe of
	// one (empty) config filter, one of two filters holding a key, then
	// chunks of 1,024 filters (512 keys): 6 at most.
	if n := requests(); n > 6 {
		t.Errorf("%d read requests for 1,200 scopes of one key, want 6 at most", n)
	}
}

// Scopes of several hundred keys each are read about one scope per
// request: the probe shows how dense they are. Splitting the filters in
// halves instead spends a refused request for every request answered
// (40 filters: 39 refused), each costing the server nearly an answer.
func TestDenseScopesReadWithoutRefusals(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Storage: jetstream.MemoryStorage})
	const scopes, perScope = 20, 600
	names := make([]string, scopes)
	for i := range names {
		names[i] = fmt.Sprintf("v%02d", i)
		for j := range perScope {
			data := fmt.Sprintf(`{"cidr":"10.%d.%d.0/24"}`, i, j%256)
			if _, err := js.PublishAsync(fmt.Sprintf("$KV.network.vpc.%s.route.r%03d", names[i], j), []byte(data)); err != nil {
				t.Fatal(err)
			}
		}
	}
	kvwatchtest.Eventually(t, 10*time.Second, "loading the bucket", func() bool {
		select {
		case <-js.PublishAsyncComplete():
			return true
		default:
			return false
		}
	})
	ballast(t, js, 3*scopes*perScope/2)
	refusals := directGetRefusals(t, s)
	r := newRecorder()
	w, routes, configs := startCached(t, js, vpcs(names...), r)
	if got := w.Stats().InitialState; got != "direct-get" {
		t.Fatalf("InitialState = %q, want direct-get", got)
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, names...); len(want) != scopes*perScope || !slices.Equal(got, want) {
		t.Fatalf("the cache has %d entries, want %d (%d in the bucket)", len(got), len(want), scopes*perScope)
	}
	// 40 filters (an empty config filter and a route filter of 600 keys
	// per scope): the request for all of them is refused, and none after
	// it. Splitting in halves had 18 more refused (of 39 requests).
	if n := refusals(); n != 1 {
		t.Errorf("%d read requests refused (413), want only the first", n)
	}
}

// directGetRequests subscribes a second client to the network bucket's
// direct get subject; the function it returns counts the read requests
// (multi_last) sent from then on, leaving out the seal's (next_by_subj)
// and the counts a read's choice sends (batch 1: readpath.go).
func directGetRequests(t *testing.T, s *server.Server) func() int {
	t.Helper()
	observer, _ := kvwatchtest.Connect(t, s)
	requests, err := observer.SubscribeSync("$JS.API.DIRECT.GET.KV_network")
	if err != nil {
		t.Fatal(err)
	}
	if err := requests.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := observer.Flush(); err != nil {
		t.Fatal(err)
	}
	reads := 0
	return func() int {
		for {
			msg, err := requests.NextMsg(100 * time.Millisecond)
			if err != nil {
				return reads
			}
			// Reads, not the counts of a read's choice (one message).
			if body := string(msg.Data); strings.Contains(body, `"multi_last"`) && !strings.Contains(body, `"batch":1,`) {
				reads++
			}
		}
	}
}

// directGetRefusals subscribes a second client to every reply inbox; the
// function it returns reads what arrived and counts the "413 Too Many
// Results" answers among them.
func directGetRefusals(t *testing.T, s *server.Server) func() int {
	t.Helper()
	observer, _ := kvwatchtest.Connect(t, s)
	replies, err := observer.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := replies.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := observer.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() int {
		// Replies reach the observer as they reach the watcher, which has
		// read them all: a flush round trip passes any still in flight.
		if err := observer.Flush(); err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			msg, err := replies.NextMsg(0)
			if err != nil {
				return n
			}
			if msg.Header.Get("Status") == "413" {
				n++
			}
		}
	}
}
