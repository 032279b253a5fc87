package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
)

// This file runs the fleet scenario's watchers: it starts them, a few at
// a time, on their servers, writes the rounds at the hub, checks that
// every watcher received each write to its scopes once and in order, and
// gives the delivery latencies' percentiles.

// fleetWatcher is one fleet node: a generated watcher on a connection of
// its own, recording when each live change reaches its handler.
type fleetWatcher struct {
	tenants  []int
	received *atomic.Int64 // every watcher's live changes, for the rounds
	nc       *nats.Conn
	w        *benchkv.BenchWatcher

	mu       sync.Mutex
	arrivals []arrival
	errs     []error
}

// arrival is a live change at a watcher's handler.
type arrival struct {
	rev uint64
	at  time.Time
}

func (fw *fleetWatcher) onItem(ev benchkv.ItemEvent) {
	if ev.Initial {
		return
	}
	at := time.Now()
	fw.mu.Lock()
	fw.arrivals = append(fw.arrivals, arrival{rev: ev.Revision, at: at})
	fw.mu.Unlock()
	fw.received.Add(1)
}

func (fw *fleetWatcher) onError(err error) {
	fw.mu.Lock()
	fw.errs = append(fw.errs, err)
	fw.mu.Unlock()
}

// start connects to url and returns once the watcher is synced.
func (fw *fleetWatcher) start(ctx context.Context, url string, opts ...nats.Option) error {
	nc, js, err := dial(url, opts...)
	if err != nil {
		return err
	}
	scopes := benchkv.BenchScopes{}
	for _, t := range fw.tenants {
		scopes.Prefix = append(scopes.Prefix, strconv.Itoa(t))
	}
	w, err := watchSynced(ctx, js, scopes, benchkv.BenchHandlers{OnItem: fw.onItem, OnError: fw.onError})
	if err != nil {
		nc.Close()
		return err
	}
	fw.nc, fw.w = nc, w
	return nil
}

// fleetWatchers are the watchers of a configuration.
type fleetWatchers struct {
	all      []*fleetWatcher
	received atomic.Int64
}

// startFleetWatchers starts cfg.watchers watchers, fleetStartParallel at a
// time, and returns once every one is synced. Watcher i watches tenants
// 3i, 3i+1, 3i+2 (mod 50) on edge i mod E (on the hub when E = 0). On
// error none is left running.
func startFleetWatchers(ctx context.Context, f *fleet, cfg fleetConfig) (*fleetWatchers, error) {
	ws := &fleetWatchers{}
	for i := range cfg.watchers {
		fw := &fleetWatcher{received: &ws.received}
		for k := range fleetScopesPerWatcher {
			fw.tenants = append(fw.tenants, (fleetScopesPerWatcher*i+k)%fleetTenants)
		}
		ws.all = append(ws.all, fw)
	}
	var opts []nats.Option
	if cfg.isolated {
		opts = append(opts, nats.CustomInboxPrefix(fleetLocalInbox))
	}
	err := forEachParallel(len(ws.all), func(i int) error {
		srv := f.hub
		if cfg.edges > 0 {
			srv = f.edges[i%cfg.edges]
		}
		if err := ws.all[i].start(ctx, srv.URL, opts...); err != nil {
			return fmt.Errorf("watcher %d: %w", i+1, err)
		}
		return nil
	})
	if err != nil {
		ws.stop()
		return nil, err
	}
	return ws, nil
}

// forEachParallel calls fn(0) … fn(n-1), fleetStartParallel at a time,
// and returns the first error; after one, no further call starts.
func forEachParallel(n int, fn func(i int) error) error {
	next := make(chan int)
	var failed atomic.Bool
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range fleetStartParallel {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					failed.Store(true)
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := 0; i < n && !failed.Load(); i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// stop stops every watcher that started and closes its connection.
func (ws *fleetWatchers) stop() {
	forEachParallel(len(ws.all), func(i int) error {
		if fw := ws.all[i]; fw.w != nil {
			fw.w.Stop()
			fw.nc.Close()
		}
		return nil
	})
}

// fleetWrites are the writes of the rounds: when each revision was sent,
// and the revisions written to each tenant, in order.
type fleetWrites struct {
	sentAt   map[uint64]time.Time
	byTenant [][]uint64
}

// writeRounds writes rounds rounds at the hub, on the scenario's own
// connection to it: in each, one key of every tenant, one put after the
// other, each timed just before it is sent; then it waits until every
// watcher has each write to its scopes (3 per watcher a round), for at
// most 60 s, before the next round.
func writeRounds(ctx context.Context, hub *childServer, ws *fleetWatchers, rounds int) (fleetWrites, error) {
	writes := fleetWrites{sentAt: map[uint64]time.Time{}, byTenant: make([][]uint64, fleetTenants)}
	kv, err := hub.js.KeyValue(ctx, fleetBucket)
	if err != nil {
		return writes, err
	}
	perRound := int64(0)
	for _, fw := range ws.all {
		perRound += int64(len(fw.tenants))
	}
	for r := range rounds {
		for t := range fleetTenants {
			id := r % fleetKeysPerTenant
			key := fmt.Sprintf("p.%d.item.%d", t, id)
			sent := time.Now()
			rev, err := kv.Put(ctx, key, itemValue(t*fleetKeysPerTenant+id, r+1, fleetValueSize))
			if err != nil {
				return writes, fmt.Errorf("round %d: put %s: %w", r+1, key, err)
			}
			writes.sentAt[rev] = sent
			writes.byTenant[t] = append(writes.byTenant[t], rev)
		}
		want := perRound * int64(r+1)
		err := waitUntil(ctx, 60*time.Second, fmt.Sprintf("round %d delivered", r+1), func(context.Context) (bool, error) {
			return ws.received.Load() >= want, nil
		})
		if err != nil {
			return writes, fmt.Errorf("%w (%d of %d changes)", err, ws.received.Load(), want)
		}
	}
	return writes, nil
}

// check compares what each watcher received live with what was written
// to its tenants: every revision once, in revision order, and no error
// reported to its OnError. It returns every delivery's latency from the
// put's send to the handler, in ms.
func (ws *fleetWatchers) check(writes fleetWrites) ([]float64, error) {
	var latencies []float64
	var errs []error
	for i, fw := range ws.all {
		var want []uint64
		for _, t := range fw.tenants {
			want = append(want, writes.byTenant[t]...)
		}
		slices.Sort(want)
		fw.mu.Lock()
		got := slices.Clone(fw.arrivals)
		reported := slices.Clone(fw.errs)
		fw.mu.Unlock()
		if err := checkArrivals(want, got); err != nil {
			errs = append(errs, fmt.Errorf("watcher %d (tenants %v): %w", i+1, fw.tenants, err))
		}
		if len(reported) > 0 {
			errs = append(errs, fmt.Errorf("watcher %d: %d errors reported, the first: %w", i+1, len(reported), reported[0]))
		}
		for _, a := range got {
			if sent, ok := writes.sentAt[a.rev]; ok {
				latencies = append(latencies, float64(a.at.Sub(sent))/float64(time.Millisecond))
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%d of %d watchers wrong: %w", len(errs), len(ws.all), errors.Join(errs[:min(len(errs), 5)]...))
	}
	return latencies, nil
}

// checkArrivals says how got differs from want (sorted revisions): missing,
// duplicated, unexpected or out-of-order changes.
func checkArrivals(want []uint64, got []arrival) error {
	seen := map[uint64]int{}
	var outOfOrder, unexpected int
	for i, a := range got {
		seen[a.rev]++
		if i > 0 && a.rev < got[i-1].rev {
			outOfOrder++
		}
		if _, ok := slices.BinarySearch(want, a.rev); !ok {
			unexpected++
		}
	}
	var missing, duplicated int
	for _, rev := range want {
		switch n := seen[rev]; {
		case n == 0:
			missing++
		case n > 1:
			duplicated += n - 1
		}
	}
	if missing+duplicated+unexpected+outOfOrder > 0 {
		return fmt.Errorf("%d missing, %d duplicated, %d unexpected, %d out of order of %d changes", missing, duplicated, unexpected, outOfOrder, len(want))
	}
	return nil
}

// percentile is the nearest-rank p-th percentile (0 < p <= 1) of xs, which
// it sorts; NaN for none.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return xs[max(int(math.Ceil(p*float64(len(xs))))-1, 0)]
}
