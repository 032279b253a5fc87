package fleetkv_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// allowBatches makes bucket network's stream take atomic batches.
func allowBatches(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, "KV_network")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowAtomicPublish = true
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// A committed batch is stored whole, and a watcher's caches take it at
// once: when the handler of its first write runs, the cache holds all of
// its writes (applied one by one, it would hold the first only). A batch
// whose committing write is outside the watcher's scopes still arrives.
func TestBatchIsAppliedAtOnce(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := fleetkv.CreateOrUpdateNetworkBucket(ctx, js) // the schema allows atomic batches
	if err != nil {
		t.Fatal(err)
	}
	old := fleetkv.RouteKey{VPC: "a", RouteID: "old"}
	if _, err := b.PutRoute(ctx, old, fleetkv.Route{CIDR: "old"}); err != nil {
		t.Fatal(err)
	}

	type seen struct {
		ev                  fleetkv.RouteEvent
		r2Cached, oldCached bool
	}
	events := make(chan seen, 10)
	var watcher atomic.Pointer[fleetkv.NetworkWatcher] // set before the batch is sent
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{
		OnRoute: func(ev fleetkv.RouteEvent) {
			if ev.Initial {
				return
			}
			cache := watcher.Load().RouteCache()
			_, r2 := cache.Get(fleetkv.RouteKey{VPC: "a", RouteID: "r2"})
			_, o := cache.Get(old)
			events <- seen{ev, r2, o}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	watcher.Store(w)
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}

	rev, err := b.Batch().
		PutRoute(fleetkv.RouteKey{VPC: "a", RouteID: "r1"}, fleetkv.Route{CIDR: "10.0.1.0/24"}).
		PutRoute(fleetkv.RouteKey{VPC: "a", RouteID: "r2"}, fleetkv.Route{CIDR: "10.0.2.0/24"}).
		DeleteRoute(old).
		PutVPCConfig(fleetkv.VPCConfigKey{VPC: "b"}, fleetkv.VPCConfig{Name: "out of scope, and last"}).
		Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first := <-events
	if first.ev.Key.RouteID != "r1" || !first.r2Cached || first.oldCached {
		t.Errorf("handler of the batch's first write: r2 cached %v, old cached %v; want the whole batch applied", first.r2Cached, first.oldCached)
	}
	for _, want := range []string{"r2", "old"} {
		if ev := (<-events).ev; ev.Key.RouteID != want {
			t.Errorf("event of %s, want %s", ev.Key.RouteID, want)
		}
	}
	if err := w.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.GetVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: "b"}); got.Revision != rev {
		t.Errorf("the batch's last write is at %d, Commit returned %d", got.Revision, rev)
	}
}

// A batch is all or nothing: an update at a stale revision stores none of
// it. A stream that does not allow batches, a bad key and a bucket handle
// without the JetStream context are clear errors.
func TestBatchAllOrNothing(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kv := kvwatchtest.Bucket(t, js, "network")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := fleetkv.OpenNetworkBucket(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	key := fleetkv.RouteKey{VPC: "a", RouteID: "r1"}
	if _, err := b.Batch().PutRoute(key, fleetkv.Route{}).Commit(ctx); !errors.Is(err, kvclient.ErrBatchDisabled) {
		t.Errorf("Commit on a stream without batches = %v, want ErrBatchDisabled", err)
	}
	allowBatches(t, js)
	rev, err := b.PutRoute(ctx, key, fleetkv.Route{CIDR: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	b.PutRoute(ctx, key, fleetkv.Route{CIDR: "v2"})
	other := fleetkv.RouteKey{VPC: "a", RouteID: "r2"}
	_, err = b.Batch().PutRoute(other, fleetkv.Route{CIDR: "new"}).UpdateRoute(key, fleetkv.Route{CIDR: "v3"}, rev).Commit(ctx)
	if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		t.Errorf("Commit with a stale update = %v, want ErrKeyRevisionMismatch", err)
	}
	if _, err := b.GetRoute(ctx, other); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("a write of the failed batch was stored: %v", err)
	}
	cur, _ := b.GetRoute(ctx, key)
	if _, err := b.Batch().UpdateRoute(key, fleetkv.Route{CIDR: "v3"}, cur.Revision).PurgeRoute(other).Commit(ctx); err != nil {
		t.Errorf("Commit with a current update: %v", err)
	}
	if _, err := b.Batch().PutRoute(fleetkv.RouteKey{VPC: "a.b", RouteID: "x"}, fleetkv.Route{}).Commit(ctx); err == nil {
		t.Error("Commit of a batch with a bad key succeeded")
	}
	if _, err := fleetkv.NewNetworkBucket(kv).Batch().PutRoute(key, fleetkv.Route{}).Commit(ctx); !errors.Is(err, kvclient.ErrNoJetStream) {
		t.Errorf("Commit without js = %v, want ErrNoJetStream", err)
	}
}
