// Package kvwatchtest starts embedded nats-servers with JetStream: for
// tests, in one line, cleaned up through t.Cleanup, and for a program's
// main while you develop (StartServer, below):
//
//	js := kvwatchtest.JetStream(t)                 // server + client
//	kv := kvwatchtest.Bucket(t, js, "network")     // a fresh KV bucket
//
//	node := kvwatchtest.StartNode(t, &server.Options{})   // a server to restart
//	node.Restart(t)                                       // same port, same store
//
//	c := kvwatchtest.StartCluster(t, 3)            // a 3-node JetStream cluster
//	nc, js := c.Connect(t)                         // fails over between nodes
//	c.Nodes[1].Stop()                              // lose a node
//	for _, p := range c.Routes("n1") { p.Blackhole() }  // cut a running node off (netfault)
//
//	f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"},
//		kvwatchtest.FleetOptions{Edges: 2})        // a hub, 2 edges with mirrors, as recommended
//	_, js := f.Edges[0].Connect(t)                 // a node's watcher connection
//
// Every server listens on random loopback ports and stores its data in
// t.TempDir(); nothing needs to be installed.
//
// The package is not only for tests: StartServer starts one without a
// testing.TB, for a program's main (a server to develop against, nothing
// to install), and is how every helper here starts its servers:
//
//	s, stop, err := kvwatchtest.StartServer(nil)   // s.ClientURL(); stop removes the store
package kvwatchtest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server starts a JetStream-enabled nats-server on a random port with its
// store in a temporary folder, and shuts it down when the test ends.
func Server(t testing.TB) *server.Server {
	t.Helper()
	return ServerWith(t, &server.Options{})
}

// ServerWith starts a server with opts as StartServer does (JetStream,
// loopback, a random port when Port is 0), with its store in t.TempDir()
// when opts.StoreDir is empty, and shuts it down when the test ends. It
// fails the test if the server does not start within 20s. Use StartNode
// for a server the test restarts.
func ServerWith(t testing.TB, opts *server.Options) *server.Server {
	t.Helper()
	return StartNode(t, opts).Server
}

// Connect connects to s and returns the connection and a JetStream
// context; the connection is closed when the test ends.
func Connect(t testing.TB, s *server.Server, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return connect(t, s.ClientURL(), opts...)
}

// connect connects to url and returns the connection, closed when the
// test ends, and a JetStream context.
func connect(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("kvwatchtest: connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("kvwatchtest: jetstream: %v", err)
	}
	return nc, js
}

// JetStream starts a server and returns a JetStream context connected to
// it.
func JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	_, js := Connect(t, Server(t))
	return js
}

// Bucket creates a KV bucket with default settings (history 1, file
// storage) and fails the test on error.
func Bucket(t testing.TB, js jetstream.JetStream, name string) jetstream.KeyValue {
	t.Helper()
	return BucketWith(t, js, jetstream.KeyValueConfig{Bucket: name})
}

// BucketWith creates a KV bucket with cfg and fails the test on error.
func BucketWith(t testing.TB, js jetstream.JetStream, cfg jetstream.KeyValueConfig) jetstream.KeyValue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, cfg)
	if err != nil {
		t.Fatalf("kvwatchtest: create bucket %s: %v", cfg.Bucket, err)
	}
	return kv
}

// Consumers returns the number of consumers on the bucket's stream, as the
// server reports it.
func Consumers(t testing.TB, js jetstream.JetStream, bucket string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		t.Fatalf("kvwatchtest: stream KV_%s: %v", bucket, err)
	}
	return s.CachedInfo().State.Consumers
}

// Eventually polls cond every 10ms until it holds or timeout passes, and
// fails the test with msg in the latter case.
func Eventually(t testing.TB, timeout time.Duration, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("kvwatchtest: not within %v: %s", timeout, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
