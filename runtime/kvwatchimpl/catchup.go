package kvwatchimpl

import "github.com/kvwatchgen/kvwatchgen/runtime/internal/subjects"

// This file is the one description of how a watcher gets from what its
// caches hold to an exact state. Every path produces it (the initial read,
// a resumed watcher's delta, a re-list, a retried read, a consumer reset,
// SetScopes) and one tail consumes it (tail.go): the consumer starts after
// from, skips what a read delivered ahead of it, and once it has passed
// target the catch-up is sealed: the entries written since the last one
// applied are read by direct get up to an answer with nothing after it
// (seal.go), which is the exact sync point. Only then does done run
// (OnSynced, a SetScopes call returning, a re-list's deletes).
//
// Why a seal and not the consumer alone: the consumer reads the stream in
// order, but an entry overwritten before it gets there is gone (history 1
// keeps one a key), and its newer entry may lie past the point where the
// consumer seems caught up; its pending count cannot tell (the server
// counts new messages on another goroutine, removed ones at once). An
// answer with nothing after it is computed in isolation from writes: every
// entry overwritten before the seal read its place was overwritten by one
// at or below the seal's end, which the seal or the consumer delivered.

// catchUpPlan is what a tail must do before the watcher (or a SetScopes
// call) counts as caught up: the one plan every path makes (startPlan,
// readPlan, rescopePlan, a resumed watcher's delta, a consumer reset goes
// on with it), held in w.plan. Once finished it stays as the live tail's
// plan (live): from is then the last revision applied. It lives on the
// event goroutine.
type catchUpPlan struct {
	// from is the revision the consumer starts after. The caches hold the
	// state of every scope up to from, except the keys skip covers, which
	// a read brought further. The tail advances it as it applies entries,
	// so that a reset goes on from the last one.
	from uint64
	// lastPerSubject is set when the consumer delivers the state itself,
	// the newest entry of every key, because the stream does not allow
	// direct get; from is then 0 until it has delivered something.
	lastPerSubject bool
	// skip recognises entries after from that a read already delivered
	// (see dedupeWindow). Nil when there is nothing to recognise.
	skip *dedupeWindow
	// target is the revision the tail must reach before the seal: the
	// newest revision a read saw, or the stream's last sequence when the
	// catch-up began. The seal is exact wherever it starts; target only
	// lets the consumer, which reads just the watcher's filters, bring the
	// bulk of a long catch-up.
	target uint64
	// exact is set when the caches are exact at from already: the state
	// was just read in one atomic answer, or there is nothing to watch. A
	// read in several requests is not, even when they were pinned at one
	// revision: a key overwritten after it (history 1) has no entry at or
	// below it left when its request is answered. Nor is a live tail: an
	// entry overwritten before the consumer got to it is missing until
	// the newer one comes.
	exact bool
	// pending is set while the catch-up is not done. A plan that is not
	// pending is the live tail.
	pending bool
	// seals counts the seals cut short by a bucket written faster than
	// they read (see seal.go): after maxSealAttempts the tail finishes
	// the catch-up without one.
	seals int
	// initial flags the entries delivered until done as Initial: set
	// before the watcher is first synced, and while SetScopes replays the
	// state through the consumer (no direct get).
	initial bool
	// added matches the keys of the scopes SetScopes adds: their entries
	// until done bring them in, and are flagged Initial too (they may be
	// older than live events already delivered, when the added scopes were
	// read from a replica behind the watcher).
	added *subjects.Matcher
	// readFilter, when set, is the one filter the consumer delivers the
	// state on while the catch-up is pending: the whole bucket
	// (readpath.go); the tail drops the entries out of scope, and once
	// the catch-up is done replaces the consumer by one on the watcher's
	// filters.
	readFilter string
	// path names how the state was read, for Stats.
	path string
	// done runs on the event goroutine once the catch-up is sealed: the
	// watcher is synced, or a SetScopes call returns.
	done func()
}

// live reports whether the plan is the live tail's: no catch-up pending.
func (c *catchUpPlan) live() bool { return !c.pending }

// needsNothing reports whether there is nothing to catch up: the caches
// are exact at from, and nothing after it is needed.
func (c *catchUpPlan) needsNothing() bool {
	return c.exact && !c.lastPerSubject && c.skip == nil && c.target <= c.from
}

// applied records that the tail applied every entry up to rev, in order.
func (c *catchUpPlan) applied(rev uint64) {
	if rev > c.from {
		c.from = rev
	}
	if c.lastPerSubject && rev > 0 {
		// A reset goes on from the next revision: the last-per-subject
		// delivery runs in order of revision, so everything it would
		// still deliver is after rev.
		c.lastPerSubject = false
	}
}

// initialEntry reports whether an entry of key delivered now is flagged
// Initial.
func (c *catchUpPlan) initialEntry(key string) bool {
	return c.initial || (c.added != nil && c.added.Matches(key))
}

// reached reports whether the tail is at or past the target.
func (c *catchUpPlan) reached() bool { return !c.lastPerSubject && c.from >= c.target }

// finish ends the catch-up: the plan becomes the live tail, and done runs.
func (c *catchUpPlan) finish() {
	done := c.done
	c.pending, c.skip, c.initial, c.added, c.readFilter, c.done = false, nil, false, nil, "", nil
	if done != nil {
		done()
	}
}
