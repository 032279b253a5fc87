package kvwatchtest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Node is an embedded server that can be stopped and started again with
// the same store and ports, as a restart or the loss of a machine is.
type Node struct {
	*server.Server
	opts server.Options // as started, with the ports it got
}

// StartNode starts a server like ServerWith does and keeps what it needs
// to restart it. The server is shut down when the test ends.
func StartNode(t testing.TB, opts *server.Options) *Node {
	t.Helper()
	n := &Node{opts: fillOptions(t, opts)}
	n.start(t)
	t.Cleanup(n.Stop)
	return n
}

// fillOptions completes opts for a test server: JetStream, a temporary
// store, loopback, random ports.
func fillOptions(t testing.TB, opts *server.Options) server.Options {
	o := *opts
	o.JetStream = true
	if o.StoreDir == "" {
		o.StoreDir = t.TempDir()
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = -1
	}
	o.NoSigs = true
	return o
}

func (n *Node) start(t testing.TB) {
	t.Helper()
	opts := n.opts // the server keeps and changes its own copy
	s, err := server.NewServer(&opts)
	if err != nil {
		t.Fatalf("kvwatchtest: new server: %v", err)
	}
	s.Start()
	// 30 s: under -race on 2 cores a node of a starting 3-node cluster was
	// seen to take over 10 s (TestSurvivesStreamLeaderStepDown, 1 run in 9).
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		t.Fatalf("kvwatchtest: server not ready within 30s")
	}
	n.Server = s
	// Keep the ports it got, so that a restart comes back on them.
	n.opts.Port = s.Addr().(*net.TCPAddr).Port
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
	if n.Server != nil && n.Server.Running() {
		n.Server.Shutdown()
		n.Server.WaitForShutdown()
	}
}

// Restart stops the server and starts it again on the same ports with the
// same store, as after a crash or an upgrade.
func (n *Node) Restart(t testing.TB) {
	t.Helper()
	n.Stop()
	n.start(t)
}

// Cluster is a JetStream cluster of embedded servers in one process.
type Cluster struct {
	Nodes []*Node
}

// StartCluster starts a JetStream cluster of n servers (3 makes R3 streams
// possible) on random loopback ports, each with its own store, and waits
// until JetStream is usable. The servers are shut down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{}
	name := fmt.Sprintf("kvwatchtest-%d", time.Now().UnixNano())
	// A JetStream cluster needs its routes configured before it starts:
	// pick free ports for them first.
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range ports {
		ports[i] = freePort(t)
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", ports[i])
	}
	for i := range n {
		opts := &server.Options{ServerName: fmt.Sprintf("n%d", i+1)}
		opts.Cluster.Name = name
		opts.Cluster.Host = "127.0.0.1"
		opts.Cluster.Port = ports[i]
		opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		c.Nodes = append(c.Nodes, StartNode(t, opts))
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
