package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// watcherPermissions are exactly the permissions a watcher of bucket
// network needs, as docs/operations.md lists them.
func watcherPermissions() *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"$JS.API.STREAM.INFO.KV_network",
			"$JS.API.DIRECT.GET.KV_network",
			"$JS.API.CONSUMER.CREATE.KV_network.>",
			"$JS.API.CONSUMER.MSG.NEXT.KV_network.>",
			"$JS.API.CONSUMER.DELETE.KV_network.>",
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
	}
}

// A watcher runs as a user with only the documented permissions, through
// the initial read, live changes and re-scoping; a user lacking them gets
// an error that says so.
func TestLeastPrivilege(t *testing.T) {
	without := watcherPermissions()
	without.Publish.Allow = without.Publish.Allow[:1] // stream info only
	s := kvwatchtest.ServerWith(t, &server.Options{Users: []*server.User{
		{Username: "admin", Password: "admin"},
		{Username: "watcher", Password: "watcher", Permissions: watcherPermissions()},
		{Username: "reader", Password: "reader", Permissions: without},
	}})
	_, admin := kvwatchtest.Connect(t, s, nats.UserInfo("admin", "admin"))
	kv := kvwatchtest.Bucket(t, admin, "network")
	put(t, kv, "vpc.a", vpcConfig{Name: "a"})
	put(t, kv, "vpc.b", vpcConfig{Name: "b"})
	put(t, kv, "vpc.b", vpcConfig{Name: "b2"}) // an interior delete: the direct-get path

	_, js := kvwatchtest.Connect(t, s, nats.UserInfo("watcher", "watcher"))
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r)
	waitSynced(t, w)
	put(t, kv, "vpc.a.route.r1", route{CIDR: "live"})
	r.waitFor(t, "a live event", func(ev []got, _ []error) bool { return hasKey(ev, "vpc.a.route.r1", kvwatch.OpPut) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.SetScopes(ctx, vpcs("a", "b")); err != nil {
		t.Fatalf("SetScopes as the watcher user: %v", err)
	}
	if _, errs := r.snapshot(); len(errs) > 0 {
		t.Fatalf("errors with the documented permissions: %v", errs)
	}
	w.Stop()
	if n := kvwatchtest.Consumers(t, admin, "network"); n != 0 {
		t.Errorf("the watcher user could not delete its consumer: %d left", n)
	}

	_, weak := kvwatchtest.Connect(t, s, nats.UserInfo("reader", "reader"))
	// The server drops a publish it does not permit and says so on the
	// side: the request times out (here after 200 ms), and the watcher
	// explains the timeout.
	w2, err := kvwatchimpl.Start(ctx, weak, &network, vpcs("a"), []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)},
		kvwatch.WithRequestTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	err = w2.WaitSynced(ctx)
	if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "docs/operations.md") || !strings.Contains(err.Error(), "DIRECT.GET") {
		t.Fatalf("WaitSynced without direct get rights = %v, want a permissions violation naming the subject and pointing at docs/operations.md", err)
	}
}

// A user allowed everything but pulling from its consumer: the pulls are
// refused (the server says so on the side, and the consumer seems to miss
// its heartbeats), and the watch ends with the permissions violation
// instead of recreating its consumer for ever.
func TestRefusedPullsEndTheWatch(t *testing.T) {
	noPull := watcherPermissions()
	noPull.Publish.Allow = slices.DeleteFunc(slices.Clone(noPull.Publish.Allow), func(s string) bool { return strings.Contains(s, "MSG.NEXT") })
	s := kvwatchtest.ServerWith(t, &server.Options{Users: []*server.User{
		{Username: "admin", Password: "admin"},
		{Username: "nopull", Password: "nopull", Permissions: noPull},
	}})
	_, admin := kvwatchtest.Connect(t, s, nats.UserInfo("admin", "admin"))
	kv := kvwatchtest.Bucket(t, admin, "network")
	put(t, kv, "vpc.a", vpcConfig{Name: "a"})
	_, js := kvwatchtest.Connect(t, s, nats.UserInfo("nopull", "nopull"))
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case <-w.Done():
	case <-time.After(15 * time.Second):
		t.Fatalf("the watch goes on without pulls (stats %+v)", w.Stats())
	}
	if err := w.Err(); !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), "MSG.NEXT") {
		t.Fatalf("Err = %v, want the permissions violation on MSG.NEXT", err)
	}
}

// On a stream without direct get, the seal of a catch-up reads the
// entries after the consumer's last one from the stream's message API
// ($JS.API.STREAM.MSG.GET, listed in docs/operations.md for that case only). A
// user without that permission still syncs after one request timeout,
// and the keys deleted while the watcher was away are reported gone; the
// watch goes on.
func TestRelistConfirmationWithoutPermission(t *testing.T) {
	s := kvwatchtest.ServerWith(t, &server.Options{Users: []*server.User{
		{Username: "admin", Password: "admin"},
		{Username: "watcher", Password: "watcher", Permissions: watcherPermissions()},
	}})
	_, admin := kvwatchtest.Connect(t, s, nats.UserInfo("admin", "admin"))
	kv := kvwatchtest.Bucket(t, admin, "network")
	for i := range 5 {
		put(t, kv, fmt.Sprintf("vpc.a.route.r%d", i), route{CIDR: "v1"})
	}
	cp := checkpointOf(t, admin, vpcs("a"))
	// Four keys removed without a trace (no delete marker): only a look
	// at the stream can tell they are gone.
	stream, err := admin.Stream(context.Background(), "KV_network")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := stream.Purge(context.Background(), jetstream.WithPurgeSubject(fmt.Sprintf("$KV.network.vpc.a.route.r%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	disableDirectGet(t, admin)

	_, js := kvwatchtest.Connect(t, s, nats.UserInfo("watcher", "watcher"))
	routes, events := routeOpLog()
	start := time.Now()
	// Scopes a and b: the checkpoint (a) does not cover them, so the
	// watcher re-lists.
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a", "b"), []kvwatchimpl.AnyBinding{routes, kvwatchimpl.Bind(&vpcKind, nil)},
		kvwatchimpl.Resume(cp), kvwatch.WithRequestTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitSynced(t, w)
	took := time.Since(start)
	if st := w.Stats(); st.Resume != "relist" || st.InitialState != "consumer" {
		t.Fatalf("Resume = %q, InitialState = %q; want relist by the consumer", st.Resume, st.InitialState)
	}
	got := events()
	for i := range 4 {
		if want := fmt.Sprintf("delete vpc.a.route.r%d unknown=true", i); !slices.Contains(got, want) {
			t.Errorf("missing %q in %v", want, got)
		}
	}
	// Four keys to confirm, one refused request of 300 ms: well under the
	// four a request each would take (tripled under the race detector).
	bound := 4 * 300 * time.Millisecond
	if raceDetector {
		bound *= 3
	}
	if took >= bound {
		t.Errorf("synced after %v: a timeout per key?", took)
	}
	// The refused request is not a reason to end the watch.
	put(t, kv, "vpc.a.route.after", route{CIDR: "live"})
	kvwatchtest.Eventually(t, 10*time.Second, "a live event after the refused seal", func() bool {
		return slices.Contains(events(), "put vpc.a.route.after unknown=false")
	})
	if err := w.Err(); err != nil {
		t.Errorf("the watch ended: %v", err)
	}
}
