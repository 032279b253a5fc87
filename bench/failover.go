package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
)

// eventClock records when events above a revision arrive.
type eventClock struct {
	mu    sync.Mutex
	after uint64
	first time.Time
}

func (c *eventClock) arm(rev uint64) {
	c.mu.Lock()
	c.after, c.first = rev, time.Time{}
	c.mu.Unlock()
}

func (c *eventClock) saw(rev uint64) {
	c.mu.Lock()
	if rev > c.after && c.first.IsZero() {
		c.first = time.Now()
	}
	c.mu.Unlock()
}

func (c *eventClock) firstAfter() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first, !c.first.IsZero()
}

// runFailover kills the server (SIGKILL) and starts it again on the same
// port and store while a writer keeps writing, and times, for the
// generated watcher and for kv.WatchFiltered, the delay from the kill to
// the first event written after it. Both clients reconnect every 100 ms.
// Then, in a 3-node cluster, the loss of the meta leader's node together
// with the consumer's (runMetaLeaderLoss), and last a connection that goes
// silent without closing (runBlackhole).
func runFailover(ctx context.Context, b *bench) error {
	if err := runServerCrash(ctx, b); err != nil {
		return err
	}
	if err := runMetaLeaderLoss(ctx, b); err != nil {
		return err
	}
	return runBlackhole(ctx, b)
}

// runServerCrash is the single-server part of runFailover.
func runServerCrash(ctx context.Context, b *bench) error {
	rounds := b.pick(3, 1, 1)
	bound := time.Duration(b.pick(60, 40, 3)) * time.Second
	port, err := freePort()
	if err != nil {
		return err
	}
	srv, kv, err := startWithBucket(ctx, port)
	if err != nil {
		return err
	}
	defer srv.stop()
	var typed, plain eventClock
	nc1, js1, err := dial(srv.URL)
	if err != nil {
		return err
	}
	defer nc1.Close()
	w, err := watchSynced(ctx, js1, benchkv.BenchScopes{Prefix: []string{"0"}}, benchkv.BenchHandlers{
		OnItem: func(ev benchkv.ItemEvent) { typed.saw(ev.Revision) },
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	nc2, js2, err := dial(srv.URL)
	if err != nil {
		return err
	}
	defer nc2.Close()
	kv2, err := js2.KeyValue(ctx, "bench")
	if err != nil {
		return err
	}
	fw, err := kv2.WatchFiltered(ctx, []string{"p.0.>"})
	if err != nil {
		return err
	}
	defer fw.Stop()
	go func() {
		for e := range fw.Updates() {
			if e != nil {
				plain.saw(e.Revision())
			}
		}
	}()

	stopWriter := writeEvery(ctx, kv, 20*time.Millisecond)
	defer stopWriter()
	var typedTimes, plainTimes []float64
	for range rounds {
		time.Sleep(500 * time.Millisecond) // both watchers live and current
		last, err := lastSeq(ctx, srv.js)
		if err != nil {
			return err
		}
		typed.arm(last)
		plain.arm(last)
		killed := time.Now()
		if err := srv.crash(); err != nil {
			return err
		}
		deadline := killed.Add(bound)
		for time.Now().Before(deadline) {
			_, t1 := typed.firstAfter()
			_, t2 := plain.firstAfter()
			if t1 && t2 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, c := range []struct {
			clock *eventClock
			times *[]float64
		}{{&typed, &typedTimes}, {&plain, &plainTimes}} {
			took := bound.Seconds() // not recovered within the bound
			if at, ok := c.clock.firstAfter(); ok {
				took = at.Sub(killed).Seconds()
			}
			*c.times = append(*c.times, took)
		}
	}
	for _, f := range []struct {
		name  string
		times []float64
	}{{"failover_seconds_kvwatch", typedTimes}, {"failover_seconds_natsgo", plainTimes}} {
		if m := median(f.times); m >= bound.Seconds() {
			b.reportNote(f.name, m, "s", fmt.Sprintf("no event within the %v bound", bound))
		} else {
			b.report(f.name, m, "s")
		}
	}
	return nil
}

// writeEvery writes a new key of prefix 0 every interval, retrying through
// outages, until stopped.
func writeEvery(ctx context.Context, kv jetstream.KeyValue, interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			wctx, wcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			kv.Put(wctx, fmt.Sprintf("p.0.item.f%d", i), itemValue(i, 0, 200))
			wcancel()
		}
	})
	return func() { cancel(); wg.Wait() }
}

// lastSeq returns the bench stream's last sequence, retrying every 50 ms
// (each attempt bounded to 500 ms) while the client reconnects, until ctx
// ends.
func lastSeq(ctx context.Context, js jetstream.JetStream) (uint64, error) {
	for {
		sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		s, err := js.Stream(sctx, "KV_bench")
		cancel()
		if err == nil {
			return s.CachedInfo().State.LastSeq, nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freePort returns a loopback TCP port nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
