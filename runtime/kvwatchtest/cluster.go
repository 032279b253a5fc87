package kvwatchtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// Node is an embedded server that can be stopped and started again with
// the same store and ports, as a restart or the loss of a machine is.
// Server is the running server; after Stop, the stopped one until the
// next start.
type Node struct {
	*server.Server
	opts server.Options // as given, with the store folder and the port it got
	stop func()
}

// StartNode starts a server with opts through StartServer, with its store
// in a folder of the test's (t.TempDir()) when opts.StoreDir is empty, and
// keeps what it needs to restart it: the options, the store and the
// client port it got. It fails the test if the server does not start. The
// server is shut down when the test ends.
func StartNode(t testing.TB, opts *server.Options) *Node {
	t.Helper()
	n := &Node{opts: nodeOptions(t, opts)}
	n.start(t)
	t.Cleanup(n.Stop)
	return n
}

// nodeOptions copies opts, giving the server a store folder of the test's
// when it names none: it outlives a Stop, for the next start.
func nodeOptions(t testing.TB, opts *server.Options) server.Options {
	o := *opts
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	return o
}

func (n *Node) start(t testing.TB) {
	t.Helper()
	if err := n.tryStart(); err != nil {
		t.Fatal(err)
	}
}

// tryStart starts the server and keeps the port it got, so that a restart
// comes back on it.
func (n *Node) tryStart() error {
	s, stop, err := StartServer(&n.opts)
	if err != nil {
		return err
	}
	n.Server, n.stop = s, stop
	n.opts.Port = s.Addr().(*net.TCPAddr).Port
	return nil
}

// freePort returns a loopback TCP port nothing listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("kvwatchtest: free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Stop shuts the server down and waits until it is down. It is
// idempotent.
func (n *Node) Stop() {
	if n.stop != nil {
		n.stop()
	}
}

// Restart stops the server and starts it again on the same ports with the
// same store, as after a crash or an upgrade.
func (n *Node) Restart(t testing.TB) {
	t.Helper()
	n.Stop()
	n.start(t)
}

// Backup stops the server, copies its store and starts it again. The
// function it returns puts that copy back, as a restore from a backup, or
// a crash that lost writes the server had acknowledged (nats-server syncs
// its files every two minutes by default), does: it stops the server,
// replaces the store with the copy and starts it again on the same ports.
// The streams then come back with their creation times unchanged and the
// writes made since the backup gone; their next writes reuse those
// sequences.
func (n *Node) Backup(t testing.TB) (restore func()) {
	t.Helper()
	store := n.opts.StoreDir
	backup := filepath.Join(t.TempDir(), "store")
	n.Stop()
	if err := os.CopyFS(backup, os.DirFS(store)); err != nil {
		t.Fatalf("kvwatchtest: backing up %s: %v", store, err)
	}
	n.start(t)
	return func() {
		t.Helper()
		n.Stop()
		if err := os.RemoveAll(store); err != nil {
			t.Fatalf("kvwatchtest: restoring %s: %v", store, err)
		}
		if err := os.CopyFS(store, os.DirFS(backup)); err != nil {
			t.Fatalf("kvwatchtest: restoring %s: %v", store, err)
		}
		n.start(t)
	}
}

// Cluster is a JetStream cluster of embedded servers in one process.
// Each route between two nodes goes through a netfault proxy, so that a
// test can cut or slow a node's routes while every process stays alive
// (Routes).
type Cluster struct {
	Nodes  []*Node
	routes []route
}

// route is the proxy a node dials another node's cluster port through.
type route struct {
	from, to string // the nodes' names
	proxy    *netfault.Proxy
}

// StartCluster starts a JetStream cluster of n servers (3 makes R3 streams
// possible) on random loopback ports, each with its own store, and waits
// until JetStream is usable. The servers are shut down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{}
	for attempt := 1; ; attempt++ {
		nodes, routes, err := startNodes(t, n)
		if err == nil {
			c.Nodes, c.routes = nodes, routes
			break
		}
		if attempt == 3 {
			t.Fatalf("kvwatchtest: starting a %d-node cluster, 3 attempts: %v", n, err)
		}
		t.Logf("kvwatchtest: starting a %d-node cluster again: %v", n, err)
	}
	_, js := Connect(t, c.Nodes[0].Server, nats.MaxReconnects(-1))
	Eventually(t, 20*time.Second, "JetStream cluster ready", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	})
	return c
}

// startNodes starts the n servers of a new cluster, each dialing the
// others through a proxy of its own per peer. A JetStream cluster needs
// its routes configured before it starts, so the cluster ports are picked
// free first; one taken meanwhile (by another test's server) makes a node
// fail to start, and what was started is stopped. The nodes advertise
// an address that takes no connection: a route learned from gossip would
// go round the proxies.
func startNodes(t testing.TB, n int) ([]*Node, []route, error) {
	t.Helper()
	name := fmt.Sprintf("kvwatchtest-%d", time.Now().UnixNano())
	ports := make([]int, n)
	for i := range ports {
		ports[i] = freePort(t)
	}
	var routes []route
	var nodes []*Node
	stop := func() {
		for _, started := range nodes {
			started.Stop()
		}
		for _, r := range routes {
			r.proxy.Close()
		}
	}
	nodeName := func(i int) string { return fmt.Sprintf("n%d", i+1) }
	for i := range n {
		opts := &server.Options{ServerName: nodeName(i)}
		opts.Cluster.Name = name
		opts.Cluster.Host = "127.0.0.1"
		opts.Cluster.Port = ports[i]
		// Gossip tells the other nodes this address for routes they do
		// not have (an implicit route, past the proxies): one that takes
		// no connection, so that every route is a configured one.
		opts.Cluster.Advertise = "127.0.0.1:1"
		for j := range n {
			if j == i {
				continue
			}
			p, err := netfault.New(fmt.Sprintf("127.0.0.1:%d", ports[j]))
			if err != nil {
				stop()
				return nil, nil, err
			}
			routes = append(routes, route{from: nodeName(i), to: nodeName(j), proxy: p})
			opts.Routes = append(opts.Routes, server.RoutesFromStr(p.URL())...)
		}
		nodes = append(nodes, &Node{opts: nodeOptions(t, opts)})
	}
	for i, node := range nodes {
		if err := node.tryStart(); err != nil {
			nodes = nodes[:i]
			stop()
			return nil, nil, err
		}
	}
	// Cleanups run last first: the nodes stop before their routes close.
	for _, r := range routes {
		t.Cleanup(r.proxy.Close)
	}
	for _, node := range nodes {
		t.Cleanup(node.Stop)
	}
	return nodes, routes, nil
}

// Routes returns the proxies of every route between the node named name
// and the others, both the ones it dials and the ones they dial it
// through (a route between two nodes is whichever connection of the two
// was made): a fault on all of them partitions the node from the rest of
// the cluster (Blackhole: silently; Partition: refused), on one of them
// cuts one pair. The node's clients are not behind them.
func (c *Cluster) Routes(name string) []*netfault.Proxy {
	var out []*netfault.Proxy
	for _, r := range c.routes {
		if r.from == name || r.to == name {
			out = append(out, r.proxy)
		}
	}
	return out
}

// URL is every node's client URL, comma-separated, as nats.Connect takes
// it: a client fails over between them.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = fmt.Sprintf("nats://127.0.0.1:%d", n.opts.Port)
	}
	return strings.Join(urls, ",")
}

// Connect connects to the cluster with fast reconnects (every 50 ms,
// without end) and returns the connection and a JetStream context; the
// connection is closed when the test ends.
func (c *Cluster) Connect(t testing.TB, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	opts = append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}, opts...)
	return connect(t, c.URL(), opts...)
}

// Node returns the node named name (ServerName), or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.opts.ServerName == name {
			return n
		}
	}
	return nil
}

// MetaLeader returns the name of the running node that leads the
// JetStream meta group (the one that places streams and consumers), or ""
// while there is none.
func (c *Cluster) MetaLeader() string {
	for _, n := range c.Nodes {
		if n.Running() && n.JetStreamIsLeader() {
			return n.opts.ServerName
		}
	}
	return ""
}
