package kvwatchimpl_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// BenchmarkStateRead reads the state of scopes holding a share of a
// bucket of 100 VPCs of 1,000 routes, fresh and with half of every VPC
// overwritten once, by direct get and by the consumer on the whole bucket
// (readpath.go), server and client in one process: the time per entry in
// scope to OnSynced (ns/entry), from which consumerShare is chosen
// (BENCHMARKS.md, Design decisions: "readpath.go: the consumer when the
// scopes hold most of the bucket").
//
//	go test ./runtime/kvwatchimpl -run XXX -bench StateRead -benchtime 5x
func BenchmarkStateRead(b *testing.B) {
	const vpcCount, perVPC = 100, 1000
	s := kvwatchtest.Server(b)
	_, js := kvwatchtest.Connect(b, s)
	kvwatchtest.Bucket(b, js, "network")
	write := func(half bool) {
		for v := range vpcCount {
			for i := range perVPC {
				if half && i%2 == 0 {
					continue
				}
				data := fmt.Sprintf(`{"cidr":"10.%d.%d.0/24","next_hop":"h%d"}`, v, i%256, i)
				if _, err := js.PublishAsync(fmt.Sprintf("$KV.network.vpc.v%02d.route.r%04d", v, i), []byte(data)); err != nil {
					b.Fatal(err)
				}
			}
		}
		<-js.PublishAsyncComplete()
	}
	write(false)
	for _, state := range []string{"fresh", "churned"} {
		if state == "churned" {
			write(true)
		}
		for _, share := range []int{25, 50, 60, 70, 80, 100} {
			names := make([]string, share*vpcCount/100)
			for i := range names {
				names[i] = fmt.Sprintf("v%02d", i)
			}
			for _, path := range []string{"direct-get", "consumer"} {
				b.Run(fmt.Sprintf("%s/share=%d/%s", state, share, path), func(b *testing.B) {
					for b.Loop() {
						readState(b, js, vpcs(names...), path, len(names)*perVPC)
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(names)*perVPC), "ns/entry")
				})
			}
		}
	}
}

// readState starts a watcher of scopes that reads its state by path,
// waits for OnSynced and checks it has want routes, then stops it.
func readState(b *testing.B, js jetstream.JetStream, scopes kvwatchimpl.Scopes, path string, want int) {
	synced := make(chan struct{})
	routes := kvwatchimpl.Bind(&routeKind, func(kvwatch.Event[routeKey, route]) {})
	w, err := kvwatchimpl.Start(context.Background(), js, &network, scopes, []kvwatchimpl.AnyBinding{routes, kvwatchimpl.Bind(&vpcKind, nil)},
		kvwatchimpl.OnSynced(func() { close(synced) }), kvwatchimpl.WithReadPath(path))
	if err != nil {
		b.Fatal(err)
	}
	<-synced
	if n := routes.Cache().Len(); n != want || w.Stats().InitialState != path {
		b.Fatalf("read %d routes by %s, want %d by %s", n, w.Stats().InitialState, want, path)
	}
	w.Stop()
}
