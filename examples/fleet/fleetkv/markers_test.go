package fleetkv_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// On a bucket with a limit marker TTL, an entry whose own TTL or the
// bucket's max age expires reaches watchers as a purge with its reason and
// its last value, and leaves the cache.
func TestWatcherSeesExpiredEntries(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", TTL: 3 * time.Second, LimitMarkerTTL: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := fleetkv.OpenNetworkBucket(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan fleetkv.RouteEvent, 10)
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{
		OnRoute: func(ev fleetkv.RouteEvent) { events <- ev },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}

	short := fleetkv.RouteKey{VPC: "a", RouteID: "short"}
	long := fleetkv.RouteKey{VPC: "a", RouteID: "long"}
	if _, err := b.CreateRoute(ctx, short, fleetkv.Route{CIDR: "10.0.0.0/8"}, jetstream.KeyTTL(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutRoute(ctx, long, fleetkv.Route{CIDR: "10.1.0.0/16"}); err != nil {
		t.Fatal(err)
	}
	// The key's own TTL first, then the bucket's.
	for _, want := range []struct {
		key  fleetkv.RouteKey
		cidr string
	}{{short, ""}, {long, ""}, {short, "10.0.0.0/8"}, {long, "10.1.0.0/16"}} {
		var ev fleetkv.RouteEvent
		select {
		case ev = <-events:
		case <-ctx.Done():
			t.Fatalf("waiting for %v (%s): %v", want.key, want.cidr, ctx.Err())
		}
		if want.cidr == "" {
			if ev.Op != kvwatch.OpPut || ev.Key != want.key {
				t.Fatalf("event %v %v, want the put of %v", ev.Op, ev.Key, want.key)
			}
			continue
		}
		if ev.Op != kvwatch.OpPurge || ev.Key != want.key || ev.Marker != kvwatch.MarkerMaxAge || !ev.HasPrev || ev.Prev.CIDR != want.cidr {
			t.Fatalf("event %v %v marker %q prev %+v (%v), want a MaxAge purge of %v with its last value", ev.Op, ev.Key, ev.Marker, ev.Prev, ev.HasPrev, want.key)
		}
		if _, ok := w.RouteCache().Get(want.key); ok {
			t.Errorf("%v is still cached after it expired", want.key)
		}
	}
}

// A purge with a TTL (jetstream.PurgeTTL) leaves a marker that itself
// expires: afterwards the key has no history left at all.
func TestPurgeMarkerExpires(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", History: 5, LimitMarkerTTL: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := fleetkv.OpenNetworkBucket(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	key := fleetkv.VPCConfigKey{VPC: "a"}
	if _, err := b.PutVPCConfig(ctx, key, fleetkv.VPCConfig{Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := b.PurgeVPCConfig(ctx, key, jetstream.PurgeTTL(time.Second)); err != nil {
		t.Fatal(err)
	}
	if h, err := b.VPCConfigHistory(ctx, key); err != nil || len(h) != 1 || h[0].Op != kvwatch.OpPurge {
		t.Fatalf("history right after the purge = %+v, %v; want the purge marker", h, err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the purge marker expired", func() bool {
		_, err := b.VPCConfigHistory(ctx, key)
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})
}
