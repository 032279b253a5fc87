package kvwatchprom_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/internal/exampleserver"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchprom"
)

// A node registers one Collector and adds its generated watchers to it by
// their embedded kvwatch.Watcher, each under the name of the component
// that runs it; promhttp serves the registry. Here an httptest server
// stands in for the node's metrics listener (http.Handle("/metrics",
// ...) in a real program), scraped once.
func Example() {
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
	b.PutRoute(ctx, fleetkv.RouteKey{VPC: "blue", RouteID: "r1"}, fleetkv.Route{CIDR: "10.1.1.0/24"})

	reg := prometheus.NewRegistry()
	metrics := kvwatchprom.NewCollector()
	reg.MustRegister(metrics)

	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"blue"}}, fleetkv.NetworkHandlers{})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Stop()
	if err := metrics.Add(w.Watcher, "routing"); err != nil {
		log.Fatal(err)
	}
	defer metrics.Remove(w.Watcher)
	if err := w.WaitSynced(ctx); err != nil {
		log.Fatal(err)
	}
	rev, _ := b.PutRoute(ctx, fleetkv.RouteKey{VPC: "blue", RouteID: "r2"}, fleetkv.Route{CIDR: "10.1.2.0/24"})
	if err := w.WaitRevision(ctx, rev); err != nil {
		log.Fatal(err)
	}

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		line := sc.Text()
		if strings.HasPrefix(line, "kvwatch_synced") || strings.HasPrefix(line, "kvwatch_events_total{bucket=\"network\",kind=\"Route\"") ||
			strings.HasPrefix(line, "kvwatch_cached_entries{bucket=\"network\",kind=\"Route\"") {
			fmt.Println(line)
		}
	}
	// Output:
	// kvwatch_cached_entries{bucket="network",kind="Route",watcher="routing"} 2
	// kvwatch_events_total{bucket="network",kind="Route",op="delete",watcher="routing"} 0
	// kvwatch_events_total{bucket="network",kind="Route",op="purge",watcher="routing"} 0
	// kvwatch_events_total{bucket="network",kind="Route",op="put",watcher="routing"} 2
	// kvwatch_synced{bucket="network",watcher="routing"} 1
}
