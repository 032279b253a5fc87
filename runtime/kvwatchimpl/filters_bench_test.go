package kvwatchimpl_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// BenchmarkCreateConsumerFilters measures what the server charges to
// create one consumer with F disjoint subject filters, the cost behind
// the watcher's warning above 1,000 filters and WithMaxFilters (ns/op is
// one creation; it grows with F², the server checking every pair):
//
//	go test ./runtime/kvwatchimpl -run XXX -bench CreateConsumerFilters -benchtime 1x
func BenchmarkCreateConsumerFilters(b *testing.B) {
	js := kvwatchtest.JetStream(b)
	kvwatchtest.Bucket(b, js, "network")
	for _, f := range []int{1000, 5000, 8000} {
		filters := make([]string, f)
		for i := range filters {
			filters[i] = fmt.Sprintf("$KV.network.vpc.v%d.>", i)
		}
		b.Run(fmt.Sprintf("F=%d", f), func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				cons, err := js.CreateConsumer(ctx, "KV_network", jetstream.ConsumerConfig{
					FilterSubjects: filters,
					AckPolicy:      jetstream.AckNonePolicy,
					MemoryStorage:  true,
				})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := js.DeleteConsumer(ctx, "KV_network", cons.CachedInfo().Name); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
