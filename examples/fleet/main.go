// Command fleet is the kvwatchgen example: a node of a fleet watches the
// network state of the 3 VPCs it hosts, out of 5, with ONE typed watcher
// (one consumer on the stream), prints what it sees, then moves to another
// set of VPCs with the same watcher.
//
//	go run ./examples/fleet                     # on an embedded nats-server
//	go run ./examples/fleet -edges 2            # on an embedded hub and 2 edges holding KV mirrors
//	go run ./examples/fleet -server nats://...  # on an existing server
//
// With -edges the node watches the first edge's mirror of the bucket, a
// node on every other edge watches its own, and the example ends by
// printing the consumers on the hub (none) and on each edge (its nodes').
//
// On an existing server it creates bucket "network" and deletes it at the
// end; it refuses to run when that bucket exists already, since it would
// write its demo data into someone else's bucket.
//
// The typed package it uses, fleetkv, is generated from
// fleetkv/kvwatch.yaml by `go generate ./examples/fleet/fleetkv`.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
)

func main() {
	serverURL := flag.String("server", "", "NATS server URL (default: start an embedded nats-server)")
	edges := flag.Int("edges", 0, "start an embedded hub and this many edge servers holding KV mirrors, and watch on the first edge (docs/fleet.md)")
	flag.Parse()
	log.SetFlags(0)
	if err := run(*serverURL, *edges, os.Stdout); err != nil {
		log.Fatalf("fleet: %v", err)
	}
}

var (
	allVPCs     = []string{"blue", "green", "red", "amber", "violet"}
	watchedVPCs = []string{"blue", "green", "red"}
)

// run is the example, printing to out: on serverURL, or on embedded
// servers (with edges > 0, a hub and that many edges).
func run(serverURL string, edges int, out io.Writer) error {
	external := serverURL != ""
	switch {
	case edges < 0:
		return fmt.Errorf("-edges %d: want 0 (one server) or more edge servers", edges)
	case edges > 0 && external:
		return errors.New("-edges starts an embedded hub and its edges: it cannot be combined with -server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Handlers print on their own goroutine: main prints through the
	// printer too.
	p := newPrinter(out)
	out = p
	var topo *topology
	if !external {
		var err error
		if topo, err = startTopology(edges); err != nil {
			return err
		}
		defer topo.shutdown()
		serverURL = topo.hub.ClientURL()
		fmt.Fprintln(out, topo.describe())
	}
	// The control plane's connection: the bucket is written at the hub.
	nc, js, err := connect(serverURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	network, err := createBucket(ctx, js, serverURL)
	if err != nil {
		return err
	}
	if external {
		// The bucket is the example's: leave nothing of it behind.
		defer js.DeleteKeyValue(context.Background(), "network")
	}
	if err := writeFleet(ctx, network); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote the network state of %d VPCs: %s\n", len(allVPCs), strings.Join(allVPCs, ", "))

	// The node connects to its server: the hub, or the first edge.
	nodeJS := js
	var fleet *edgeNodes
	if edges > 0 {
		if fleet, err = startEdgeNodes(ctx, topo, js, out); err != nil {
			return err
		}
		defer fleet.stop()
		nodeJS = fleet.nodeJS
		fmt.Fprintf(out, "watching %s with one watcher, on edge1's mirror\n\n", strings.Join(watchedVPCs, ", "))
	} else {
		fmt.Fprintf(out, "watching %s with one watcher\n\n", strings.Join(watchedVPCs, ", "))
	}

	w, err := fleetkv.WatchNetwork(ctx, nodeJS, fleetkv.NetworkScopes{VPC: watchedVPCs}, p.handlers())
	if err != nil {
		return err
	}
	defer w.Stop()
	// WaitSynced returns once the caches hold the initial state; the
	// handlers print their events on their own goroutine, OnSynced last.
	if err := w.WaitSynced(ctx); err != nil {
		return err
	}
	if err := p.waitSynced(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "synced: %s, %s, %s in the cache\n\n", count(w.VPCConfigCache().Len(), "VPC config"),
		count(w.RouteCache().Len(), "route"), count(w.FirewallRuleCache().Len(), "firewall rule"))
	if m := w.Stats().Mirror; m != nil {
		fmt.Fprintf(out, "the watched stream is a mirror of %s, reached through %s; stale: %v\n\n", m.Origin, m.External, m.Stale)
	}

	last, err := changeFleet(ctx, network)
	if err != nil {
		return err
	}
	// The last change is in a watched VPC: once it is printed, everything
	// written before it has been delivered, or was never in scope.
	if err := p.waitFor(ctx, last); err != nil {
		return err
	}
	s := w.Stats()
	fmt.Fprintf(out, "\nstats: %s, %s, %d skipped (bad value or unknown key); nothing from amber or violet\n",
		count(s.Puts, "put"), count(s.Deletes, "delete"), s.DataErrors+s.UnknownKeys)
	if fleet != nil {
		if err := readYourWrites(ctx, topo.edges[0], w, p, out); err != nil {
			return err
		}
	}

	// The node now hosts amber instead of red: re-scope the running
	// watcher. Only amber is read; red's entries leave the cache.
	fmt.Fprintf(out, "\nre-scoping to blue, green, amber (same watcher, same single consumer)\n")
	mark, leaving := p.printed(), cached(w, "red")
	if err := w.SetScopes(ctx, fleetkv.NetworkScopes{VPC: []string{"blue", "green", "amber"}}); err != nil {
		return err
	}
	// SetScopes returns with the caches exact; its events, one per key
	// that left or came, are printed on the handlers' goroutine.
	if err := p.waitEvents(ctx, mark, leaving+cached(w, "amber")); err != nil {
		return err
	}
	fmt.Fprintf(out, "cache: %s, %s, %s\n\n", count(w.VPCConfigCache().Len(), "VPC config"),
		count(w.RouteCache().Len(), "route"), count(w.FirewallRuleCache().Len(), "firewall rule"))
	return printConsumers(ctx, out, js, fleet)
}

// cached is how many keys of vpc w's caches hold.
func cached(w *fleetkv.NetworkWatcher, vpc string) int {
	configs := w.VPCConfigCache().ListFunc(func(k fleetkv.VPCConfigKey) bool { return k.VPC == vpc })
	routes := w.RouteCache().ListFunc(func(k fleetkv.RouteKey) bool { return k.VPC == vpc })
	rules := w.FirewallRuleCache().ListFunc(func(k fleetkv.FirewallRuleKey) bool { return k.VPC == vpc })
	return len(configs) + len(routes) + len(rules)
}

// createBucket creates the example's bucket, "network", with the
// configuration its schema declares. It refuses to use one that exists
// already: the example writes demo data into its bucket and deletes it at
// the end, so it must never be a bucket it did not create (someone's real
// network state, say).
func createBucket(ctx context.Context, js jetstream.JetStream, serverURL string) (*fleetkv.NetworkBucket, error) {
	refuse := fmt.Errorf("bucket %q already exists on %s: the example writes demo data into a bucket it creates, and deletes it at the end, "+
		"so it never touches one it did not create; run it without -server (on an embedded nats-server), "+
		"or with -server on a server or account without that bucket", "network", serverURL)
	switch _, err := js.KeyValue(ctx, "network"); {
	case err == nil:
		return nil, refuse
	case !errors.Is(err, jetstream.ErrBucketNotFound):
		return nil, err
	}
	// Absent a moment ago: CreateOrUpdate creates it (were it created in
	// between, by someone else, CreateOrUpdate would update its
	// configuration, and refuse any change that loses data).
	return fleetkv.CreateOrUpdateNetworkBucket(ctx, js)
}

// writeFleet writes a VPC config, two routes and a firewall rule per VPC.
func writeFleet(ctx context.Context, b *fleetkv.NetworkBucket) error {
	for i, vpc := range allVPCs {
		net := fmt.Sprintf("10.%d", i+1)
		cfg := fleetkv.VPCConfig{Name: vpc, CIDR: net + ".0.0/16", Region: "eu-west-1", Labels: map[string]string{"team": "net"}}
		if _, err := b.PutVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: vpc}, cfg); err != nil {
			return err
		}
		for r := 1; r <= 2; r++ {
			route := fleetkv.Route{CIDR: fmt.Sprintf("%s.%d.0/24", net, r), NextHop: net + ".0.1", Metric: 10 * r, Updated: time.Now()}
			if _, err := b.PutRoute(ctx, fleetkv.RouteKey{VPC: vpc, RouteID: fmt.Sprintf("r%d", r)}, route); err != nil {
				return err
			}
		}
		rule := fleetkv.FirewallRule{Action: "allow", CIDR: net + ".0.0/16", Port: 22}
		if _, err := b.PutFirewallRule(ctx, fleetkv.FirewallRuleKey{VPC: vpc, Priority: 100}, rule); err != nil {
			return err
		}
	}
	return nil
}

// changeFleet makes live changes, in and out of the watched VPCs, including
// a value that does not decode (it is reported and the watch goes on), and
// returns the revision of the last one.
func changeFleet(ctx context.Context, b *fleetkv.NetworkBucket) (uint64, error) {
	// A read-modify-write that no concurrent writer can lose.
	if _, err := b.ModifyRoute(ctx, fleetkv.RouteKey{VPC: "blue", RouteID: "r1"}, func(r *fleetkv.Route) error {
		r.NextHop, r.Metric, r.Updated = "10.1.0.254", 5, time.Now()
		return nil
	}); err != nil {
		return 0, err
	}
	// Two keys at once: watchers apply them together.
	if _, err := b.Batch().
		PutRoute(fleetkv.RouteKey{VPC: "amber", RouteID: "r9"}, fleetkv.Route{CIDR: "10.4.9.0/24", NextHop: "10.4.0.9", Metric: 90}).
		PutFirewallRule(fleetkv.FirewallRuleKey{VPC: "green", Priority: 10}, fleetkv.FirewallRule{Action: "deny", CIDR: "0.0.0.0/0", Port: 23}).
		Commit(ctx); err != nil {
		return 0, err
	}
	if err := b.DeleteRoute(ctx, fleetkv.RouteKey{VPC: "red", RouteID: "r2"}); err != nil {
		return 0, err
	}
	// Past the typed API, as a buggy writer would: not a Route.
	if _, err := b.KeyValue().PutString(ctx, "vpc.green.route.r3", "not json"); err != nil {
		return 0, err
	}
	return b.PutVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: "red"},
		fleetkv.VPCConfig{Name: "red", CIDR: "10.3.0.0/16", Region: "eu-west-2"})
}
