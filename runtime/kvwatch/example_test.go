package kvwatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/internal/exampleserver"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// These examples use the fleet example's generated package, fleetkv
// (examples/fleet/fleetkv/kvwatch.yaml): generated watchers are
// kvwatch.Watchers with typed handlers and caches.

// exampleBucket starts an embedded server with bucket name holding two
// routes, blue/r1 and red/r1.
func exampleBucket(ctx context.Context, name string) (jetstream.JetStream, *fleetkv.NetworkBucket, func()) {
	url, stop, err := exampleserver.Start()
	if err != nil {
		log.Fatal(err)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		log.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: name})
	if err != nil {
		log.Fatal(err)
	}
	b := fleetkv.NewNetworkBucket(kv)
	b.PutRoute(ctx, fleetkv.RouteKey{VPC: "blue", RouteID: "r1"}, fleetkv.Route{CIDR: "10.1.1.0/24"})
	b.PutRoute(ctx, fleetkv.RouteKey{VPC: "red", RouteID: "r1"}, fleetkv.Route{CIDR: "10.3.1.0/24"})
	return js, b, func() { nc.Close(); stop() }
}

// routeLines returns a route handler that describes each event on lines.
// Handlers run on a goroutine of their own: the example reads their lines
// where it prints, in order with the rest.
func routeLines(lines chan<- string) func(fleetkv.RouteEvent) {
	return func(ev fleetkv.RouteEvent) {
		lines <- fmt.Sprintf("%s %s initial=%v left=%v", ev.Op, ev.Key, ev.Initial, ev.LeftScope)
	}
}

// printLines prints the next n lines.
func printLines(lines <-chan string, n int) {
	for range n {
		fmt.Println(<-lines)
	}
}

// A running watcher changes its scopes with the same consumer: keys of a
// removed scope leave as deletes with LeftScope set, an added scope
// arrives as Initial events.
func Example_setScopes() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, _, stop := exampleBucket(ctx, "network")
	defer stop()
	lines := make(chan string, 8)
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"blue"}}, fleetkv.NetworkHandlers{OnRoute: routeLines(lines)})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		log.Fatal(err)
	}
	if err := w.SetScopes(ctx, fleetkv.NetworkScopes{VPC: []string{"red"}}); err != nil {
		log.Fatal(err)
	}
	printLines(lines, 3) // blue/r1's initial event, blue/r1 leaving, red/r1 arriving
	fmt.Println(w.Filters())
	// Output:
	// put vpc.blue.route.r1 initial=true left=false
	// delete vpc.blue.route.r1 initial=false left=true
	// put vpc.red.route.r1 initial=true left=false
	// [$KV.network.vpc.red $KV.network.vpc.red.>]
}

// A checkpoint, kept as JSON, resumes a later watcher: it receives only
// what changed since (a "delta"), not the whole state again.
func Example_checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, b, stop := exampleBucket(ctx, "network")
	defer stop()
	scopes := fleetkv.NetworkScopes{VPC: []string{"blue"}}
	w, err := fleetkv.WatchNetwork(ctx, js, scopes, fleetkv.NetworkHandlers{})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.WaitSynced(ctx); err != nil {
		log.Fatal(err)
	}
	cp, _ := w.Checkpoint()
	saved, _ := json.Marshal(cp) // what a node keeps on disk
	w.Stop()

	b.PutRoute(ctx, fleetkv.RouteKey{VPC: "blue", RouteID: "r2"}, fleetkv.Route{CIDR: "10.1.2.0/24"})
	var restored fleetkv.NetworkCheckpoint
	if err := json.Unmarshal(saved, &restored); err != nil {
		log.Fatal(err)
	}
	lines := make(chan string, 8)
	w, err = fleetkv.WatchNetwork(ctx, js, scopes, fleetkv.NetworkHandlers{OnRoute: routeLines(lines)}, restored.Resume())
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		log.Fatal(err)
	}
	printLines(lines, 1) // only the route written since the checkpoint
	fmt.Println(w.Stats().Resume, w.RouteCache().Len(), "routes cached")
	// Output:
	// put vpc.blue.route.r2 initial=true left=false
	// delta 2 routes cached
}

// The schema names bucket network; WithBucket watches it under the name
// an environment gives it, and the generated client writes to the bucket
// of the handle it wraps.
func ExampleWithBucket() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, _, stop := exampleBucket(ctx, "network-staging")
	defer stop()
	lines := make(chan string, 8)
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"red"}}, fleetkv.NetworkHandlers{OnRoute: routeLines(lines)},
		kvwatch.WithBucket("network-staging"))
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		log.Fatal(err)
	}
	printLines(lines, 1)
	fmt.Println(w.Bucket())
	// Output:
	// put vpc.red.route.r1 initial=true left=false
	// network-staging
}
