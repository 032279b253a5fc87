package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
)

// edgeNodes is what runs on the edges: a mirror of the bucket on each,
// the example's node on edge1, and a node on every other edge.
type edgeNodes struct {
	nodeJS   jetstream.JetStream   // the example's node, on edge1
	edgeJS   []jetstream.JetStream // a connection to each edge, for its consumer count
	conns    []*nats.Conn
	watchers []*fleetkv.NetworkWatcher
}

// startEdgeNodes creates each edge's mirror, waits until it holds what the
// hub holds, connects the example's node to edge1 and starts a node on
// every other edge, watching amber and violet. Nodes' connections use
// the local inbox prefix, which keeps their reply subscriptions on their
// edge (docs/fleet.md).
func startEdgeNodes(ctx context.Context, topo *topology, hub jetstream.JetStream, out io.Writer) (*edgeNodes, error) {
	s, err := hub.Stream(ctx, "KV_network")
	if err != nil {
		return nil, err
	}
	written := s.CachedInfo().State.LastSeq
	f := &edgeNodes{}
	var names []string
	for i, e := range topo.edges {
		nc, js, err := connect(e.ClientURL())
		if err != nil {
			f.stop()
			return nil, err
		}
		f.conns, f.edgeJS = append(f.conns, nc), append(f.edgeJS, js)
		if err := createMirror(ctx, js, written); err != nil {
			f.stop()
			return nil, fmt.Errorf("edge%d: %w", i+1, err)
		}
		names = append(names, fmt.Sprintf("edge%d", i+1))
	}
	fmt.Fprintf(out, "mirrored bucket network on %s\n", strings.Join(names, ", "))
	for i, e := range topo.edges {
		nc, js, err := connect(e.ClientURL(), nats.CustomInboxPrefix(localInbox))
		if err != nil {
			f.stop()
			return nil, err
		}
		f.conns = append(f.conns, nc)
		if i == 0 {
			f.nodeJS = js
			continue
		}
		w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"amber", "violet"}}, fleetkv.NetworkHandlers{})
		if err != nil {
			f.stop()
			return nil, fmt.Errorf("node on edge%d: %w", i+1, err)
		}
		f.watchers = append(f.watchers, w)
		if err := w.WaitSynced(ctx); err != nil {
			f.stop()
			return nil, fmt.Errorf("node on edge%d: %w", i+1, err)
		}
		fmt.Fprintf(out, "a node on edge%d watches amber, violet (%s cached)\n", i+1, count(w.RouteCache().Len(), "route"))
	}
	return f, nil
}

func (f *edgeNodes) stop() {
	for _, w := range f.watchers {
		w.Stop()
	}
	for _, nc := range f.conns {
		nc.Close()
	}
}

// readYourWrites writes a route through edge1, as its node would: the
// mirror-bound handle of the edge sends the write to the hub, and the
// edge's mirror has it a moment later. WaitRevision waits for that
// moment; the node's cache then holds the write.
func readYourWrites(ctx context.Context, edge *embedded, w *fleetkv.NetworkWatcher, p *printer, out io.Writer) error {
	// Writes need replies from the hub: a connection without the local
	// inbox prefix, whose replies the edge's leaf remote would deny.
	nc, js, err := connect(edge.ClientURL())
	if err != nil {
		return err
	}
	defer nc.Close()
	kv, err := js.KeyValue(ctx, "network")
	if err != nil {
		return err
	}
	key := fleetkv.RouteKey{VPC: "blue", RouteID: "r3"}
	rev, err := fleetkv.NewNetworkBucket(kv).PutRoute(ctx, key, fleetkv.Route{CIDR: "10.1.3.0/24", NextHop: "10.1.0.3", Metric: 30})
	if err != nil {
		return err
	}
	if err := w.WaitRevision(ctx, rev); err != nil {
		return err
	}
	got, ok := w.RouteCache().Get(key)
	if !ok {
		return fmt.Errorf("route %s not in the cache after WaitRevision(%d)", key, rev)
	}
	if err := p.waitFor(ctx, rev); err != nil { // its event printed: the lines stay in order
		return err
	}
	fmt.Fprintf(out, "read-your-writes: wrote route blue/r3 through edge1 at revision %d; after WaitRevision the cache holds %s via %s\n",
		rev, got.CIDR, got.NextHop)
	return nil
}

// printConsumers prints the consumers on KV_network: on the one server,
// or on the hub (none: nodes watch the edges' mirrors) and on each edge
// (one per node).
func printConsumers(ctx context.Context, out io.Writer, hub jetstream.JetStream, f *edgeNodes) error {
	n, err := consumers(ctx, hub)
	if err != nil {
		return err
	}
	if f == nil {
		fmt.Fprintf(out, "consumers on KV_network: %d\n", n)
		return nil
	}
	counts := []string{fmt.Sprintf("hub %d", n)}
	for i, js := range f.edgeJS {
		n, err := consumers(ctx, js)
		if err != nil {
			return fmt.Errorf("edge%d: %w", i+1, err)
		}
		counts = append(counts, fmt.Sprintf("edge%d %d", i+1, n))
	}
	fmt.Fprintf(out, "consumers on KV_network: %s\n", strings.Join(counts, ", "))
	return nil
}
