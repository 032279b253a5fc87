package fleetkv_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/internal/exampleserver"
)

// A node watches the VPCs it hosts with one typed watcher: the initial
// state arrives as Initial events, then live changes; the caches are
// exact once it is synced. Handlers run on a goroutine of their own: this
// one hands its lines to the example's, which prints them.
func ExampleWatchNetwork() {
	url, stop, err := exampleserver.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	nc, err := nats.Connect(url)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "network"})
	if err != nil {
		log.Fatal(err)
	}
	b := fleetkv.NewNetworkBucket(kv)
	b.PutRoute(ctx, fleetkv.RouteKey{VPC: "blue", RouteID: "r1"}, fleetkv.Route{CIDR: "10.1.1.0/24", NextHop: "10.1.0.1"})
	b.PutRoute(ctx, fleetkv.RouteKey{VPC: "red", RouteID: "r1"}, fleetkv.Route{CIDR: "10.3.1.0/24", NextHop: "10.3.0.1"})

	lines := make(chan string, 8)
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"blue"}}, fleetkv.NetworkHandlers{
		OnRoute: func(ev fleetkv.RouteEvent) {
			lines <- fmt.Sprintf("%s %s %s initial=%v", ev.Op, ev.Key, ev.Value.CIDR, ev.Initial)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		log.Fatal(err)
	}
	rev, _ := b.PutRoute(ctx, fleetkv.RouteKey{VPC: "blue", RouteID: "r2"}, fleetkv.Route{CIDR: "10.1.2.0/24"})
	if err := w.WaitRevision(ctx, rev); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-lines)
	fmt.Println(<-lines)
	fmt.Println(w.RouteCache().Len(), "routes cached")
	// Output:
	// put vpc.blue.route.r1 10.1.1.0/24 initial=true
	// put vpc.blue.route.r2 10.1.2.0/24 initial=false
	// 2 routes cached
}
