package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// This file runs the fleet scenario's servers: it starts the hub with the
// bucket loaded and the edges with their mirrors, and stops them; it
// measures each server's memory, consumers and subscriptions, and waits
// until a condition holds.

// fleet is a running hub and its edges.
type fleet struct {
	hub   *childServer
	edges []*childServer
	// hubBeforeEdges and hubAfterEdges are the hub's memory before the
	// edges started and once every mirror synced (zero without edges).
	hubBeforeEdges, hubAfterEdges memReport
}

// startFleet starts the hub with the bucket loaded (every key of every
// tenant), then the edges, each with its mirror, and returns once every
// mirror holds the bucket. The hub's memory is measured (settledMem)
// before the edges and after their mirrors synced. On error nothing is
// left running.
func startFleet(ctx context.Context, cfg fleetConfig) (*fleet, error) {
	ports := make([]int, 2+cfg.edges) // hub leafnode, hub monitoring, each edge's monitoring
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	f := &fleet{}
	var err error
	f.hub, err = startFleetServer(&leafNode{Name: "hub", Domain: fleetHubDomain, HTTPPort: ports[1], ListenPort: ports[0], Isolate: cfg.isolated}, 0)
	if err != nil {
		return nil, err
	}
	last, err := loadHub(ctx, f.hub)
	if err != nil {
		f.stop()
		return nil, err
	}
	if cfg.edges == 0 {
		return f, nil
	}
	f.hubBeforeEdges, err = settledMem(ctx, f.hub)
	if err != nil {
		f.stop()
		return nil, err
	}
	for i := range cfg.edges {
		node := &leafNode{Name: fmt.Sprintf("edge%d", i+1), Domain: fmt.Sprintf("edge%d", i+1), HTTPPort: ports[2+i],
			Hub: fmt.Sprintf("nats-leaf://127.0.0.1:%d", ports[0])}
		if cfg.isolated {
			node.DenyImports = []string{fleetLocalDeny}
		}
		edge, err := startFleetServer(node, 0)
		if err != nil {
			f.stop()
			return nil, err
		}
		f.edges = append(f.edges, edge)
	}
	for _, edge := range f.edges {
		if err := startMirror(ctx, edge, last); err != nil {
			f.stop()
			return nil, err
		}
	}
	f.hubAfterEdges, err = settledMem(ctx, f.hub)
	if err != nil {
		f.stop()
		return nil, err
	}
	return f, nil
}

// startFleetServer starts a server child of a fleet on port (0: a random
// one) and connects to it.
func startFleetServer(node *leafNode, port int) (*childServer, error) {
	store, err := os.MkdirTemp("", "kvwatchgen-bench-")
	if err != nil {
		return nil, err
	}
	srv, err := startChild(&childServer{store: store, port: port, leaf: node})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", node.Name, err)
	}
	return srv, nil
}

// loadHub creates the bucket on the hub and writes every key of every
// tenant; it returns the last revision.
func loadHub(ctx context.Context, hub *childServer) (uint64, error) {
	if _, err := hub.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: fleetBucket, History: 1, Storage: jetstream.FileStorage}); err != nil {
		return 0, fmt.Errorf("bucket on the hub: %w", err)
	}
	n := fleetTenants * fleetKeysPerTenant
	last, err := hub.load(ctx, loadRequest{Bucket: fleetBucket, Prefixes: fleetTenants, PerPrefix: fleetKeysPerTenant, Count: n, ValueSize: fleetValueSize})
	if err != nil {
		return 0, fmt.Errorf("loading the hub: %w", err)
	}
	return last, nil
}

// startMirror waits until the edge is linked to the hub, creates its
// mirror of the bucket, and waits until the mirror holds revision last
// and hears from its origin.
func startMirror(ctx context.Context, edge *childServer, last uint64) error {
	name := edge.leaf.Name
	err := waitUntil(ctx, 30*time.Second, name+" linked to the hub", func(ctx context.Context) (bool, error) {
		v, err := edge.varz(ctx)
		return err == nil && v.Leafnodes > 0, err
	})
	if err != nil {
		return err
	}
	_, err = edge.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: fleetBucket, History: 1, Storage: jetstream.FileStorage,
		Mirror: &jetstream.StreamSource{Name: fleetBucket, Domain: fleetHubDomain}})
	if err != nil {
		return fmt.Errorf("mirror on %s: %w", name, err)
	}
	return waitUntil(ctx, 60*time.Second, fmt.Sprintf("the mirror on %s holding revision %d", name, last), func(ctx context.Context) (bool, error) {
		s, err := edge.js.Stream(ctx, fleetStream)
		if err != nil {
			return false, err
		}
		info := s.CachedInfo()
		return info.State.LastSeq >= last && info.Mirror != nil && info.Mirror.Active >= 0, nil
	})
}

// servers is the hub, then the edges.
func (f *fleet) servers() []*childServer {
	return append([]*childServer{f.hub}, f.edges...)
}

// stop ends every server of the fleet.
func (f *fleet) stop() {
	for _, s := range f.servers() {
		if s != nil {
			s.stop()
		}
	}
}

// fleetMem is how the fleet scenarios measure a server's memory: after a
// GC that also returns the freed memory to the OS, so that RSS growth is
// what the server holds, not what its runtime has yet to give back.
var fleetMem = memRequest{Release: true}

// The hub's memory is read until it is still: every fleetMemEvery, until
// its RSS moved no more than fleetMemStill since the reading before, for
// at most fleetMemLimit. Right after 8 mirrors synced, the hub's RSS was
// 1.4–2.4 MiB above where it settled within a second: a single reading
// depends on when it is taken. Edges are read once: with 200 watchers
// on each, their RSS moved by up to 2.5 MiB between readings under 2 s
// apart and did not settle in 10 s; the spread over runs shows that
// noise.
const (
	fleetMemEvery = 200 * time.Millisecond
	fleetMemStill = 128 // KiB
	fleetMemLimit = 10 * time.Second
)

// settledMem reads s's memory as fleetMem says until it is still, and
// returns the last reading; past fleetMemLimit it returns the last
// reading anyway (the spread over runs then shows it).
func settledMem(ctx context.Context, s *childServer) (memReport, error) {
	last, err := s.memWith(ctx, fleetMem)
	if err != nil {
		return last, err
	}
	deadline := time.Now().Add(fleetMemLimit)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(fleetMemEvery):
		}
		now, err := s.memWith(ctx, fleetMem)
		if err != nil {
			return now, err
		}
		moved := math.Abs(float64(now.RSSKiB) - float64(last.RSSKiB))
		last = now
		if moved <= fleetMemStill {
			break
		}
	}
	return last, nil
}

// mem is each server's memory (hub first): the hub's once still
// (settledMem), each edge's read once, as fleetMem says.
func (f *fleet) mem(ctx context.Context) ([]memReport, error) {
	hub, err := settledMem(ctx, f.hub)
	if err != nil {
		return nil, err
	}
	out := []memReport{hub}
	for _, e := range f.edges {
		m, err := e.memWith(ctx, fleetMem)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// consumers counts the consumers on the hub's stream and on each edge's
// mirror. A mirror's own consumer on its origin is internal: the hub does
// not count it (NATS-FACTS.md, Consumers).
func (f *fleet) consumers(ctx context.Context) (origin int, edges []int, err error) {
	count := func(s *childServer) (int, error) {
		st, err := s.js.Stream(ctx, fleetStream)
		if err != nil {
			return 0, err
		}
		return st.CachedInfo().State.Consumers, nil
	}
	if origin, err = count(f.hub); err != nil {
		return 0, nil, fmt.Errorf("consumers on the hub: %w", err)
	}
	for _, e := range f.edges {
		n, err := count(e)
		if err != nil {
			return 0, nil, fmt.Errorf("consumers on %s: %w", e.leaf.Name, err)
		}
		edges = append(edges, n)
	}
	return origin, edges, nil
}

// settledSubscriptions returns each server's subscription count (hub
// first, from /varz) once no count changed for a second: interest
// spreads across leafnode links a little after the watchers subscribe.
func (f *fleet) settledSubscriptions(ctx context.Context) ([]int, error) {
	const still = time.Second
	var last []int
	var since time.Time
	err := waitUntil(ctx, 30*time.Second, "subscription counts settled", func(ctx context.Context) (bool, error) {
		var now []int
		for _, s := range f.servers() {
			v, err := s.varz(ctx)
			if err != nil {
				return false, err
			}
			now = append(now, v.Subscriptions)
		}
		if !slices.Equal(now, last) {
			last, since = now, time.Now()
		}
		return time.Since(since) >= still, nil
	})
	return last, err
}

// waitUntil checks cond every 10 ms until it holds, for at most limit. The
// error names what was awaited, with cond's last error if any.
func waitUntil(ctx context.Context, limit time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%s: not within %s: %w", what, limit, lastErr)
			}
			return fmt.Errorf("%s: not within %s: %w", what, limit, ctx.Err())
		case <-tick.C:
		}
	}
}
