package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// runCheckpointFile measures a restart: the time from starting a watcher
// of 100 scopes over 100k keys to its being synced, from a checkpoint file
// (kvwatch.WithCheckpointFile: the file read, then the delta) and by a
// full read. Between the stop and the restart 1% of the keys are
// overwritten, as a fleet's bucket changes while a node restarts; each
// round restarts both ways once, and the figures are medians.
func runCheckpointFile(ctx context.Context, b *bench) error {
	prefixes, perPrefix, rounds := 100, b.pick(1000, 200, 20), b.pick(5, 3, 1)
	total := prefixes * perPrefix
	churn := max(total/100, 1)
	srv, _, err := startWithBucket(ctx, 0)
	if err != nil {
		return err
	}
	defer srv.stop()
	if _, err := srv.load(ctx, loadRequest{Bucket: "bench", Prefixes: prefixes, PerPrefix: perPrefix, Count: total, ValueSize: 200}); err != nil {
		return err
	}
	b.say("  %d keys over %d prefixes; %d overwritten before each restart", total, prefixes, churn)
	dir, err := os.MkdirTemp("", "kvwatchgen-bench-checkpoint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bench.checkpoint")
	scopes := benchkv.BenchScopes{Prefix: prefixNames(prefixes)}

	// The first start reads everything and saves the file once synced.
	w, err := watchSynced(ctx, srv.js, scopes, benchkv.BenchHandlers{}, kvwatch.WithCheckpointFile(path))
	if err != nil {
		return err
	}
	if err := waitSaved(ctx, w); err != nil {
		w.Stop()
		return err
	}
	w.Stop()
	first := w.CheckpointFileStats()

	var withFile, fullRead, saveSeconds []float64
	var deltaEvents, fullEvents int64
	var size int64
	for round := range rounds {
		overwrite := loadRequest{Bucket: "bench", Prefixes: prefixes, PerPrefix: perPrefix, Count: churn, ValueSize: 200, Version: 2 + round}
		if _, err := srv.load(ctx, overwrite); err != nil {
			return err
		}
		elapsed, events, w, err := restart(ctx, srv.js, scopes, kvwatch.WithCheckpointFile(path))
		if err != nil {
			return fmt.Errorf("from the checkpoint file: %w", err)
		}
		s, st := w.Stats(), w.CheckpointFileStats()
		if s.Resume != "delta" || !st.Loaded {
			w.Stop()
			return fmt.Errorf("restart from the checkpoint file: Resume %q, loaded %v (%v), want delta", s.Resume, st.Loaded, st.LoadError)
		}
		w.Stop() // saves the state with the overwritten keys
		st = w.CheckpointFileStats()
		if st.LastError != nil {
			return st.LastError
		}
		withFile = append(withFile, elapsed.Seconds())
		saveSeconds = append(saveSeconds, st.LastDuration.Seconds())
		deltaEvents, size = events, st.LastSize

		elapsed, events, w, err = restart(ctx, srv.js, scopes)
		if err != nil {
			return fmt.Errorf("full read: %w", err)
		}
		w.Stop()
		fullRead = append(fullRead, elapsed.Seconds())
		fullEvents = events
	}
	note := fmt.Sprintf("median of %d rounds; %d keys, %d changed since the file", rounds, total, churn)
	b.reportNote("restart_to_synced_seconds_checkpoint_file", median(withFile), "s",
		fmt.Sprintf("%s; file read, then the delta: %d events", note, deltaEvents))
	b.reportNote("restart_to_synced_seconds_full_read", median(fullRead), "s",
		fmt.Sprintf("%s; %d events", note, fullEvents))
	b.reportNote("checkpoint_file_bytes", float64(size), "bytes", fmt.Sprintf("%d entries of about 200-byte JSON values", total))
	b.reportNote("checkpoint_file_save_seconds", median(append(saveSeconds, first.LastDuration.Seconds())), "s",
		"encode, write, fsync, rename, fsync the directory (on the saver's goroutine)")
	return nil
}

// restart starts a watcher of scopes with opts and returns how long it
// took to be synced and how many events it delivered until then; the
// watcher is left running for the caller to inspect and stop.
func restart(ctx context.Context, js jetstream.JetStream, scopes benchkv.BenchScopes, opts ...kvwatch.Option) (time.Duration, int64, *benchkv.BenchWatcher, error) {
	var events atomic.Int64
	start := time.Now()
	w, err := watchSynced(ctx, js, scopes, benchkv.BenchHandlers{OnItem: func(benchkv.ItemEvent) { events.Add(1) }}, opts...)
	if err != nil {
		return 0, 0, nil, err
	}
	return time.Since(start), events.Load(), w, nil
}

// waitSaved waits until w's checkpoint file was saved once.
func waitSaved(ctx context.Context, w *benchkv.BenchWatcher) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for w.CheckpointFileStats().Saves == 0 {
		if err := w.CheckpointFileStats().LastError; err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the checkpoint file was not saved: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}
