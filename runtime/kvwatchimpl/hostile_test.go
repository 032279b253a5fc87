package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// 1,000 random byte strings as values and random keys inside the scope:
// every value is reported with its key and revision, and so are the first
// kvwatch.MaxUnknownKeysReported keys and one more (each key is written
// once), the others counted; the valid writes between them all arrive.
func TestHostileData(t *testing.T) {
	js, kv := setup(t)
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r)
	waitSynced(t, w)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	// Bytes a subject token may hold: anything but separators, wildcards
	// and whitespace; most are outside the key charset.
	tokenByte := func() byte {
		for {
			b := byte(rng.IntN(255) + 1)
			if b > ' ' && b != '.' && b != '*' && b != '>' && b < 0x7f {
				return b
			}
		}
	}
	hostile := map[uint64]string{} // revision -> key
	var unknownKeys []uint64       // revisions of the unknown keys, in order
	var valid []string
	for i := range 1000 {
		var key string
		var value []byte
		if i%2 == 0 {
			// A route with a random value: almost never valid JSON.
			key = fmt.Sprintf("vpc.a.route.h%d", i)
			value = make([]byte, rng.IntN(64))
			for j := range value {
				value[j] = byte(rng.IntN(256))
			}
			if len(value) > 0 && value[0] == '{' {
				value[0] = '['
			}
		} else {
			// A random key in scope, matching no template.
			tok := make([]byte, 1+rng.IntN(12))
			for j := range tok {
				tok[j] = tokenByte()
			}
			key = fmt.Sprintf("vpc.a.%s.x%d", tok, i)
			value = []byte(`{}`)
		}
		ack, err := js.Publish(ctx, "$KV.network."+key, value)
		if err != nil {
			t.Fatalf("publish %q: %v", key, err)
		}
		hostile[ack.Sequence] = key
		if i%2 != 0 {
			unknownKeys = append(unknownKeys, ack.Sequence)
		}
		if i%10 == 0 {
			good := fmt.Sprintf("vpc.a.route.good%d", i)
			put(t, kv, good, route{CIDR: "ok"})
			valid = append(valid, good)
		}
	}
	last := put(t, kv, "vpc.a", vpcConfig{Name: "after"})
	waitRevision(t, w, last)

	events, errs := r.snapshot()
	reported := map[uint64]string{}
	lastReport := map[uint64]bool{} // an unknown key reported with Last
	for _, err := range errs {
		var de *kvwatch.DataError
		var ue *kvwatch.UnknownKeyError
		switch {
		case errors.As(err, &de):
			reported[de.Revision] = de.Key
		case errors.As(err, &ue):
			reported[ue.Revision] = ue.Key
			lastReport[ue.Revision] = ue.Last
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	counted := map[uint64]bool{} // unknown keys past the last reported
	for i, rev := range unknownKeys {
		counted[rev] = i > kvwatch.MaxUnknownKeysReported
		if lastReport[rev] != (i == kvwatch.MaxUnknownKeysReported) {
			t.Errorf("unknown key %d at revision %d: Last is %v", i, rev, lastReport[rev])
		}
	}
	for rev, key := range hostile {
		want := key
		if counted[rev] {
			want = "" // counted, not reported
		}
		if reported[rev] != want {
			t.Errorf("hostile entry %q at revision %d: reported as %q, want %q", key, rev, reported[rev], want)
		}
	}
	for _, key := range valid {
		if !hasKey(events, key, kvwatch.OpPut) {
			t.Errorf("valid write %s not delivered", key)
		}
	}
	if s := w.Stats(); s.DataErrors+s.UnknownKeys != 1000 || s.Puts != uint64(len(valid))+1 {
		t.Errorf("stats = %+v, want 1000 skipped and %d puts", s, len(valid)+1)
	}
}

// A handler far slower than the writer loses nothing: the consumer stops
// pulling (the backlog waits on the server: the server's consumer info
// and Stats().Pending both show it) and every change arrives, in order,
// once the handler catches up.
func TestSlowHandlerBackpressure(t *testing.T) {
	js, _ := setup(t)
	var slow atomic.Bool
	slow.Store(true)
	var mu sync.Mutex
	var revs []uint64
	routes := kvwatchimpl.Bind(&routeKind, func(ev kvwatch.Event[routeKey, route]) {
		if slow.Load() {
			time.Sleep(2 * time.Millisecond)
		}
		mu.Lock()
		revs = append(revs, ev.Revision)
		mu.Unlock()
	})
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{routes, kvwatchimpl.Bind(&vpcKind, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitSynced(t, w)

	// More updates than the consumer's pull holds (1,000), so that a
	// backlog forms on the server, published as fast as the server takes
	// them: the handler is far more than 100x slower.
	const n = 3000
	futures := make([]jetstream.PubAckFuture, n)
	for i := range n {
		f, err := js.PublishAsync(fmt.Sprintf("$KV.network.vpc.a.route.r%d", i), []byte(`{"cidr":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		futures[i] = f
	}
	written := make([]uint64, n)
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			written[i] = ack.Sequence
		case err := <-f.Err():
			t.Fatal(err)
		}
	}
	// The backlog is on the server, not in the client: what the server
	// delivered and the handler has not handled yet is at most what the
	// tail's feed buffers (one pull, 1,000 messages, and the next pull it
	// asks for once half of one is taken: 500), the handler's queue and the
	// event being handled. Handled is read after the server's count, so
	// it can only make the difference smaller.
	var serverPending uint64
	var handled int
	kvwatchtest.Eventually(t, 5*time.Second, "the server's consumer reporting its backlog", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		stream, err := js.Stream(ctx, "KV_network")
		if err != nil {
			return false
		}
		var infos []*jetstream.ConsumerInfo
		for info := range stream.ListConsumers(ctx).Info() {
			infos = append(infos, info)
		}
		if len(infos) != 1 {
			return false
		}
		serverPending = infos[0].NumPending
		mu.Lock()
		handled = len(revs)
		mu.Unlock()
		return true
	})
	if buffered, most := n-int(serverPending)-handled, 1500+kvwatchimpl.MaxQueued+1; buffered > most {
		t.Fatalf("%d updates delivered and not handled (server pending %d, handled %d of %d), want %d at most", buffered, serverPending, handled, n, most)
	}
	if serverPending == 0 {
		t.Fatalf("the slow handler handled %d of %d and nothing is pending on the server: no backlog to speak of", handled, n)
	}
	// Pending is the server's backlog as the last handled message saw it:
	// it shows once the consumer pulls again, after half its buffer.
	kvwatchtest.Eventually(t, 10*time.Second, "a backlog on the server in Stats", func() bool {
		return w.Stats().Pending > 0
	})
	slow.Store(false)
	waitRevision(t, w, written[n-1])
	mu.Lock()
	defer mu.Unlock()
	if len(revs) != n {
		t.Fatalf("%d events, want %d", len(revs), n)
	}
	for i, r := range revs {
		if r != written[i] {
			t.Fatalf("event %d has revision %d, want %d: lost or out of order", i, r, written[i])
		}
	}
	if p := w.Stats().Pending; p != 0 {
		t.Errorf("Pending = %d after catching up", p)
	}
}
