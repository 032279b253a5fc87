package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// The wait for a watcher to recover from a silent connection, by mode.
// The runtime leaves one after about 5 s (missed heartbeats, then a 3 s
// round trip: runtime/kvwatchimpl/silent.go); nats.go only when its own
// pings go unanswered (PingInterval 2 min, MaxPingsOut 2), minutes later,
// so a side past the cap is reported as the cap with a note, not as a
// time.
const (
	blackholeCapFull  = 60 * time.Second
	blackholeCapQuick = 30 * time.Second
	blackholeCapTiny  = 10 * time.Second
)

// blackholeSide starts one watcher of prefix 0 on js that tells clock of
// every event, and returns how to stop it.
type blackholeSide struct {
	name  string
	start func(ctx context.Context, js jetstream.JetStream, clock *eventClock) (stop func(), err error)
}

var blackholeSides = []blackholeSide{
	{"kvwatch", func(ctx context.Context, js jetstream.JetStream, clock *eventClock) (func(), error) {
		w, err := watchSynced(ctx, js, benchkv.BenchScopes{Prefix: []string{"0"}}, benchkv.BenchHandlers{
			OnItem: func(ev benchkv.ItemEvent) { clock.saw(ev.Revision) },
		})
		if err != nil {
			return nil, err
		}
		return w.Stop, nil
	}},
	{"natsgo", func(ctx context.Context, js jetstream.JetStream, clock *eventClock) (func(), error) {
		kv, err := js.KeyValue(ctx, "bench")
		if err != nil {
			return nil, err
		}
		fw, err := kv.WatchFiltered(ctx, []string{"p.0.>"})
		if err != nil {
			return nil, err
		}
		go func() {
			for e := range fw.Updates() {
				if e != nil {
					clock.saw(e.Revision())
				}
			}
		}()
		return func() { fw.Stop() }, nil
	}},
}

// runBlackhole makes a watcher's connection silent both ways while it
// stays up (half-open: a netfault blackhole, never healed), and times,
// for the generated watcher and for kv.WatchFiltered, the delay from the
// silence to the first event written after it. Each round of each side
// has a server of its own, a writer on a direct connection, and a
// watched client whose list of servers is the proxy first, then the
// server itself, with nats.go's default pings. Median of the rounds.
func runBlackhole(ctx context.Context, b *bench) error {
	rounds := b.pick(3, 1, 1)
	limit := blackholeCapFull
	switch {
	case b.tiny:
		limit = blackholeCapTiny
	case b.quick:
		limit = blackholeCapQuick
	}
	for _, side := range blackholeSides {
		var times []float64
		recovered := 0
		for round := range rounds {
			took, ok, err := blackholeOnce(ctx, side, limit)
			if err != nil {
				return fmt.Errorf("blackhole %s round %d: %w", side.name, round+1, err)
			}
			if ok {
				recovered++
				times = append(times, took.Seconds())
			} else {
				times = append(times, limit.Seconds())
			}
		}
		name := "blackhole_recovery_seconds_" + side.name
		switch m := median(times); {
		case m >= limit.Seconds():
			b.reportNote(name, limit.Seconds(), "s", fmt.Sprintf("did not recover within %.0f s (the cap; %d of %d rounds recovered)", limit.Seconds(), recovered, rounds))
		case recovered < rounds:
			b.reportNote(name, m, "s", fmt.Sprintf("median of %d; %d did not recover within %.0f s", rounds, rounds-recovered, limit.Seconds()))
		default:
			b.report(name, m, "s")
		}
	}
	return nil
}

// blackholeOnce runs one round of side: it reports the delay from the
// blackhole to the first event above the stream's last sequence at it,
// and false if none came within limit.
func blackholeOnce(ctx context.Context, side blackholeSide, limit time.Duration) (time.Duration, bool, error) {
	srv, kv, err := startWithBucket(ctx, 0)
	if err != nil {
		return 0, false, err
	}
	defer srv.stop()
	p, err := netfault.New(srv.URL)
	if err != nil {
		return 0, false, err
	}
	// Closed before the watcher stops, so that its stop does not wait on
	// a connection that carries nothing.
	closeProxy := sync.OnceFunc(p.Close)
	defer closeProxy()
	nc, err := nats.Connect(p.URL()+","+srv.URL, nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		return 0, false, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, false, err
	}
	var clock eventClock
	stopWatch, err := side.start(ctx, js, &clock)
	if err != nil {
		return 0, false, err
	}
	defer stopWatch()
	stopWriter := writeEvery(ctx, kv, 20*time.Millisecond)
	defer stopWriter()

	// Events flow through the proxy first.
	last, err := lastSeq(ctx, srv.js)
	if err != nil {
		return 0, false, err
	}
	clock.arm(last)
	if !waitFirst(ctx, &clock, time.Now().Add(10*time.Second)) {
		return 0, false, fmt.Errorf("no event through the proxy within 10 s")
	}
	if got := nc.ConnectedUrl(); got != p.URL() {
		return 0, false, fmt.Errorf("connected to %s, not through the proxy %s", got, p.URL())
	}

	silent := time.Now()
	p.Blackhole()
	// Read after the blackhole: what is above it was written once the
	// connection carried nothing.
	if last, err = lastSeq(ctx, srv.js); err != nil {
		return 0, false, err
	}
	clock.arm(last)
	ok := waitFirst(ctx, &clock, silent.Add(limit))
	at, _ := clock.firstAfter()
	stopWriter()
	closeProxy()
	if !ok {
		return 0, false, ctx.Err()
	}
	return at.Sub(silent), true, nil
}

// waitFirst waits until clock saw an event above its revision, or
// deadline, or ctx ends; it reports whether the event came.
func waitFirst(ctx context.Context, clock *eventClock, deadline time.Time) bool {
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if _, ok := clock.firstAfter(); ok {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	_, ok := clock.firstAfter()
	return ok
}
