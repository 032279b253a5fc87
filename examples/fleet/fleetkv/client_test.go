package fleetkv_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// openNetwork makes bucket network (history 10) and opens it typed.
func openNetwork(t *testing.T) (context.Context, jetstream.JetStream, *fleetkv.NetworkBucket) {
	t.Helper()
	js := kvwatchtest.JetStream(t)
	kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", History: 10})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	b, err := fleetkv.OpenNetworkBucket(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, js, b
}

// Create, Update and Delete with an expected revision are
// compare-and-set, and their conflicts keep nats.go's sentinels.
func TestClientCompareAndSet(t *testing.T) {
	ctx, _, b := openNetwork(t)
	key := fleetkv.RouteKey{VPC: "a", RouteID: "r1"}
	rev1, err := b.CreateRoute(ctx, key, fleetkv.Route{CIDR: "10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateRoute(ctx, key, fleetkv.Route{CIDR: "other"}); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Errorf("CreateRoute of an existing key = %v, want ErrKeyExists", err)
	}
	rev2, err := b.UpdateRoute(ctx, key, fleetkv.Route{CIDR: "10.1.0.0/16"}, rev1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.UpdateRoute(ctx, key, fleetkv.Route{CIDR: "stale"}, rev1); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		t.Errorf("UpdateRoute at an old revision = %v, want ErrKeyRevisionMismatch", err)
	}
	if err := b.DeleteRoute(ctx, key, jetstream.LastRevision(rev1)); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		t.Errorf("DeleteRoute at an old revision = %v, want ErrKeyRevisionMismatch", err)
	}
	if err := b.DeleteRoute(ctx, key, jetstream.LastRevision(rev2)); err != nil {
		t.Fatalf("DeleteRoute at the current revision: %v", err)
	}
	if _, err := b.GetRoute(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("GetRoute after delete = %v, want ErrKeyNotFound", err)
	}
	// Created again after a delete.
	if _, err := b.CreateRoute(ctx, key, fleetkv.Route{CIDR: "again"}); err != nil {
		t.Errorf("CreateRoute after a delete: %v", err)
	}
	old, err := b.GetRouteRevision(ctx, key, rev1)
	if err != nil || old.Value.CIDR != "10.0.0.0/8" || old.Revision != rev1 {
		t.Errorf("GetRouteRevision(%d) = %+v, %v", rev1, old, err)
	}
	// A key that would address another is refused before anything is sent,
	// naming the parameter at fault (as a scope error does), not the shape
	// of the key it would make.
	for _, c := range []struct {
		key   fleetkv.RouteKey
		param string
	}{
		{fleetkv.RouteKey{VPC: "a.b", RouteID: "r"}, "vpc"},
		{fleetkv.RouteKey{VPC: "a", RouteID: "*"}, "route_id"},
		{fleetkv.RouteKey{VPC: "a", RouteID: ""}, "route_id"},
	} {
		_, err := b.CreateRoute(ctx, c.key, fleetkv.Route{})
		var pe *kvwatch.ParamError
		if !errors.As(err, &pe) || pe.Param != c.param || !strings.Contains(err.Error(), "parameter "+c.param) {
			t.Errorf("CreateRoute(%+v) = %v; want a *kvwatch.ParamError naming parameter %s", c.key, err, c.param)
		}
	}
}

// History lists every kept revision, deletes and purges included; Purge
// drops what came before.
func TestClientHistoryAndPurge(t *testing.T) {
	ctx, _, b := openNetwork(t)
	key := fleetkv.VPCConfigKey{VPC: "a"}
	var revs []uint64
	for _, name := range []string{"one", "two"} {
		rev, err := b.PutVPCConfig(ctx, key, fleetkv.VPCConfig{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	if err := b.DeleteVPCConfig(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutVPCConfig(ctx, key, fleetkv.VPCConfig{Name: "three"}); err != nil {
		t.Fatal(err)
	}
	h, err := b.VPCConfigHistory(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(h); !slices.Equal(got, []string{"put one", "put two", "delete ", "put three"}) {
		t.Errorf("history = %q", got)
	}
	if h[0].Revision != revs[0] || h[0].Created.IsZero() {
		t.Errorf("first revision = %d at %v, want %d with a time", h[0].Revision, h[0].Created, revs[0])
	}
	if err := b.PurgeVPCConfig(ctx, key); err != nil {
		t.Fatal(err)
	}
	h, err = b.VPCConfigHistory(ctx, key)
	if err != nil || !slices.Equal(describe(h), []string{"purge "}) {
		t.Errorf("history after purge = %q, %v; want only the purge", describe(h), err)
	}
	if _, err := b.VPCConfigHistory(ctx, fleetkv.VPCConfigKey{VPC: "never"}); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("history of a key never written = %v, want ErrKeyNotFound", err)
	}
}

func describe(h []kvclient.HistoryEntry[fleetkv.VPCConfig]) []string {
	var out []string
	for _, e := range h {
		out = append(out, e.Op.String()+" "+e.Value.Name)
	}
	return out
}

// List and Keys read one kind within scopes, exact as of the revision they
// return, without a consumer: also past the 1,024 keys one direct get
// answers, and skipping what does not decode (reported) and deleted keys.
func TestClientListAndKeys(t *testing.T) {
	ctx, js, b := openNetwork(t)
	const routes = 1500
	for i := range routes {
		if _, err := b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: fmt.Sprintf("r%04d", i)}, fleetkv.Route{Metric: i}); err != nil {
			t.Fatal(err)
		}
	}
	b.PutRoute(ctx, fleetkv.RouteKey{VPC: "b", RouteID: "elsewhere"}, fleetkv.Route{})
	b.PutVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: "a"}, fleetkv.VPCConfig{Name: "alpha"})
	b.PutFirewallRule(ctx, fleetkv.FirewallRuleKey{VPC: "a", Priority: 1}, fleetkv.FirewallRule{})
	if err := b.DeleteRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r0000"}); err != nil {
		t.Fatal(err)
	}
	last, err := b.KeyValue().Put(ctx, "vpc.a.route.bad", []byte("{not json"))
	if err != nil {
		t.Fatal(err)
	}

	list, rev, err := b.ListRoute(ctx, fleetkv.NetworkScopes{VPC: []string{"a"}})
	var de *kvwatch.DataError
	if !errors.As(err, &de) || de.Key != "vpc.a.route.bad" {
		t.Errorf("ListRoute error = %v, want a DataError for vpc.a.route.bad", err)
	}
	if rev != last {
		t.Errorf("ListRoute revision = %d, want %d", rev, last)
	}
	if len(list) != routes-1 || list[0].Key.RouteID != "r0001" || list[len(list)-1].Value.Metric != routes-1 {
		t.Fatalf("ListRoute: %d entries, first %+v; want %d from r0001", len(list), list[0], routes-1)
	}
	if !slices.IsSortedFunc(list, func(x, y kvwatch.Entry[fleetkv.RouteKey, fleetkv.Route]) int {
		return strings.Compare(x.Key.String(), y.Key.String())
	}) {
		t.Error("ListRoute is not sorted by key")
	}
	keys, _, err := b.RouteKeys(ctx, fleetkv.NetworkScopes{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != routes+1 || !slices.Contains(keys, fleetkv.RouteKey{VPC: "b", RouteID: "elsewhere"}) {
		t.Errorf("RouteKeys(All): %d keys, want %d (the bad value's key included, vpc b included)", len(keys), routes+1)
	}
	configs, _, err := b.ListVPCConfig(ctx, fleetkv.NetworkScopes{VPC: []string{"a", "c"}})
	if err != nil || len(configs) != 1 || configs[0].Value.Name != "alpha" {
		t.Errorf("ListVPCConfig = %+v, %v", configs, err)
	}
	none, _, err := b.ListRoute(ctx, fleetkv.NetworkScopes{})
	if err != nil || len(none) != 0 {
		t.Errorf("ListRoute of no scopes = %d entries, %v", len(none), err)
	}
	if _, _, err := b.ListRoute(ctx, fleetkv.NetworkScopes{VPC: []string{"*"}}); !errors.Is(err, kvwatch.ErrInvalidScope) {
		t.Errorf("ListRoute with a wildcard scope = %v, want ErrInvalidScope", err)
	}
	if n := consumers(t, js); n != 0 {
		t.Errorf("the reads left %d consumers", n)
	}
	if _, _, err := fleetkv.NewNetworkBucket(b.KeyValue()).ListRoute(ctx, fleetkv.NetworkScopes{All: true}); !errors.Is(err, kvclient.ErrNoJetStream) {
		t.Errorf("ListRoute on a bucket without js = %v, want ErrNoJetStream", err)
	}
}

// consumers counts the consumers of the network bucket's stream.
func consumers(t *testing.T, js jetstream.JetStream) int {
	t.Helper()
	s, err := js.Stream(context.Background(), "KV_network")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// Concurrent modifiers of one key each apply their change exactly once:
// no update is lost, however often their writes conflict.
func TestClientModifyLosesNoUpdate(t *testing.T) {
	ctx, _, b := openNetwork(t)
	key := fleetkv.RouteKey{VPC: "a", RouteID: "counter"}
	const modifiers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, modifiers*each)
	for range modifiers {
		wg.Go(func() {
			for range each {
				_, err := b.ModifyRoute(ctx, key, func(r *fleetkv.Route) error {
					r.Metric++
					r.Tags = append(r.Tags, "x")
					return nil
				}, kvclient.CreateIfAbsent(), kvclient.MaxAttempts(1000))
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got, err := b.GetRoute(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Value.Metric != modifiers*each || len(got.Value.Tags) != modifiers*each {
		t.Errorf("after %d modifications: metric %d, %d tags", modifiers*each, got.Value.Metric, len(got.Value.Tags))
	}

	// Without CreateIfAbsent a missing key is not created; ErrUnchanged
	// writes nothing; an error from fn is returned as it is.
	missing := fleetkv.RouteKey{VPC: "a", RouteID: "missing"}
	if _, err := b.ModifyRoute(ctx, missing, func(*fleetkv.Route) error { return nil }); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("ModifyRoute of a missing key = %v, want ErrKeyNotFound", err)
	}
	rev, err := b.ModifyRoute(ctx, key, func(*fleetkv.Route) error { return kvclient.ErrUnchanged })
	if err != nil || rev != got.Revision {
		t.Errorf("ModifyRoute returning ErrUnchanged = %d, %v; want %d, nil", rev, err, got.Revision)
	}
	boom := errors.New("boom")
	if _, err := b.ModifyRoute(ctx, key, func(*fleetkv.Route) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("ModifyRoute with a failing fn = %v", err)
	}
	// One attempt against a writer that always wins gives up with
	// ErrConflicts.
	_, err = b.ModifyRoute(ctx, key, func(r *fleetkv.Route) error {
		b.PutRoute(ctx, key, fleetkv.Route{Metric: -1}) // another writer, between read and write
		return nil
	}, kvclient.MaxAttempts(2))
	if !errors.Is(err, kvclient.ErrConflicts) || !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		t.Errorf("ModifyRoute always conflicting = %v, want ErrConflicts and ErrKeyRevisionMismatch", err)
	}
}

// A lost compare-and-set is error 10071 or 10164 (JSStreamWrongLastSequence
// and its Constant variant, which nats.go v1.55.0 says replicated streams
// give): on a replicated bucket too, the typed client's conflicts match the
// sentinels, for single writes and for batches. The codes the server gave
// are logged.
func TestClientConflictsOnAReplicatedBucket(t *testing.T) {
	c := kvwatchtest.StartCluster(t, 3)
	_, js := c.Connect(t)
	kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", Replicas: 3})
	allowBatches(t, js)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := fleetkv.OpenNetworkBucket(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	key := fleetkv.RouteKey{VPC: "a", RouteID: "r1"}
	rev, err := b.CreateRoute(ctx, key, fleetkv.Route{CIDR: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutRoute(ctx, key, fleetkv.Route{CIDR: "v2"}); err != nil {
		t.Fatal(err)
	}
	var apiErr *jetstream.APIError
	_, err = b.UpdateRoute(ctx, key, fleetkv.Route{CIDR: "stale"}, rev)
	if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || !errors.As(err, &apiErr) {
		t.Fatalf("UpdateRoute at a stale revision on R3 = %v, want ErrKeyRevisionMismatch", err)
	}
	t.Logf("the server answered error %d", apiErr.ErrorCode)
	if _, err := b.CreateRoute(ctx, key, fleetkv.Route{}); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Errorf("CreateRoute of an existing key on R3 = %v, want ErrKeyExists", err)
	}
	if err := b.DeleteRoute(ctx, key, jetstream.LastRevision(rev)); !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		t.Errorf("DeleteRoute at a stale revision on R3 = %v, want ErrKeyRevisionMismatch", err)
	}
	_, err = b.Batch().UpdateRoute(key, fleetkv.Route{CIDR: "stale"}, rev).Commit(ctx)
	if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || !errors.As(err, &apiErr) {
		t.Errorf("a batch with a stale update on R3 = %v, want ErrKeyRevisionMismatch", err)
	} else {
		t.Logf("for the batch, error %d", apiErr.ErrorCode)
	}
	var n int64
	if _, err := b.ModifyRoute(ctx, key, func(r *fleetkv.Route) error { n++; r.Metric++; return nil }); err != nil || n != 1 {
		t.Errorf("ModifyRoute on R3: %v after %d calls", err, n)
	}
}

// OpenNetworkBucket opens the bucket WithBucketName names, and a missing
// bucket matches nats.go's own sentinel.
func TestOpenBucketByNameAndMissing(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := fleetkv.OpenNetworkBucket(ctx, js); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("OpenNetworkBucket of a missing bucket = %v, want jetstream.ErrBucketNotFound", err)
	}
	if _, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{All: true}, fleetkv.NetworkHandlers{}); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("WatchNetwork of a missing bucket = %v, want jetstream.ErrBucketNotFound", err)
	}
	kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network-staging"})
	b, err := fleetkv.OpenNetworkBucket(ctx, js, kvclient.WithBucketName("network-staging"))
	if err != nil {
		t.Fatal(err)
	}
	if b.KeyValue().Bucket() != "network-staging" {
		t.Errorf("opened %s, want network-staging", b.KeyValue().Bucket())
	}
	if _, err := fleetkv.OpenNetworkBucket(ctx, js, kvclient.WithBucketName("a.b")); err == nil || !strings.Contains(err.Error(), "a.b") {
		t.Errorf("OpenNetworkBucket of an invalid name = %v, want an error naming it", err)
	}
}
