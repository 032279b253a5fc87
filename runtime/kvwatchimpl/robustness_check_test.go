package kvwatchimpl_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file checks what the robustness test's watchers delivered against
// the history of writes, guarantee by guarantee (docs/guarantees.md):
//
//  1. Ordered: live events (not Initial) in strictly increasing revision,
//     across kinds.
//  2. Unique: a key's revisions strictly increase while it stays in scope
//     (a delete with LeftScope or FinalStateUnknown ends that), so none is
//     delivered twice.
//  3. Reliable: every event is a write of the history, with its key, op
//     and value; on a bucket keeping 64 revisions a key, no write of a key
//     lies between two of its events, unless a later purge rolled it up;
//     and the newest write of every key in scope is delivered (the final
//     state).
//  4. Exact at every sync point: the caches equal the history's state at
//     their revision within their filters.
//  5. Resumable: a delta delivers only revisions after the checkpoint's.
//
// 1, 2, 3 and 5 are checked event by event by one loop, checkEvents
// (robustness_events_test.go), on a watcher's own log here and on each
// registration's events (AddHandlers, Events) in
// robustness_regcheck_test.go, which also checks them against their
// watcher's own events, from the state at their snapshot on.
//
// One consumer and clean stops are checked while the run goes on.

// checkLife checks one life of watcher id; it returns the violations.
func checkLife(hist *history, bucketHistory int, id, n int, l *life, mirror bool) []string {
	var bad []string
	fail := func(format string, args ...any) {
		bad = append(bad, fmt.Sprintf("watcher %d life %d (epoch %d): ", id, n, l.epoch)+fmt.Sprintf(format, args...))
	}
	if l.ended != nil && !errors.Is(l.ended, jetstream.ErrBucketNotFound) {
		fail("the watch ended on %v", l.ended)
	}
	l.epoch = l.readEpoch()
	for _, e := range l.events {
		if !e.sync || len(e.filters) == 0 || e.epoch == l.epoch {
			continue
		}
		// An earlier epoch the store went back from holds the same writes
		// up to what it kept: a sync point there is one of the life's
		// epoch too. Past that, the watcher held lost writes and did not
		// report it.
		if shared, ok := hist.sharedUpTo(e.epoch, l.epoch); !ok || e.rev > shared {
			fail("sync point at %d on another incarnation of the bucket than the life's", e.rev)
		}
	}
	for i, cp := range l.syncs {
		diffs := stateDiff(hist, l.epoch, cp, mirror && bucketHistory == 1)
		for _, d := range diffs {
			fail("sync point at %d: %s", cp.Revision, d)
		}
		if len(diffs) > 0 {
			// What the watcher delivered of the first key, up to then.
			key, _, _ := strings.Cut(diffs[0], " ")
			var seen []string
			syncs := 0
			for _, e := range l.events {
				if e.sync {
					if syncs++; syncs > i {
						break
					}
					seen = append(seen, fmt.Sprintf("sync@%d", e.rev))
				} else if e.key == key && !e.dropped {
					seen = append(seen, fmt.Sprintf("%s@%d initial=%v", e.op, e.rev, e.initial))
				}
			}
			fail("sync point at %d: %s was delivered as %v", cp.Revision, key, seen)
		}
	}
	// Its events, from the entries it resumed with within the scopes it
	// started with (its own from the start); a checkpoint of another
	// incarnation is re-listed (whether or not the life lived to its first
	// sync point, where resumePath is known).
	seq := evSeq{hist: hist, epoch: l.epoch, bucketHistory: bucketHistory, items: l.events, reported: l.reported,
		start: l.restoredState(), forget: l.resumed != nil && l.resumedEpoch != l.epoch}
	if l.resumed != nil && l.resumePath == "delta" {
		seq.floor = &evFloor{rev: l.resumed.Revision, what: "a delta from %d delivered it"}
	}
	checkEvents(seq, fail)
	return bad
}

// readEpoch returns the incarnation of the bucket a life reads: the one
// of its last sync point with something to watch (it may have started
// idle, before the bucket was made again; the store may have gone back
// to before anything it held: checkLife), or the one it started on.
func (l *life) readEpoch() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.events) - 1; i >= 0; i-- {
		if e := l.events[i]; e.sync && len(e.filters) > 0 {
			return l.goneBackEpoch(e.epoch, i)
		}
	}
	// No sync point recorded by its handlers (Stop cut them short): the
	// epoch the watcher synced on, if it did.
	epoch := l.epoch
	if l.syncEpoch > epoch {
		epoch = l.syncEpoch
	}
	return l.goneBackEpoch(epoch, -1)
}

// skippedWrites returns the revisions of key's writes strictly between a
// and b that no later purge of the key rolled up, that were not reported
// as undecodable, and that changed something (a delete of a key deleted
// already is no change, and an initial catch-up does not deliver it):
// with history kept, the watcher must deliver them. Keys written more
// than 60 times may have lost revisions to the bucket's 64: none is
// reported for them.
func skippedWrites(hist *history, epoch int, key string, a, b uint64, reported map[uint64]bool) []uint64 {
	ws := hist.keyWrites(epoch, key)
	if len(ws) > 60 {
		return nil
	}
	var out []uint64
	for i, w := range ws {
		if w.rev <= a || w.rev >= b || reported[w.rev] {
			continue
		}
		rolledUp := slices.ContainsFunc(ws[i+1:], func(later hwrite) bool { return later.op == "PURGE" })
		absentBefore := i > 0 && (ws[i-1].op != "PUT" || reported[ws[i-1].rev])
		if !rolledUp && !(w.op != "PUT" && absentBefore) {
			out = append(out, w.rev)
		}
	}
	return out
}

// stateDiff compares the caches of cp with the history's state at its
// revision, within its filters: what a watcher holds once exact.
//
// With skipped set (a watcher of an edge's mirror of a history-1 bucket) a
// key may be behind: a mirror copies its origin's messages in order, and
// one its origin replaced before the mirror got to it is skipped, so the
// mirror's state at a revision lacks it until the newer write arrives
// (docs/fleet.md). A key is excused when its cached entry is an
// earlier state of it (an older write of its, or absent) and the history
// has a write of it after the revision: the one the mirror will bring.
func stateDiff(hist *history, epoch int, cp kvwatchimpl.Checkpoint, skipped bool) []string {
	var excuse func(key, cached string) bool
	if skipped {
		excuse = func(key, cached string) bool { return behind(hist, epoch, cp.Revision, key, cached) }
	}
	return stateDiffOf(hist, epoch, cp.Revision, cp.Filters, cacheOf(cp), excuse)
}

// cacheOf returns the caches of cp as stateDiffOf compares them: each
// key's "revision value".
func cacheOf(cp kvwatchimpl.Checkpoint) map[string]string {
	got := map[string]string{}
	for _, e := range kvwatchimpl.EntriesOf(cp, &routeKind) {
		v, _ := json.Marshal(e.Value)
		got[e.Key.String()] = fmt.Sprintf("%d %s", e.Revision, v)
	}
	for _, e := range kvwatchimpl.EntriesOf(cp, &vpcKind) {
		v, _ := json.Marshal(e.Value)
		got[e.Key.String()] = fmt.Sprintf("%d %s", e.Revision, v)
	}
	return got
}

// stateDiffOf compares got (each key's "revision value") with the
// history's state at rev within filters; a key that excuse (if not nil)
// accepts as it is cached ("" when absent) is no difference.
func stateDiffOf(hist *history, epoch int, rev uint64, filters []string, got map[string]string, excuse func(key, cached string) bool) []string {
	want := map[string]string{}
	for key, w := range hist.stateAt(epoch, rev) {
		if !inFilters(filters, key) || strings.Contains(key, ".other.") || w.value == "not json" {
			continue // out of scope, of no kind, or not decodable: not cached
		}
		want[key] = fmt.Sprintf("%d %s", w.rev, canonical(key, w.value))
	}
	excused := func(key, cached string) bool { return excuse != nil && excuse(key, cached) }
	var diffs []string
	for key, g := range got {
		if w, ok := want[key]; !ok && !excused(key, g) {
			diffs = append(diffs, fmt.Sprintf("%s cached as %s, absent", key, g))
		} else if ok && w != g && !excused(key, g) {
			diffs = append(diffs, fmt.Sprintf("%s cached as %s, want %s", key, g, w))
		}
	}
	for key, w := range want {
		if _, ok := got[key]; !ok && !excused(key, "") {
			diffs = append(diffs, fmt.Sprintf("%s missing, want %s", key, w))
		}
	}
	slices.Sort(diffs)
	return diffs
}

// behind reports whether key, cached as cached ("" when absent) in a
// state at rev, is an earlier state of it (an older write of its, or
// absent) with a write of it in the history after rev: the entry the
// state lacks was replaced by that write before it was read (see
// stateDiff).
func behind(hist *history, epoch int, rev uint64, key, cached string) bool {
	later := false
	for _, w := range hist.keyWrites(epoch, key) {
		later = later || w.rev > rev
	}
	if !later {
		return false
	}
	if cached == "" {
		return true // absent: an earlier state when the key was made meanwhile
	}
	var at uint64
	fmt.Sscanf(cached, "%d", &at)
	w, ok := hist.write(epoch, at)
	return ok && w.key == key && w.op == "PUT" && fmt.Sprintf("%d %s", w.rev, canonical(key, w.value)) == cached
}

// lagging is the excuse of a state taken between sync points (a
// registration's replay, the caches at its revision rev): the live tail
// applies the stream in order, and an entry removed before the consumer
// got to it is never delivered, so its key stays at an earlier state
// until the write that removed it arrives (docs/guarantees.md, 4;
// Watcher.Checkpoint). On a bucket keeping one revision a key, any later
// write removes it (behind); keeping more, only a later purge (its
// rollup) or the per-key limit: then the key is behind and every write of
// it after its cached one up to rev is one skippedWrites excuses.
func lagging(hist *history, epoch int, bucketHistory int, reported map[uint64]bool, rev uint64, key, cached string) bool {
	if !behind(hist, epoch, rev, key, cached) {
		return false
	}
	if bucketHistory == 1 {
		return true
	}
	var from uint64
	if cached != "" {
		fmt.Sscanf(cached, "%d", &from)
	}
	return len(skippedWrites(hist, epoch, key, from, rev+1, reported)) == 0
}

// inFilters reports whether key's subject matches one of filters.
func inFilters(filters []string, key string) bool {
	for _, f := range filters {
		if filterMatches(f, "$KV.network."+key) {
			return true
		}
	}
	return false
}

// canonical renders a written value as a watcher renders the decoded one.
func canonical(key, value string) string {
	var v any = &route{}
	if !strings.Contains(key, ".route.") {
		v = &vpcConfig{}
	}
	if err := json.Unmarshal([]byte(value), v); err != nil {
		return "undecodable"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func opName(op kvwatch.Op) string {
	switch op {
	case kvwatch.OpPut:
		return "PUT"
	case kvwatch.OpDelete:
		return "DEL"
	case kvwatch.OpPurge:
		return "PURGE"
	}
	return op.String()
}
