package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
)

// modifyWriters are the numbers of concurrent modifiers of the one key.
var modifyWriters = []int{1, 4, 16}

// modifyAttempts bounds each ModifyItem: far more than any run needs
// (past the 7th retry the runtime waits 50–100 ms a retry), so that no
// modification gives up; one that does is counted (modify_gave_up) and
// tried again.
const modifyAttempts = 1000

// runModify measures the generated client's ModifyItem (read, apply,
// compare-and-set by revision, on a conflict re-read and retry with
// jittered backoff: kvwatch.Modify) with W = 1, 4 and 16 concurrent
// modifiers of ONE key, all incrementing its Version field (Item's int64:
// the counter).
//
// Each modifier is its own goroutine with its own NATS connection, as
// modifiers in different processes are: they share no connection's
// write buffer or reply subscription, and conflict only at the server.
//
// Each run makes a fixed number of successful modifications, split evenly
// among the modifiers (total/W each), rather than running for a fixed
// time: the expected final counter is then known in advance (the key is
// created at 0 before the run), independently of the bench's own
// counting, every run puts the same number of updates through the key,
// and no modification is cut off mid-flight by a deadline (a Modify
// cancelled between its write and its reply would leave the count
// ambiguous). The cost is a tail: a modifier that backed off more
// finishes later, with fewer rivals; the text output gives the first and
// last modifier's finish to show it. Rates are timed from a common start
// (every connection open, the key created) until the last modifier is
// done.
//
// Conflicts are counted by wrapping the modify function: each call is one
// read of the key, and calls minus successful modifications are the
// retries that conflicts caused. At the end the key is read back: the
// expected counter minus the one read, summed over every run, is
// modify_lost_updates, which must be 0 (the scenario fails otherwise);
// the revisions the successful ModifyItem calls returned must moreover be
// all distinct (one write each).
func runModify(ctx context.Context, b *bench) error {
	total := b.pick(20_000, 3000, 160)
	rounds := b.pick(3, 1, 1)
	srv, _, err := startWithBucket(ctx, 0)
	if err != nil {
		return err
	}
	defer srv.stop()
	b.say("  %d successful modifications of one key per run, split among W modifiers (own connection each); median of %d run(s)", total, rounds)
	var lost, gaveUp int64
	for _, w := range modifyWriters {
		var rates, ratios []float64
		for round := range rounds {
			key := benchkv.ItemKey{P: "modify", ID: fmt.Sprintf("w%d-r%d", w, round)}
			r, err := modifyRun(ctx, srv, key, w, total/w)
			if err != nil {
				return fmt.Errorf("W=%d: %w", w, err)
			}
			lost += r.lost
			gaveUp += r.gaveUp
			rates = append(rates, float64(r.updates)/r.elapsed.Seconds())
			ratios = append(ratios, float64(r.calls-r.updates)/float64(r.updates))
			b.say("  W=%d run %d: %d updates in %.2fs, %d calls of the function, modifiers done from %.2fs to %.2fs",
				w, round+1, r.updates, r.elapsed.Seconds(), r.calls, r.firstDone.Seconds(), r.elapsed.Seconds())
		}
		b.report(fmt.Sprintf("modify_updates_per_second_w%d", w), median(rates), "updates/s")
		b.report(fmt.Sprintf("modify_conflicts_per_update_w%d", w), median(ratios), "ratio")
	}
	b.report("modify_gave_up", float64(gaveUp), "modifications")
	b.report("modify_lost_updates", float64(lost), "updates")
	if lost != 0 {
		return fmt.Errorf("%d updates lost (expected counter minus the one read back, over all runs)", lost)
	}
	return nil
}

// modifyResult is what one run measured.
type modifyResult struct {
	updates   int64 // successful modifications
	calls     int64 // calls of the modify function
	gaveUp    int64 // ModifyItem calls that ended in kvwatch.ErrConflicts
	lost      int64 // expected final counter minus the one read back
	elapsed   time.Duration
	firstDone time.Duration // when the first modifier finished
}

// modifyRun creates key at counter 0, then has w modifiers, each on its
// own connection, increment its counter perWriter times each with
// ModifyItem, and reads it back.
func modifyRun(ctx context.Context, srv *childServer, key benchkv.ItemKey, w, perWriter int) (modifyResult, error) {
	setup, err := benchkv.OpenBenchBucket(ctx, srv.js)
	if err != nil {
		return modifyResult{}, err
	}
	if _, err := setup.CreateItem(ctx, key, benchkv.Item{Name: key.String()}); err != nil {
		return modifyResult{}, err
	}
	buckets := make([]*benchkv.BenchBucket, w)
	for i := range buckets {
		nc, js, err := dial(srv.URL)
		if err != nil {
			return modifyResult{}, err
		}
		defer nc.Close()
		if buckets[i], err = benchkv.OpenBenchBucket(ctx, js); err != nil {
			return modifyResult{}, err
		}
	}

	type writerResult struct {
		calls, gaveUp int64
		revisions     []uint64
		done          time.Duration
		err           error
	}
	results := make([]writerResult, w)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	startGate := make(chan struct{})
	var wg sync.WaitGroup
	var start time.Time
	for i, bucket := range buckets {
		wg.Go(func() {
			r := &results[i]
			r.revisions = make([]uint64, 0, perWriter)
			// ModifyItem calls fn on this goroutine: a plain counter does.
			fn := func(v *benchkv.Item) error {
				r.calls++
				v.Version++
				return nil
			}
			<-startGate
			for len(r.revisions) < perWriter {
				rev, err := bucket.ModifyItem(ctx, key, fn, kvclient.MaxAttempts(modifyAttempts))
				if errors.Is(err, kvclient.ErrConflicts) {
					r.gaveUp++
					continue
				}
				if err != nil {
					r.err = err
					cancel() // the others stop too
					return
				}
				r.revisions = append(r.revisions, rev)
			}
			r.done = time.Since(start)
		})
	}
	start = time.Now()
	close(startGate)
	wg.Wait()
	elapsed := time.Since(start)

	res := modifyResult{updates: int64(w * perWriter), elapsed: elapsed, firstDone: elapsed}
	seen := make(map[uint64]bool, w*perWriter)
	for _, r := range results {
		if r.err != nil {
			return modifyResult{}, r.err
		}
		res.calls += r.calls
		res.gaveUp += r.gaveUp
		res.firstDone = min(res.firstDone, r.done)
		for _, rev := range r.revisions {
			if seen[rev] {
				return modifyResult{}, fmt.Errorf("revision %d returned to two successful modifications", rev)
			}
			seen[rev] = true
		}
	}
	item, err := setup.GetItem(ctx, key)
	if err != nil {
		return modifyResult{}, err
	}
	res.lost = res.updates - item.Value.Version
	return res, nil
}
