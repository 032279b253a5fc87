package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// unanswered is a JetStream client whose consumer creations go
// unanswered (time out) while blocked is set, as during the election of
// a new meta leader.
type unanswered struct {
	jetstream.JetStream
	blocked  atomic.Bool
	attempts atomic.Int64
}

func (u *unanswered) CreateOrUpdateConsumer(ctx context.Context, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	if u.blocked.Load() {
		u.attempts.Add(1)
		<-ctx.Done()
		return nil, fmt.Errorf("injected: no answer: %w", ctx.Err())
	}
	return u.JetStream.CreateOrUpdateConsumer(ctx, stream, cfg)
}

// While no consumer can be created (after the loss of the meta leader
// with the consumer's node, no creation is answered until another is
// elected: seconds after a crash), the watcher goes on delivering what is
// written, read by direct get from the stream's replicas, in order; once
// a consumer can be created again, it takes over from there, with nothing
// lost or repeated.
func TestEventsFlowWhileNoConsumerCanBeCreated(t *testing.T) {
	js, kv := setup(t)
	u := &unanswered{JetStream: js}
	w, log := startLogged(t, u)
	name := w.Stats().Consumer
	u.blocked.Store(true)
	// The consumer is gone (deleted here, as by a lost server): the
	// watcher must replace it, and cannot.
	if err := js.DeleteConsumer(context.Background(), "KV_network", name); err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "creation attempts", func() bool { return u.attempts.Load() > 0 })
	var written []string
	for i := range 20 {
		key := fmt.Sprintf("vpc.a.route.b%d", i)
		put(t, kv, key, route{CIDR: "bridged"})
		written = append(written, key)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the writes delivered without a consumer", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.revs[written[len(written)-1]]) == 1
	})
	if c := w.Stats().Consumer; c != "" {
		t.Fatalf("a consumer (%s) exists: the test did not keep creation from working", c)
	}
	if kvwatchtest.Consumers(t, js, "network") != 0 {
		t.Fatal("a consumer is on the stream")
	}
	u.blocked.Store(false)
	kvwatchtest.Eventually(t, 10*time.Second, "a consumer again", func() bool { return w.Stats().Consumer != "" })
	for i := range 30 {
		key := fmt.Sprintf("vpc.a.route.c%d", i)
		put(t, kv, key, route{CIDR: "consumed"})
		written = append(written, key)
	}
	last := put(t, kv, "vpc.a.route.last", route{CIDR: "last"})
	waitRevision(t, w, last)
	log.check(t, kv, append(written, "vpc.a.route.last"))
	if n := kvwatchtest.Consumers(t, js, "network"); n != 1 {
		t.Errorf("%d consumers on the stream, want 1", n)
	}
	if err := w.Err(); err != nil && !errors.Is(err, kvwatch.ErrStopped) {
		t.Errorf("the watch ended: %v", err)
	}
}
