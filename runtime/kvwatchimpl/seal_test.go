package kvwatchimpl_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// latencyProxy forwards TCP connections to target, delaying every chunk
// by delay in each direction (bandwidth is not limited): a client a few
// tens of milliseconds away from its server.
func latencyProxy(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	type chunk struct {
		at   time.Time
		data []byte
	}
	pipe := func(dst, src net.Conn) {
		ch := make(chan chunk, 4096)
		go func() {
			defer close(ch)
			for {
				buf := make([]byte, 64<<10)
				n, err := src.Read(buf)
				if n > 0 {
					ch <- chunk{time.Now().Add(delay), buf[:n]}
				}
				if err != nil {
					return
				}
			}
		}()
		for c := range ch {
			time.Sleep(time.Until(c.at))
			if _, err := dst.Write(c.data); err != nil {
				break
			}
		}
		for range ch {
		}
		dst.Close()
		src.Close()
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			conns.Add(2)
			go func() { defer conns.Done(); pipe(s, c) }()
			go func() { defer conns.Done(); pipe(c, s) }()
		}
	}()
	return ln.Addr().String()
}

// A watcher 25 ms (one way) from its server, whose scope has more than
// 1,024 keys (a read in several requests, completed by a seal), on a
// bucket other tenants write to steadily: ~20k messages a 50 ms round
// trip under the seal's subject (vpc.>, covering the watcher's two
// filters), more than the seal's 1,000 an answer. An unbounded seal never
// ended (the watcher never synced); after maxSealRounds answers a seal
// stops, and after maxSealAttempts of them the tail, filtered on the
// watcher's scope, finishes the catch-up (exact only eventually: the
// documented limit).
func TestScanOutpacedByOtherTenantsWrites(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kvwatchtest.Bucket(t, js, "network")
	for i := range 3000 {
		if _, err := js.PublishAsync(fmt.Sprintf("$KV.network.vpc.a.route.r%d", i), []byte(`{"cidr":"a"}`)); err != nil {
			t.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var written atomic.Int64
	wg.Go(func() {
		// Other tenants: 50k writes/s over 100,000 keys of vpc b.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		i := 0
		for ctx.Err() == nil {
			for range 500 {
				if _, err := js.PublishAsync(fmt.Sprintf("$KV.network.vpc.b.route.r%d", i%100000), []byte(`{"cidr":"b"}`)); err != nil {
					return
				}
				i++
			}
			written.Store(int64(i))
			select {
			case <-tick.C:
			case <-ctx.Done():
			}
		}
	})
	kvwatchtest.Eventually(t, 20*time.Second, "the other tenants writing", func() bool { return written.Load() > 5000 })

	addr := latencyProxy(t, s.Addr().String(), 25*time.Millisecond)
	_, jsFar := connectURLs(t, "nats://"+addr)
	r := newRecorder()
	_, _, bindings := networkBindings(r)
	start := time.Now()
	w, err := kvwatchimpl.Start(context.Background(), jsFar, &network, vpcs("a"), bindings, r.options()...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(w.Stop)
	// Synced at all is the point (an unbounded seal never ends): 20 s
	// leaves room for -race and a loaded machine (~2 s here without).
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	if err := w.WaitSynced(wctx); err != nil {
		t.Fatalf("not synced after %v (%d other-tenant writes meanwhile): %v; stats %+v",
			time.Since(start).Round(time.Millisecond), written.Load(), err, w.Stats())
	}
	t.Logf("synced after %v (%d written); stats %+v", time.Since(start).Round(time.Millisecond), written.Load(), w.Stats())
}
