package kvwatchimpl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// Keys and List over many scopes, fewer than 1,024 keys each but more in
// all, read every key exact as of the revision they return: every request
// is pinned at it. The scopes are read in requests sized by the plan, not
// listed one by one (a stream info request each).
func TestListManyScopesPastTheCap(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Storage: jetstream.MemoryStorage})
	const scopes, perScope = 40, 60
	names := make([]string, scopes)
	for i := range names {
		names[i] = fmt.Sprintf("v%02d", i)
		for j := range perScope {
			if _, err := js.PublishAsync(fmt.Sprintf("$KV.network.vpc.%s.route.r%02d", names[i], j), []byte(`{"cidr":"x"}`)); err != nil {
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
	observer, _ := kvwatchtest.Connect(t, s)
	requests, err := observer.SubscribeSync("$JS.API.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := requests.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	if err := observer.Flush(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys, rev, err := kvwatchimpl.Keys(ctx, js, kv, &network, &routeKind, vpcs(names...))
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != scopes*perScope || rev != scopes*perScope {
		t.Errorf("Keys: %d keys as of %d, want %d as of %d", len(keys), rev, scopes*perScope, scopes*perScope)
	}
	list, _, err := kvwatchimpl.List(ctx, js, kv, &network, &routeKind, vpcs(names...))
	if err != nil || len(list) != scopes*perScope {
		t.Errorf("List: %d entries, %v; want %d", len(list), err, scopes*perScope)
	}

	reads, listings := 0, 0
	for {
		msg, err := requests.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		switch {
		case strings.HasPrefix(msg.Subject, "$JS.API.DIRECT.GET."):
			var req directget.Request
			if err := json.Unmarshal(msg.Data, &req); err != nil {
				t.Fatal(err)
			}
			reads++
			if req.UpToSeq != rev {
				t.Errorf("a read request pinned at %d, want every one at %d", req.UpToSeq, rev)
			}
		case strings.Contains(string(msg.Data), "subjects_filter"):
			listings++
		}
	}
	if reads < 4 || listings != 0 {
		t.Errorf("%d read requests and %d listings, want a few read requests (the first refused) and no listing", reads, listings)
	}
}
