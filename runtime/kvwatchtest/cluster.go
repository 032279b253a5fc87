package kvwatchtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	if err := n.tryStart(); err != nil {
		t.Fatalf("kvwatchtest: %v", err)
	}
}

// tryStart starts the server and waits until it takes connections. A
// listener that cannot bind (a port picked free and taken since, by
// another test's server) fails at once instead of after the wait.
func (n *Node) tryStart() error {
	opts := n.opts // the server keeps and changes its own copy
	s, err := server.NewServer(&opts)
	if err != nil {
		return fmt.Errorf("new server: %w", err)
	}
	fatal := &fatalLog{}
	s.SetLoggerV2(fatal, false, false, false)
	s.Start()
	deadline := time.Now().Add(20 * time.Second)
	for !s.ReadyForConnections(100 * time.Millisecond) {
		msg := fatal.first()
		if msg == "" && time.Now().Before(deadline) {
			continue
		}
		s.Shutdown()
		s.WaitForShutdown()
		if msg == "" {
			msg = "not ready within 20s"
		}
		return fmt.Errorf("server %s: %s", n.opts.ServerName, msg)
	}
	n.Server = s
	// Keep the ports it got, so that a restart comes back on them.
	n.opts.Port = s.Addr().(*net.TCPAddr).Port
	return nil
}

// fatalLog is a server logger that keeps the server's fatal errors (which
// include a listener that cannot bind) and drops everything else.
type fatalLog struct {
	mu  sync.Mutex
	msg string
}

func (l *fatalLog) Fatalf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.msg == "" {
		l.msg = fmt.Sprintf(format, v...)
	}
}

func (l *fatalLog) first() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.msg
}

func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}

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
type Cluster struct {
	Nodes []*Node
}

// StartCluster starts a JetStream cluster of n servers (3 makes R3 streams
// possible) on random loopback ports, each with its own store, and waits
// until JetStream is usable. The servers are shut down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{}
	for attempt := 1; ; attempt++ {
		nodes, err := startNodes(t, n)
		if err == nil {
			c.Nodes = nodes
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

// startNodes starts the n servers of a new cluster. A JetStream cluster
// needs its routes configured before it starts, so their ports are picked
// free first; one taken meanwhile (by another test's server) makes a node
// fail to start, and the nodes already started are stopped.
func startNodes(t testing.TB, n int) ([]*Node, error) {
	t.Helper()
	name := fmt.Sprintf("kvwatchtest-%d", time.Now().UnixNano())
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range ports {
		ports[i] = freePort(t)
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", ports[i])
	}
	var nodes []*Node
	for i := range n {
		opts := &server.Options{ServerName: fmt.Sprintf("n%d", i+1)}
		opts.Cluster.Name = name
		opts.Cluster.Host = "127.0.0.1"
		opts.Cluster.Port = ports[i]
		opts.Routes = server.RoutesFromStr(strings.Join(routes, ","))
		node := &Node{opts: fillOptions(t, opts)}
		if err := node.tryStart(); err != nil {
			for _, started := range nodes {
				started.Stop()
			}
			return nil, err
		}
		t.Cleanup(node.Stop)
		nodes = append(nodes, node)
	}
	return nodes, nil
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
