package kvwatchimpl_test

import (
	"fmt"
	"slices"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file checks the logs of the robustness test's shared watchers
// (robustness_shared_test.go) against their watcher's own log and against
// the history of writes.
//
// Where a registration starts. AddHandlers takes the snapshot of the
// caches and inserts the registration's handlers under the state lock,
// in one critical section: every change applied before it is in the
// replay, every change after it goes to the registration. A probe handler
// (kvwatch.ProbeRegistration, export_test.go) attached in that section
// reads the watcher's revision R, whether it is synced or re-scoping, its
// filters, the size of the caches (the replay's length), and the length
// of the watcher's own log. Handlers run on goroutines of their own,
// behind the caches, so the watcher's log may then still lack the changes
// queued for its handlers: the split is somewhere after it, where the
// replay is the state the log makes and the registration's events are the
// log's after it.

// regStats counts what the registrations' checks covered.
type regStats struct {
	regs, removed, loops, events int
	// Registrations added while the watcher was synced (their replay
	// checked against the history at R), while it caught up (before it
	// was synced, or re-scoping); splits after applies in flight; replays
	// cut short by the end of a watch or loop; sync points and final
	// states checked on registrations; OnSynced checked.
	atR, catchingUp, inFlight, cut, syncPoints, finals, onSynced int
}

func (a *regStats) add(b regStats) {
	a.regs += b.regs
	a.removed += b.removed
	a.loops += b.loops
	a.events += b.events
	a.atR += b.atR
	a.catchingUp += b.catchingUp
	a.inFlight += b.inFlight
	a.cut += b.cut
	a.syncPoints += b.syncPoints
	a.finals += b.finals
	a.onSynced += b.onSynced
}

func (a regStats) String() string {
	return fmt.Sprintf("%d added while synced (replay checked at R), %d while catching up; %d splits after applies in flight; %d replays cut short; "+
		"%d sync points, %d OnSynced and %d final states checked", a.atR, a.catchingUp, a.inFlight, a.cut, a.syncPoints, a.onSynced, a.finals)
}

// checkRegistrations checks every registration and loop of a life; it
// returns the violations.
func checkRegistrations(hist *history, bucketHistory int, id, n int, l *life, mirror bool, st *regStats) []string {
	var bad []string
	fail := func(format string, args ...any) {
		bad = append(bad, fmt.Sprintf("watcher %d life %d (epoch %d): ", id, n, l.epoch)+fmt.Sprintf(format, args...))
	}
	q := newLifeSeq(hist, l)
	q.checkSyncPoints(fail)
	for _, g := range l.registrations() {
		if g.plan.how == regLoop {
			select {
			case <-g.done:
			case <-time.After(10 * time.Second):
				fail("loop %d over Events still running 10 s after its watcher ended", g.id)
				continue
			}
		}
		var regBad []string
		q.checkReg(g, bucketHistory, mirror, st, func(format string, args ...any) {
			regBad = append(regBad, fmt.Sprintf("registration %d (%s): ", g.id, g.plan.how)+fmt.Sprintf(format, args...))
		})
		for _, b := range regBad {
			fail("%s", b)
		}
	}
	return bad
}

// checkReg checks one registration against the life's own log and the
// history.
func (q *lifeSeq) checkReg(g *rreg, bucketHistory int, mirror bool, st *regStats, fail func(string, ...any)) {
	g.mu.Lock()
	events, state, logAt := slices.Clone(g.events), g.state, min(max(0, g.logAt-q.l.logShift), len(q.items))
	syncedAt, selfRemovedAt, removedAt := g.syncedAt, g.selfRemovedAt, g.removedAt
	if removedAt >= 0 {
		removedAt = max(0, removedAt-q.l.logShift)
	}
	probed, odd, loopItems := g.probed, slices.Clone(g.odd), g.loopItems
	g.mu.Unlock()
	l, hist := q.l, q.hist
	for _, o := range odd {
		fail("%s", o)
	}
	if !probed {
		// A loop whose AddHandlers failed: the watch had ended.
		if len(events) > 0 || syncedAt >= 0 {
			fail("events without a registration")
		}
		return
	}
	st.regs++
	st.events += len(events)
	if g.plan.how == regLoop {
		st.loops++
		recorded := len(events)
		if syncedAt >= 0 {
			recorded++ // SyncedEvent
		}
		if loopItems != recorded {
			fail("the loop counted %d events, recorded %d", loopItems, recorded)
		}
	} else if selfRemovedAt >= 0 || removedAt >= 0 {
		st.removed++
	}

	// The replay: every cached entry once, as a put flagged Initial.
	nReplay := state.Cached
	complete := len(events) >= nReplay
	replay := events[:min(nReplay, len(events))]
	var live []revent
	if complete {
		live = events[nReplay:]
	}
	replayed := rstate{}
	for _, e := range replay {
		if !e.initial || e.op != kvwatch.OpPut || e.inferred {
			fail("replayed as %v: not an initial put", e)
		}
		if _, dup := replayed[e.key]; dup {
			fail("%s replayed twice", e.key)
		}
		replayed.apply(e)
	}

	// The split: after the applies the watcher's log had when the
	// snapshot was taken (lo), and after those queued for its own
	// handlers then, which the snapshot holds and the registration does
	// not get.
	lo := q.mpos[logAt]
	R := state.Revision
	synced := state.Synced && !state.Rescoping
	// inFlight: a change applied in the live tail (Synced, not
	// re-scoping: nothing else applies then), at or below R.
	inFlight := func(e revent) bool { return !e.initial && !e.inferred && e.rev <= R }
	splitOK := func(s int) string {
		if synced {
			for _, x := range q.m[lo:s] {
				if e := q.items[x]; e.rev > R {
					return fmt.Sprintf("%v before the split is after R %d", e, R)
				}
			}
			if s < len(q.m) && inFlight(q.items[q.m[s]]) {
				return fmt.Sprintf("%v after the split is a change of the live tail at or below %d", q.items[q.m[s]], R)
			}
		}
		return ""
	}
	replayMatches := func(fold rstate) bool {
		if complete && len(fold) != len(replayed) {
			return false
		}
		for k, e := range replayed {
			if f, ok := fold[k]; !ok || f.rev != e.rev || f.value != e.value {
				return false
			}
		}
		return true
	}
	// Stop ends every listener where it is: the watcher's own handlers
	// may be cut before the registration's (each runs behind the caches
	// by its own queue), whose last events are then checked against the
	// history alone (below).
	ownCut := l.stopAt >= 0 && !l.quiet
	// search returns the split from..to (inclusive) that fits, the first
	// with events after the replay and the last without, or -1 and why
	// the first candidate did not fit.
	search := func(from, to int) (int, string) {
		fold := q.stateAt(from)
		var why string
		found := -1
		for c := from; c <= to; c++ {
			if c > from {
				fold.apply(q.items[q.m[c-1]])
			}
			if w := splitOK(c); w != "" {
				if why == "" {
					why = w
				}
				continue
			}
			if !replayMatches(fold) {
				if why == "" {
					why = fmt.Sprintf("its replay is not the watcher's state there: %v", mapDiff(replayed.cache(), fold.cache()))
				}
				continue
			}
			found = c
			if len(live) > 0 {
				break
			}
		}
		if found >= 0 {
			return found, ""
		}
		return -1, why
	}
	// Candidates: with events after the replay, s is at most a watcher
	// event equal to the first of them, after the event before it. The
	// same event can be in the watcher's log more than once after lo: a
	// scope removed and added again is read again, its keys flagged
	// Initial at the same revisions, while the watcher's own handlers,
	// behind the caches, may not have reached the first time yet when the
	// registration is added. Each occurrence is tried, in order.
	s, why := -1, ""
	for start := lo; ; {
		from, to, e0 := lo, len(q.m), -1
		if len(live) > 0 {
			for i := start; i < len(q.m); i++ {
				if e := q.items[q.m[i]]; !e.dropped && sameEvent(live[0], e) {
					e0 = i
					break
				}
			}
			switch {
			case e0 < 0 && start > lo:
				// No other occurrence: none fitted.
			case e0 < 0 && ownCut:
				// The watcher's own handlers stopped before it: the split
				// is anywhere after lo.
			case e0 < 0:
				fail("its first event after the replay, %v, is none of the watcher's after the snapshot (R %d, its log at %d)", live[0], R, logAt)
				return
			default:
				to = e0
			}
			if e0 < 0 && start > lo {
				break
			}
			for i := to - 1; i >= lo && e0 >= 0; i-- {
				if !q.items[q.m[i]].dropped {
					from = i + 1 // the split is after the last event it does not have
					break
				}
			}
		}
		c, w := search(from, to)
		if why == "" {
			why = w
		}
		if c >= 0 {
			s = c
			break
		}
		if e0 < 0 {
			break
		}
		start = e0 + 1
	}
	beyondOwn := false // the split lies past where Stop cut the watcher's own handlers
	switch {
	case s < 0 && ownCut:
		s, beyondOwn = len(q.m), true
	case s < 0:
		fail("no split of the watcher's log fits it (R %d, synced %v, re-scoping %v, its log at %d, %d replayed of %d): %s",
			R, state.Synced, state.Rescoping, logAt, len(replay), nReplay, why)
		return
	}
	fold := q.stateAt(s)
	if beyondOwn {
		fold = maps2(replayed) // what it knows where it starts is its replay
	}
	if s > lo {
		st.inFlight++
	}
	if !complete {
		st.cut++
	}
	if synced {
		st.atR++
	} else {
		st.catchingUp++
	}

	// The events after the replay: the watcher's after the split, in
	// order, none missing, none added.
	var after []int // indices in items of the watcher's events after the split
	for _, x := range q.m[s:] {
		if !q.items[x].dropped {
			after = append(after, x)
		}
	}
	for j, e := range live {
		if j >= len(after) && ownCut {
			break
		}
		if j >= len(after) {
			fail("%d events after the replay, the watcher had %d after the split; the first extra: %v", len(live), len(after), e)
			return
		}
		if !sameEvent(e, q.items[after[j]]) {
			fail("event %d after the replay is %v, the watcher's there %v", j, e, q.items[after[j]])
			return
		}
	}
	if selfRemovedAt >= 0 && len(events) != selfRemovedAt {
		fail("%d events after it removed itself from its handler", len(events)-selfRemovedAt)
	}
	if complete && g.plan.how != regLoop && removedAt < 0 && (l.stopAt < 0 || (l.quiet && !l.lateChange)) {
		// What it must have had: all, up to its own removal, unless Stop
		// or the driver's removal cut it short (it runs behind the
		// watcher's own handlers by what it has queued); Stop after the
		// end of the run cuts nothing (quiesce).
		must := len(after)
		if selfRemovedAt >= 0 {
			must = min(must, selfRemovedAt-nReplay)
		}
		if len(live) < must {
			fail("%d events after the replay, but %d were due (removed by the driver: %v, by itself: %v, stopped: %v); the first missing: %v",
				len(live), must, removedAt >= 0, selfRemovedAt >= 0, l.stopAt >= 0, q.items[after[len(live)]])
		}
	}

	// OnSynced: at the watcher's sync point (or right after the replay
	// when that came before the split); every event before it flagged
	// Initial.
	msync := -1
	if q.firstSync >= 0 {
		msync = q.mpos[q.firstSync]
	}
	beforeSync := 0 // its events after the replay that come before the sync point
	for _, x := range after {
		if msync >= 0 && q.mpos[x] < msync {
			beforeSync++
		}
	}
	if msync < 0 {
		beforeSync = len(after)
	}
	if syncedAt >= 0 {
		st.onSynced++
		switch k := syncedAt - nReplay; {
		case !complete:
			fail("OnSynced with its replay cut short")
		case (msync < 0 && ownCut) || beyondOwn:
			// The watcher's own handlers stopped before its sync point, or
			// before its split: nothing to place it by.
		case msync < 0:
			fail("OnSynced, the watcher never synced")
		case k != beforeSync:
			fail("OnSynced after %d events after its replay, the watcher's sync point after %d", k, beforeSync)
		}
	} else if msync >= 0 && len(live) > beforeSync {
		fail("no OnSynced, but %d events after the watcher's sync point", len(live)-beforeSync)
	}
	for j, e := range live {
		if j < beforeSync && !e.initial {
			fail("%v before its OnSynced, not flagged Initial", e)
			break
		}
	}

	// Against the history. The replay at R: the caches' state then, as
	// the history says, within the filters (a key behind as the live
	// tail leaves it excused), when the watcher was not catching up.
	if complete && synced {
		excuse := func(key, cached string) bool {
			return lagging(hist, q.epoch, bucketHistory, l.reported, R, key, cached)
		}
		for _, d := range stateDiffOf(hist, q.epoch, R, state.Filters, replayed.cache(), excuse) {
			fail("its replay at %d: %s", R, d)
		}
	}
	if !complete {
		return // nothing after a replay cut short
	}

	// Its events as checkLife checks a life's, from the replay on, with
	// the watcher's sync points and data errors from the split's last
	// apply on, as far as its events go, and those past where Stop cut the
	// watcher's own handlers (ownCut). When synced, until the next sync
	// point (the scopes may change after it, and a SetScopes from no scope
	// at all may take the revision back): live events after R, and no
	// write after R missing before the first event of a key in scope.
	// Sync points once Stop was called are left out: handlers no longer
	// run then.
	seq := evSeq{hist: hist, epoch: q.epoch, bucketHistory: bucketHistory, reported: l.reported, start: fold,
		forget: l.resumed != nil && l.resumedEpoch != q.epoch && !state.Synced, exact: true, mirror: mirror}
	if synced {
		seq.floor = &evFloor{rev: R, live: true, what: "live event at or below R %d, the revision of its replay", seed: true, filters: state.Filters}
	}
	j := 0
	start := 0
	if s > 0 {
		start = q.m[s-1] + 1 // with the sync points between the split's last apply and the next
	}
items:
	for x := start; x < len(q.items); x++ {
		switch e := q.items[x]; {
		case e.sync && l.stopAt >= 0 && x >= l.stopAt:
		case e.sync || e.dropped:
			seq.items = append(seq.items, e)
		case j < len(live):
			seq.items = append(seq.items, live[j]) // the watcher's event there (above)
			j++
		default:
			break items // its events end before this one
		}
	}
	seq.unlogged = live[j:]
	if len(seq.unlogged) > 0 && l.loggedSyncs < len(l.hookedScopes) {
		seq.unloggedScopes = l.hookedScopes[l.loggedSyncs:]
	}
	view, syncPoints := checkEvents(seq, fail)
	st.syncPoints += syncPoints

	// The final state, for a registration that lived to the end of the
	// run and had every event of the watcher's after the split.
	if l.final != nil && l.quiet && g.plan.how != regLoop && removedAt < 0 && selfRemovedAt < 0 && len(live) == len(after) {
		st.finals++
		for _, d := range stateDiffOf(hist, q.epoch, ^uint64(0), l.final.Filters, view.cache(), nil) {
			fail("at the end: %s", d)
		}
	}
}
