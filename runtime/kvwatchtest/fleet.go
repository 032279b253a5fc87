package kvwatchtest

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// Fleet is the topology a large fleet uses (docs/fleet.md): a hub
// server with its own JetStream domain holding the bucket, and edge
// servers, each a leaf node of the hub with a domain of its own, holding a
// mirror of the bucket named like it. Nodes connect to an edge and watch
// its mirror; the hub carries no watcher consumer. Unless FleetOptions.Bare,
// it has the settings docs/fleet.md recommends, which keep the nodes'
// reply subscriptions on their edge (see StartFleet).
type Fleet struct {
	// Hub holds the bucket, in JetStream domain HubDomain.
	Hub *Node
	// Edges hold its mirrors, edge i in domain "edge<i+1>".
	Edges []*Edge
	// Bucket is the configuration the bucket was created with.
	Bucket jetstream.KeyValueConfig
}

// HubDomain is the JetStream domain of a Fleet's hub.
const HubDomain = "hub"

// LocalInboxPrefix is the inbox prefix of a Fleet's watcher connections
// (Edge.Connect), and LocalInboxPrefix+".>" is what each edge's leaf remote
// denies by default (docs/fleet.md): replies to these inboxes are
// neither sent to the hub nor accepted from it.
const LocalInboxPrefix = "_LOCAL"

// Edge is an edge server of a Fleet: a leaf node of the hub, reaching it
// through a link that the test can cut and restore, or break otherwise
// (Link).
type Edge struct {
	*Node
	// Domain is its JetStream domain.
	Domain string
	link   *netfault.Proxy
	inbox  string // the inbox prefix of Connect's connections; "" for the default
}

// FleetOptions shape a Fleet; the zero value is a hub and one edge with
// the settings docs/fleet.md recommends.
type FleetOptions struct {
	// Edges is the number of edge servers (default 1).
	Edges int
	// Bare starts the fleet with nats-server's defaults instead of the
	// recommended settings, for tests of that topology: the hub does not
	// isolate leaf node interest, the edges' leaf remotes deny no imports
	// (unless DenyImports says otherwise), and Edge.Connect uses the
	// default inbox prefix. Every subscription then reaches the hub and,
	// through it, every other edge.
	Bare bool
	// DenyImports are the subjects each edge's leaf remote denies
	// (deny_imports). Nil means LocalInboxPrefix+".>", or none when Bare;
	// a non-nil slice is used as it is.
	DenyImports []string
}

// StartFleet starts a hub and its edges (leaf nodes with their own
// domains), creates the bucket of cfg on the hub and a mirror named like
// it on every edge, and waits until every edge is linked and its mirror
// has heard from the hub. Everything is shut down when the test ends.
//
// Unless fo.Bare, the servers have the settings docs/fleet.md recommends
// for a fleet: the hub isolates leaf node interest (isolate_leafnode_interest:
// one edge's subscriptions are not copied to the others), and each edge's
// leaf remote denies the imports of LocalInboxPrefix+".>" (deny_imports),
// the inbox prefix of Edge.Connect's connections, whose reply
// subscriptions then stay on the edge.
func StartFleet(t testing.TB, cfg jetstream.KeyValueConfig, fo FleetOptions) *Fleet {
	t.Helper()
	if fo.Edges == 0 {
		fo.Edges = 1
	}
	inbox := LocalInboxPrefix
	if fo.Bare {
		inbox = ""
	} else if fo.DenyImports == nil {
		fo.DenyImports = []string{LocalInboxPrefix + ".>"}
	}
	leafPort := freePort(t)
	hubOpts := &server.Options{ServerName: "hub", JetStreamDomain: HubDomain}
	hubOpts.LeafNode.Host = "127.0.0.1"
	hubOpts.LeafNode.Port = leafPort
	hubOpts.LeafNode.IsolateLeafnodeInterest = !fo.Bare
	// Edges must reach the hub through their link only (Cut), not by the
	// listen address the hub would advertise to them.
	hubOpts.LeafNode.NoAdvertise = true
	f := &Fleet{Hub: StartNode(t, hubOpts), Bucket: cfg}
	_, hubJS := Connect(t, f.Hub.Server)
	BucketWith(t, hubJS, cfg)
	for i := range fo.Edges {
		l := netfault.Start(t, fmt.Sprintf("127.0.0.1:%d", leafPort))
		opts := &server.Options{ServerName: fmt.Sprintf("edge%d", i+1), JetStreamDomain: fmt.Sprintf("edge%d", i+1)}
		opts.LeafNode.ReconnectInterval = 100 * time.Millisecond
		opts.LeafNode.Remotes = []*server.RemoteLeafOpts{{
			URLs:        []*url.URL{{Scheme: "nats-leaf", Host: l.Addr()}},
			DenyImports: slices.Clone(fo.DenyImports),
		}}
		e := &Edge{Node: StartNode(t, opts), Domain: opts.JetStreamDomain, link: l, inbox: inbox}
		f.Edges = append(f.Edges, e)
		e.waitLinked(t)
		_, js := e.Connect(t)
		mirror := cfg
		mirror.Mirror = &jetstream.StreamSource{Name: cfg.Bucket, Domain: HubDomain}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := js.CreateKeyValue(ctx, mirror)
		cancel()
		if err != nil {
			t.Fatalf("kvwatchtest: mirror of %s on %s: %v", cfg.Bucket, e.Domain, err)
		}
		// Linked: a mirror whose link is cut while it first sets up its
		// consumer on the origin can take a long while to try again.
		Eventually(t, 20*time.Second, "the mirror on "+e.Domain+" hearing from the hub", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			s, err := js.Stream(ctx, "KV_"+cfg.Bucket)
			return err == nil && s.CachedInfo().Mirror != nil && s.CachedInfo().Mirror.Active >= 0
		})
	}
	return f
}

// ConnectHub connects to the hub, with fast reconnects (every 50 ms,
// without end), and returns the connection, closed when the test ends,
// and a JetStream context in the hub's domain: this is where the bucket
// is written.
func (f *Fleet) ConnectHub(t testing.TB, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return connect(t, f.Hub.ClientURL(), append(fastReconnects(), opts...)...)
}

// Connect connects to the edge as a fleet node's watcher does
// (docs/fleet.md, A node), with fast reconnects (every 50 ms, without
// end), and returns the connection, closed when the test ends, and a JetStream
// context in the edge's domain, which reads the edge's mirror.
//
// Unless the fleet is Bare, the connection's inbox prefix is
// LocalInboxPrefix (nats.CustomInboxPrefix), which the edge's leaf remote
// denies: its requests that the edge answers (watching, direct gets, KV
// gets, stream and consumer requests on the edge) work, and its reply
// subscriptions stay on the edge; its requests that the hub answers (a
// write through the mirror-bound KV handle, anything in the hub's domain)
// get no reply. Use ConnectWriter for those: a write through the returned
// JetStream context (a KV handle's Put, Create, Update, Delete, Purge, or a
// Publish) that gets no reply within 3 s fails with an error naming
// ConnectWriter, whatever its context's deadline. A nats.CustomInboxPrefix
// among opts replaces the prefix.
func (e *Edge) Connect(t testing.TB, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	if e.inbox != "" {
		opts = append([]nats.Option{nats.CustomInboxPrefix(e.inbox)}, opts...)
	}
	nc, js := e.connect(t, opts...)
	if e.deniesInbox(nc) {
		js = watcherJetStream{js}
	}
	return nc, js
}

// ConnectWriter connects to the edge as a fleet node's second connection,
// for writes, does (docs/fleet.md, A node): like Connect, but with the
// default inbox prefix, so that replies from the hub reach it. A write
// through its mirror-bound KV handle goes to the hub, and the edge's
// mirror has it a moment later. In a Bare fleet it is Connect.
func (e *Edge) ConnectWriter(t testing.TB, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return e.connect(t, opts...)
}

func (e *Edge) connect(t testing.TB, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	return connect(t, fmt.Sprintf("nats://127.0.0.1:%d", e.opts.Port), append(fastReconnects(), opts...)...)
}

func fastReconnects() []nats.Option {
	return []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}
}

// Cut cuts the edge's link to the hub: connections are closed and new
// ones refused until Restore. The edge's mirror stops hearing from the
// origin; watchers on the edge go on reading what it holds.
func (e *Edge) Cut() { e.link.Partition() }

// Restore lets the edge link to the hub again: it removes every fault
// of the link (Cut's and Link's).
func (e *Edge) Restore() { e.link.Heal() }

// Link is the proxy between the edge and the hub's leaf node port, for
// faults other than a cut: a silent link (Blackhole), a slow one
// (Latency, Bandwidth), a reset in the middle of a message.
func (e *Edge) Link() *netfault.Proxy { return e.link }

// waitLinked waits until the edge has its leaf connection to the hub.
func (e *Edge) waitLinked(t testing.TB) {
	t.Helper()
	Eventually(t, 20*time.Second, e.Domain+" linked to the hub", func() bool { return e.NumLeafNodes() > 0 })
}

// WaitMirrored waits until the edge's mirror holds the hub's bucket up to
// revision rev, and fails the test if it does not within 60 s. It asks the
// edge only, so it works while the edge's link is cut.
func (f *Fleet) WaitMirrored(t testing.TB, e *Edge, rev uint64) {
	t.Helper()
	_, js := e.Connect(t)
	Eventually(t, 60*time.Second, fmt.Sprintf("%s mirrored up to %d", e.Domain, rev), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s, err := js.Stream(ctx, "KV_"+f.Bucket.Bucket)
		return err == nil && s.CachedInfo().State.LastSeq >= rev
	})
}
