package kvwatchimpl_test

import (
	"fmt"
	"maps"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is the robustness test's check of a sequence of events
// against the history of writes: guarantees 1, 2, 3 and 5 of
// robustness_check_test.go, event by event. It checks a watcher's own log
// (checkLife) and each registration's events after its replay, with its
// watcher's sync points and data errors between them (checkReg): what
// differs between the two is what evSeq holds.

// evSeq is a sequence of events to check, and what is known where it
// starts.
type evSeq struct {
	hist          *history
	epoch         int
	bucketHistory int
	// items are events, sync points and data errors, in the order they
	// came.
	items []revent
	// reported are the revisions reported as data errors, never events.
	reported map[uint64]bool
	// unlogged are events after items past the end of the watcher's log
	// (a registration's, past where Stop cut its watcher's own handlers):
	// the data errors between them are unknown, so every write that does
	// not decode counts as reported.
	unlogged []revent
	// unloggedScopes are the sync points past the end of the watcher's
	// log (reached, but cut off with its handlers), in order: each is
	// placed among the unlogged events by its revision (before a live
	// event after it; before an Initial event of a key it leaves out,
	// the catch-up of a scope added again after it), and a key it leaves
	// out starts over there, as at a logged sync point.
	unloggedScopes []hookedSync
	// start is the state before the first item: a key's next event must
	// come after its entry's revision (but with forget, for a restored
	// one: a checkpoint of another stream, whose revisions start over),
	// and no write between may be skipped (but for a restored one, with no
	// event since).
	start  rstate
	forget bool
	// floor, if not nil, holds until the first sync point.
	floor *evFloor
	// exact checks the state the items make at each sync point against
	// the history's there (a watcher's own caches are checked there
	// instead: checkLife); on an edge's mirror of a history-1 bucket
	// (mirror), a key may be behind (stateDiff).
	exact, mirror bool
}

// evFloor is the revision a sequence starts after.
type evFloor struct {
	rev uint64
	// live: only live events must be after rev (a registration's replay
	// at R: the Initial events of a scope SetScopes adds may be older);
	// else every event (a delta from a checkpoint at rev).
	live bool
	// what reports an event at or below rev (a format of rev).
	what string
	// seed: the state at rev is exact within filters (a replay while
	// synced): a key in them with no event yet had its last at rev, and no
	// write of it after may be skipped.
	seed    bool
	filters []string
}

// checkEvents checks s's events against the history: each a write of the
// history, with its key, op and value; live ones in strictly increasing
// revision; a key's revisions increasing while it stays in scope (a
// delete with LeftScope or FinalStateUnknown ends that, and so does a
// sync point whose filters leave it out); with history kept, no write of
// a key between two of its events. It returns how many sync points it
// checked the state at (exact), and the state the sequence made.
func checkEvents(s evSeq, fail func(string, ...any)) (view rstate, syncPoints int) {
	// lastOf is each key's last revision known (its start entry's or
	// delivered), lastEvent its last delivered one: a gap is checked
	// between deliveries only (a re-list delivers a state, not history).
	lastOf, lastEvent, touched := map[string]uint64{}, map[string]uint64{}, map[string]bool{}
	floor := s.floor
	for key, e := range s.start {
		touched[key] = true
		if !(s.forget && e.restored) {
			lastOf[key] = e.rev
		}
		if !e.restored {
			lastEvent[key] = e.rev
		} else if floor != nil && floor.seed {
			lastEvent[key] = floor.rev
		}
	}
	view = maps2(s.start)
	reported := s.reported
	pending := s.unloggedScopes
	var lastLive uint64
	for i, e := range append(s.items[:len(s.items):len(s.items)], s.unlogged...) {
		if i == len(s.items) {
			reported = undecodable(s.hist, s.epoch, s.reported)
		}
		for i >= len(s.items) && len(pending) > 0 && !e.dropped &&
			(pending[0].rev < e.rev || (e.initial && !inFilters(pending[0].filters, e.key))) {
			for key := range lastOf {
				if !inFilters(pending[0].filters, key) {
					delete(lastOf, key)
					delete(lastEvent, key)
				}
			}
			floor = nil
			pending = pending[1:]
		}
		switch {
		case e.rewound:
			continue
		case e.sync:
			if s.exact {
				syncPoints++
				for _, d := range stateDiffOf(s.hist, s.epoch, e.rev, e.filters, view.cache(), func(key, cached string) bool {
					return s.mirror && s.bucketHistory == 1 && behind(s.hist, s.epoch, e.rev, key, cached)
				}) {
					fail("at the watcher's sync point at %d: %s", e.rev, d)
				}
			}
			// Keys out of the scopes of this sync point were out of them
			// since the switch that led to it: their next event starts
			// over (a key absent when its scope left had no LeftScope
			// delete to say so).
			for key := range lastOf {
				if !inFilters(e.filters, key) {
					delete(lastOf, key)
					delete(lastEvent, key)
				}
			}
			floor = nil
			continue
		case e.dropped:
			view.apply(e) // a data error: reported, no event
			continue
		}
		view.apply(e)
		first := !touched[e.key]
		touched[e.key] = true
		if e.inferred {
			if e.op != kvwatch.OpDelete {
				fail("%s: LeftScope or FinalStateUnknown on a %s", e.key, e.op)
			}
			delete(lastOf, e.key)
			delete(lastEvent, e.key)
			continue
		}
		w, ok := s.hist.write(s.epoch, e.rev)
		switch {
		case !ok:
			fail("%s at %d: no write at that revision", e.key, e.rev)
			continue
		case w.key != e.key || opName(e.op) != w.op || (w.op == "PUT" && canonical(e.key, w.value) != e.value):
			fail("%s %s at %d %s: the write there is %s %s %s", e.key, e.op, e.rev, e.value, w.key, w.op, w.value)
		}
		if !e.initial {
			if e.rev <= lastLive {
				fail("%s at %d: live event after one at %d", e.key, e.rev, lastLive)
			}
			lastLive = e.rev
		}
		if floor != nil && (!floor.live || !e.initial) && e.rev <= floor.rev {
			fail("%s at %d: "+floor.what, e.key, e.rev, floor.rev)
		}
		if last, ok := lastOf[e.key]; ok && e.rev <= last {
			fail("%s at %d: delivered after its revision %d", e.key, e.rev, last)
		}
		last, ok := lastEvent[e.key]
		if !ok && first && floor != nil && floor.seed && inFilters(floor.filters, e.key) {
			last, ok = floor.rev, true
		}
		if ok && s.bucketHistory > 1 && !e.initial {
			// Initial events are a state, not the next change: a key
			// whose scope was re-added is read as it is now.
			for _, skipped := range skippedWrites(s.hist, s.epoch, e.key, last, e.rev, reported) {
				var ops []string
				for _, w := range s.hist.keyWrites(s.epoch, e.key) {
					if w.rev >= last && w.rev <= e.rev {
						ops = append(ops, fmt.Sprintf("%s@%d", w.op, w.rev))
					}
				}
				fail("%s: write at %d never delivered (known at %d, event at %d; writes %v)", e.key, skipped, last, e.rev, ops)
			}
		}
		lastOf[e.key], lastEvent[e.key] = e.rev, e.rev
	}
	return view, syncPoints
}

// hookedSync is a sync point as the event goroutine records it.
type hookedSync struct {
	rev     uint64
	filters []string
}

// undecodable returns reported with the revisions of the puts of epoch
// whose values do not decode added.
func undecodable(hist *history, epoch int, reported map[uint64]bool) map[uint64]bool {
	out := maps.Clone(reported)
	for _, w := range hist.epochWrites(epoch) {
		if w.op == "PUT" && canonical(w.key, w.value) == "undecodable" {
			out[w.rev] = true
		}
	}
	return out
}
