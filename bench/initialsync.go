package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
)

// syncReaders are the ways to read the initial state of 100 scopes.
var syncReaders = []string{"kvwatch", "watchfiltered", "watchall"}

// cachedReader is kv.WatchFiltered keeping the decoded values in a map by
// key, as a hand-written watcher with a cache would: measured on the fresh
// bucket only (after churn kv.WatchFiltered's own delivery is what
// counts), to compare like with like.
const cachedReader = "watchfiltered-cached"

// runInitialSync loads 100k keys over 100 prefixes, then measures how fast
// each reader gets the initial state of all 100 prefixes, values decoded
// into the same struct: the generated watcher, nats.go's kv.WatchFiltered
// over the 100 prefixes, and kv.WatchAll (the whole bucket, for
// reference). Then it overwrites half of the keys once (interior deletes
// in the file store, which slow a multi-filter consumer's own initial
// delivery) and measures again ("churned"), and once more while keys are
// overwritten at liveWritesPerSecond ("live": a fleet's bucket is written
// while a node restarts). Each reader is bounded in time; one that does
// not finish reports its rate so far.
func runInitialSync(ctx context.Context, b *bench) error {
	prefixes, perPrefix := 100, b.pick(1000, 500, 20)
	bound := time.Duration(b.pick(60, 15, 10)) * time.Second
	srv, kv, err := startWithBucket(ctx, 0)
	if err != nil {
		return err
	}
	defer srv.stop()
	total := prefixes * perPrefix
	if _, err := srv.load(ctx, loadRequest{Bucket: "bench", Prefixes: prefixes, PerPrefix: perPrefix, Count: total, ValueSize: 200}); err != nil {
		return err
	}
	b.say("  %d keys over %d prefixes", total, prefixes)
	var bars []barGroup
	rates := map[string]float64{} // by reader and state: "kvwatch fresh"
	for _, state := range []string{"fresh", "churned", "live"} {
		if state == "churned" {
			// Rewrite ids 0..perPrefix/2-1 of every prefix: half the keys.
			half := perPrefix / 2
			if _, err := srv.load(ctx, loadRequest{Bucket: "bench", Prefixes: prefixes, PerPrefix: half, Count: prefixes * half, ValueSize: 200, Version: 1}); err != nil {
				return err
			}
			b.say("  overwrote %d keys once (50%%)", prefixes*half)
		}
		// Rounds, each reader's median: the first read after a bulk load
		// pays for the server settling (each round's rate is in the
		// figure's note), so the readers take turns in an order that
		// rotates every round, each first of one.
		// After churn kv.WatchFiltered is slow and its ratios are orders
		// of magnitude (BENCHMARKS.md): it reads once.
		// As many rounds in every state: a read takes about a second, and
		// with fewer the medians of two readers that tie after churn
		// moved from run to run more than they differ (BENCHMARKS.md).
		readers, rounds := syncReaders, b.pick(5, 3, 1)
		if state == "fresh" {
			readers = append(slices.Clone(readers), cachedReader)
		}
		results := make([]syncResults, len(readers))
		for round := range rounds {
			first := true
			for k := range readers {
				i := (k + round) % len(readers)
				name := readers[i]
				if state != "fresh" && name == "watchfiltered" && round > 0 {
					continue
				}
				if first {
					results[i].first, first = len(results[i].rates)+1, false
				}
				if err := results[i].run(ctx, srv, kv, name, state, prefixes, perPrefix, bound); err != nil {
					return fmt.Errorf("%s %s: %w", name, state, err)
				}
			}
		}
		group := barGroup{label: state}
		for i, name := range readers {
			rate := results[i].report(b, name, state, bound)
			rates[name+" "+state] = rate
			group.bars = append(group.bars, bar{series: name, value: rate})
		}
		bars = append(bars, group)
	}
	// The generated watcher against the bare path that delivers the same
	// state fastest in each: a multi-filter consumer's own delivery on a
	// fresh bucket, a whole-bucket one after churn.
	for _, r := range []struct{ reader, state string }{{"watchfiltered", "fresh"}, {"watchall", "churned"}, {"watchall", "live"}} {
		if other := rates[r.reader+" "+r.state]; other > 0 {
			b.report(fmt.Sprintf("initial_sync_ratio_vs_%s_%s", r.reader, r.state), rates["kvwatch "+r.state]/other, "x")
		}
	}
	if b.charts != "" {
		return writeChart(b.charts, "initial-sync.svg", barChart{
			title:  fmt.Sprintf("initial sync of 100 scopes (%d keys), entries/s, log scale", total),
			yLabel: "entries per second", groups: bars,
			names: map[string]string{"kvwatch": "kvwatchgen watcher", "watchfiltered": "nats.go kv.WatchFiltered (100 prefixes)", "watchall": "nats.go kv.WatchAll (whole bucket)",
				cachedReader: "kv.WatchFiltered + a map of the values"},
		})
	}
	return nil
}

// liveWritesPerSecond is the rate keys are overwritten at in the "live"
// state.
const liveWritesPerSecond = 2000

// syncResults are one reader's reads of one state, round after round.
type syncResults struct {
	rates []float64
	// clientCPU and serverCPU are the CPU time each process used per
	// entry read, in µs (0 where /proc is not available).
	clientCPU, serverCPU []float64
	entries              int
	path                 string
	timedOut             bool
	// first is the reader's read (from 1) that came first in its round
	// (the last such one), 0 for none.
	first int
}

// run reads the state once more with reader name.
func (r *syncResults) run(ctx context.Context, srv *childServer, kv jetstream.KeyValue, name, state string, prefixes, perPrefix int, bound time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	stopWrites := func() error { return nil }
	if state == "live" {
		stopWrites = overwrite(rctx, srv.js, prefixes, perPrefix)
	}
	client, server := cpuTime(os.Getpid()), cpuTime(srv.cmd.Process.Pid)
	entries, elapsed, path, err := syncOnce(rctx, srv, kv, name, prefixes)
	clientUsed, serverUsed := cpuTime(os.Getpid())-client, cpuTime(srv.cmd.Process.Pid)-server
	if werr := stopWrites(); err == nil && werr != nil {
		err = fmt.Errorf("overwriting keys: %w", werr)
	}
	switch {
	case errors.Is(err, errTimeout):
		r.timedOut = true
	case err != nil:
		return err
	}
	r.rates = append(r.rates, float64(entries)/elapsed.Seconds())
	if entries > 0 {
		r.clientCPU = append(r.clientCPU, float64(clientUsed.Microseconds())/float64(entries))
		r.serverCPU = append(r.serverCPU, float64(serverUsed.Microseconds())/float64(entries))
	}
	r.entries, r.path = entries, path
	return nil
}

// report adds the reader's figures: its median rate (returned), and on
// the fresh bucket the CPU each side spent per entry.
func (r *syncResults) report(b *bench, name, state string, bound time.Duration) float64 {
	rounds := len(r.rates)
	var each []string
	for _, rate := range r.rates {
		each = append(each, fmt.Sprintf("%.0f", rate))
	}
	rate := median(r.rates)
	var notes []string
	if rounds > 1 {
		note := fmt.Sprintf("median of %d rounds (%s", rounds, strings.Join(each, ", "))
		if r.first > 0 {
			note += fmt.Sprintf("; read %d came first in its round", r.first)
		}
		notes = append(notes, note+")")
	}
	switch {
	case r.timedOut:
		notes = append(notes, fmt.Sprintf("did not finish in %v: %d entries", bound, r.entries))
	case r.path != "":
		notes = append(notes, "initial state read by "+r.path)
	}
	b.reportNote(fmt.Sprintf("initial_sync_rate_%s_%s", name, state), rate, "entries/s", strings.Join(notes, "; "))
	if state == "fresh" && median(r.clientCPU) > 0 {
		b.report(fmt.Sprintf("initial_sync_client_cpu_%s_%s", name, state), median(r.clientCPU), "us/entry")
		b.report(fmt.Sprintf("initial_sync_server_cpu_%s_%s", name, state), median(r.serverCPU), "us/entry")
	}
	return rate
}

// overwrite starts overwriting keys of the first prefixes at up to
// liveWritesPerSecond, one key after another across the prefixes, until
// the function it returns is called (which reports a failed write) or ctx
// ends.
func overwrite(ctx context.Context, js jetstream.JetStream, prefixes, perPrefix int) func() error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(time.Second / 100)
		defer tick.Stop()
		for i := 0; ; {
			select {
			case <-ctx.Done():
				done <- nil
				return
			case <-tick.C:
			}
			for range liveWritesPerSecond / 100 {
				subject := fmt.Sprintf("$KV.bench.p.%d.item.%d", i%prefixes, (i/prefixes)%perPrefix)
				// One write at a time: a server busy serving the reader
				// slows the writer down rather than piling writes up.
				if _, err := js.Publish(ctx, subject, itemValue(i, 2, 200)); err != nil {
					if ctx.Err() != nil {
						err = nil
					}
					done <- err
					return
				}
				i++
			}
		}
	}()
	return func() error {
		cancel()
		return <-done
	}
}

// syncOnce reads the initial state of the first `prefixes` prefixes with
// reader name and returns how many entries it got and in how long; path
// is how the generated watcher read it.
func syncOnce(ctx context.Context, srv *childServer, kv jetstream.KeyValue, name string, prefixes int) (entries int, elapsed time.Duration, path string, err error) {
	start := time.Now()
	switch name {
	case "kvwatch":
		// Until OnSynced, which runs after the handler had every initial
		// event (WaitSynced may return before: the handler runs on a
		// goroutine of its own), as the other readers' loops decode every
		// entry before their marker.
		var count int
		synced := make(chan struct{})
		w, err := benchkv.WatchBench(ctx, srv.js, benchkv.BenchScopes{Prefix: prefixNames(prefixes)}, benchkv.BenchHandlers{
			OnItem:   func(benchkv.ItemEvent) { count++ },
			OnSynced: func() { close(synced) },
		})
		if err != nil {
			return 0, 0, "", err
		}
		defer w.Stop()
		select {
		case <-synced:
		case <-ctx.Done():
			return w.ItemCache().Len(), time.Since(start), "", timeoutOr(ctx.Err())
		}
		return count, time.Since(start), w.Stats().InitialState, nil
	case "watchfiltered", cachedReader:
		w, err := kv.WatchFiltered(ctx, prefixFilters(prefixes))
		if err != nil {
			return 0, 0, "", err
		}
		defer w.Stop()
		var keep map[string]benchkv.Item
		if name == cachedReader {
			keep = map[string]benchkv.Item{}
		}
		n, err := drainInitial(ctx, w, keep)
		return n, time.Since(start), "", err
	default:
		w, err := kv.WatchAll(ctx)
		if err != nil {
			return 0, 0, "", err
		}
		defer w.Stop()
		n, err := drainInitial(ctx, w, nil)
		return n, time.Since(start), "", err
	}
}

// drainInitial reads a nats.go watcher's updates until its "initial values
// done" marker (nil), decoding each value into the same struct the
// generated watcher decodes into (a hand-written watcher needs the values
// too), and counts them; with keep non-nil, it also keeps each value there
// by key.
func drainInitial(ctx context.Context, w jetstream.KeyWatcher, keep map[string]benchkv.Item) (int, error) {
	n := 0
	for {
		select {
		case e := <-w.Updates():
			if e == nil {
				return n, nil
			}
			var item benchkv.Item
			if err := json.Unmarshal(e.Value(), &item); err != nil {
				return n, err
			}
			if keep != nil {
				keep[e.Key()] = item
			}
			n++
		case <-ctx.Done():
			return n, timeoutOr(ctx.Err())
		}
	}
}

// timeoutOr turns a deadline into errTimeout.
func timeoutOr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errTimeout
	}
	return err
}
