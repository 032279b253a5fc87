package kvwatchimpl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// noJetStreamText is what every first request to a server without
// JetStream says.
const noJetStreamText = "JetStream not enabled on the server (or not for this account)"

// serverWithoutJetStream starts a nats-server with JetStream off and
// returns a JetStream context connected to it. (kvwatchtest always
// enables JetStream.)
func serverWithoutJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, JetStream: false})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server without JetStream not ready within 10s")
	}
	_, js := connectURLs(t, s.ClientURL())
	return js
}

// checkNoJetStream fails the test unless err says that JetStream is not
// enabled and keeps both the cause and jetstream's sentinel reachable.
func checkNoJetStream(t *testing.T, what string, err error) {
	t.Helper()
	t.Logf("%s: %v", what, err)
	switch {
	case err == nil:
		t.Errorf("%s: no error", what)
	case !strings.Contains(err.Error(), noJetStreamText):
		t.Errorf("%s: %v\nwant it to say %q", what, err, noJetStreamText)
	case !errors.Is(err, nats.ErrNoResponders):
		t.Errorf("%s: %v does not match nats.ErrNoResponders", what, err)
	case !errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		t.Errorf("%s: %v does not match jetstream.ErrJetStreamNotEnabled", what, err)
	}
}

// A watcher, a bucket handle and a read without a consumer, started on a
// server without JetStream, say so instead of nats' "no responders".
func TestNoJetStream(t *testing.T) {
	js := serverWithoutJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{})
	if err == nil {
		w.Stop()
	}
	checkNoJetStream(t, "WatchNetwork", err)
	if err != nil && !strings.Contains(err.Error(), "bucket network") {
		t.Errorf("WatchNetwork: %v does not name the bucket", err)
	}

	_, err = fleetkv.OpenNetworkBucket(ctx, js)
	checkNoJetStream(t, "OpenNetworkBucket", err)

	// List, Keys and History read through js; kv only names the bucket.
	kv := kvwatchtest.Bucket(t, kvwatchtest.JetStream(t), "network")
	_, _, err = kvwatchimpl.Keys(ctx, js, kv, &network, &routeKind, vpcs("a"))
	checkNoJetStream(t, "Keys", err)
}

// A server with JetStream, for an account without it, says so itself
// (10039): that error is kept as the server gives it.
func TestNoJetStreamForAccount(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "server.conf")
	if err := os.WriteFile(conf, []byte(`
accounts: {
  JS: { jetstream: enabled, users: [{user: js, password: js}] }
  PLAIN: { users: [{user: plain, password: plain}] }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	s := kvwatchtest.ServerWith(t, opts)
	_, withJS := kvwatchtest.Connect(t, s, nats.UserInfo("js", "js"))
	kv := kvwatchtest.Bucket(t, withJS, "network")
	_, js := kvwatchtest.Connect(t, s, nats.UserInfo("plain", "plain"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || !strings.Contains(err.Error(), "JetStream not enabled for account") {
			t.Errorf("%s: %v, want jetstream.ErrJetStreamNotEnabledForAccount", what, err)
		}
	}
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{})
	if err == nil {
		w.Stop()
	}
	check("WatchNetwork", err)
	_, err = fleetkv.OpenNetworkBucket(ctx, js)
	check("OpenNetworkBucket", err)
	_, _, err = kvwatchimpl.Keys(ctx, js, kv, &network, &routeKind, vpcs("a"))
	check("Keys", err)
}

// Through a JetStream domain that nothing serves, the message says that
// too.
func TestNoJetStreamInDomain(t *testing.T) {
	s := kvwatchtest.Server(t)
	nc, _ := kvwatchtest.Connect(t, s)
	js, err := jetstream.NewWithDomain(nc, "nowhere")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = fleetkv.OpenNetworkBucket(ctx, js)
	checkNoJetStream(t, "OpenNetworkBucket", err)
	if err != nil && !strings.Contains(err.Error(), `JetStream domain "nowhere" not reachable`) {
		t.Errorf("OpenNetworkBucket: %v does not name the domain", err)
	}
}
