package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// This file starts what the example runs on: one embedded nats-server, or
// with -edges the topology of a large fleet (docs/fleet.md): a hub
// holding the bucket, and edge servers, leaf nodes of the hub with
// JetStream domains of their own, each holding a mirror of the bucket
// that the nodes connected to it watch.

// hubDomain is the hub's JetStream domain, which edges' mirrors name.
const hubDomain = "hub"

// localInbox is the inbox prefix of watcher connections on an edge. Each
// edge's leaf remote denies it, and the hub isolates leaf node interest,
// so that the reply subscriptions of a fleet's nodes stay on their edges
// instead of being copied to the hub and every other edge.
const localInbox = "_LOCAL"

// topology is the servers the example started.
type topology struct {
	hub   *embedded
	edges []*embedded // edge i is in domain "edge<i+1>"
}

// startTopology starts the hub (a plain server when edges is 0) and the
// edges, and waits until every edge is linked to the hub.
func startTopology(edges int) (*topology, error) {
	hubOpts := &server.Options{}
	if edges > 0 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		hubOpts.JetStreamDomain = hubDomain
		hubOpts.LeafNode.Host = "127.0.0.1"
		hubOpts.LeafNode.Port = port
		hubOpts.LeafNode.IsolateLeafnodeInterest = true
	}
	hub, err := startServer(hubOpts)
	if err != nil {
		return nil, err
	}
	t := &topology{hub: hub}
	for i := range edges {
		opts := &server.Options{JetStreamDomain: fmt.Sprintf("edge%d", i+1)}
		opts.LeafNode.Remotes = []*server.RemoteLeafOpts{{
			URLs:        []*url.URL{{Scheme: "nats-leaf", Host: fmt.Sprintf("127.0.0.1:%d", hubOpts.LeafNode.Port)}},
			DenyImports: []string{localInbox + ".>"},
		}}
		e, err := startServer(opts)
		if err != nil {
			t.shutdown()
			return nil, err
		}
		t.edges = append(t.edges, e)
		if err := waitFor(10*time.Second, func() bool { return e.NumLeafNodes() > 0 }); err != nil {
			t.shutdown()
			return nil, fmt.Errorf("edge%d linking to the hub: %w", i+1, err)
		}
	}
	return t, nil
}

func (t *topology) shutdown() {
	for _, e := range t.edges {
		e.shutdown()
	}
	t.hub.shutdown()
}

// describe says what was started.
func (t *topology) describe() string {
	if len(t.edges) == 0 {
		return fmt.Sprintf("embedded nats-server (JetStream) at %s", t.hub.ClientURL())
	}
	var edges []string
	for i, e := range t.edges {
		edges = append(edges, fmt.Sprintf("edge%d at %s", i+1, e.ClientURL()))
	}
	return fmt.Sprintf("embedded hub (JetStream domain %s) at %s, and %d edges (leaf nodes with their own domains, each holding a mirror of the bucket): %s",
		hubDomain, t.hub.ClientURL(), len(t.edges), strings.Join(edges, ", "))
}

// createMirror creates the edge's mirror of the hub's bucket, named like
// it (a watcher on the edge then watches it as it would the bucket), and
// waits until it holds the bucket up to revision rev.
func createMirror(ctx context.Context, edge jetstream.JetStream, rev uint64) error {
	_, err := edge.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "network",
		Mirror: &jetstream.StreamSource{Name: "network", Domain: hubDomain}})
	if err != nil {
		return fmt.Errorf("mirror of network: %w", err)
	}
	return waitMirrored(ctx, edge, rev)
}

// waitMirrored waits until the edge's mirror holds revision rev.
func waitMirrored(ctx context.Context, edge jetstream.JetStream, rev uint64) error {
	for {
		s, err := edge.Stream(ctx, "KV_network")
		if err == nil && s.CachedInfo().State.LastSeq >= rev {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the mirror to hold revision %d: %w", rev, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// connect connects to url with a JetStream context.
func connect(url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// consumers returns the number of consumers on the server's KV_network:
// the bucket on the hub, the mirror on an edge.
func consumers(ctx context.Context, js jetstream.JetStream) (int, error) {
	s, err := js.Stream(ctx, "KV_network")
	if err != nil {
		return 0, err
	}
	return s.CachedInfo().State.Consumers, nil
}

// embedded is a nats-server run for the example, in this process.
type embedded struct {
	*server.Server
	stop func()
}

// startServer starts a JetStream server with opts on a random loopback
// port with a temporary store (kvwatchtest.StartServer).
func startServer(opts *server.Options) (*embedded, error) {
	s, stop, err := kvwatchtest.StartServer(opts)
	if err != nil {
		return nil, err
	}
	return &embedded{Server: s, stop: stop}, nil
}

// shutdown stops the server and removes its store.
func (e *embedded) shutdown() { e.stop() }

// freePort returns a local TCP port free at the time of the call (the
// server does not report the leaf node port it picked for -1).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitFor polls cond until it holds, or fails after timeout.
func waitFor(timeout time.Duration, cond func() bool) error {
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", timeout)
		}
	}
	return nil
}
