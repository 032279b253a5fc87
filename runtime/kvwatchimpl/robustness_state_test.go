package kvwatchimpl_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file is the caches as the robustness test's logs make them (the
// events, data errors and sync points a watcher or a registration
// recorded), and a life's own log as its registrations are checked
// against it (robustness_regcheck_test.go).

// rentry is a cached entry as events tell it.
type rentry struct {
	rev      uint64
	value    string
	restored bool // from the checkpoint the watcher resumed from, no event since
}

// rstate is the caches as a sequence of events (and data errors) makes
// them.
type rstate map[string]rentry

func (s rstate) apply(e revent) {
	switch {
	case e.sync, e.rewound:
	case e.dropped || e.op != kvwatch.OpPut:
		delete(s, e.key)
	default:
		s[e.key] = rentry{rev: e.rev, value: e.value}
	}
}

// cache returns s as stateDiffOf compares caches.
func (s rstate) cache() map[string]string {
	out := make(map[string]string, len(s))
	for k, e := range s {
		out[k] = fmt.Sprintf("%d %s", e.rev, e.value)
	}
	return out
}

// restoredState returns what a life's caches held before its first event:
// the entries of the checkpoint it resumed from within its scopes.
func (l *life) restoredState() rstate {
	s := rstate{}
	if l.resumed == nil {
		return s
	}
	add := func(key string, value any, rev uint64) {
		if inFilters(l.startFilters, key) {
			v, _ := json.Marshal(value)
			s[key] = rentry{rev: rev, value: string(v), restored: true}
		}
	}
	for _, e := range kvwatchimpl.EntriesOf(*l.resumed, &routeKind) {
		add(e.Key.String(), e.Value, e.Revision)
	}
	for _, e := range kvwatchimpl.EntriesOf(*l.resumed, &vpcKind) {
		add(e.Key.String(), e.Value, e.Revision)
	}
	return s
}

// eventsOfKeys lists, for each difference mapDiff found (each starts with
// its key), what the life's caches were restored with for the key and
// every event and sync point of its log that concerns it, in order: what
// a report of a cache its events do not make needs to be read.
func (l *life) eventsOfKeys(diffs []string) string {
	restored := l.restoredState()
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, d := range diffs {
		key, _, _ := strings.Cut(d, " ")
		fmt.Fprintf(&b, "events of %s:", key)
		if e, ok := restored[key]; ok {
			fmt.Fprintf(&b, " restored %d %s;", e.rev, e.value)
		}
		for _, e := range l.events {
			switch {
			case e.key == key:
				fmt.Fprintf(&b, " %v;", e)
			case e.sync && inFilters(e.filters, key):
				fmt.Fprintf(&b, " sync point @%d (epoch %d);", e.rev, e.epoch)
			case e.rewound:
				b.WriteString(" the store went back;")
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// mapDiff lists up to 5 differences between two caches.
func mapDiff(got, want map[string]string) []string {
	var diffs []string
	for k, g := range got {
		if w, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s %s, absent from the watcher's", k, g))
		} else if w != g {
			diffs = append(diffs, fmt.Sprintf("%s %s, the watcher's %s", k, g, w))
		}
	}
	for k, w := range want {
		if _, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s missing, the watcher's %s", k, w))
		}
	}
	slices.Sort(diffs)
	return diffs[:min(len(diffs), 5)]
}

// sameEvent reports whether a registration's event is the watcher's.
func sameEvent(a, b revent) bool {
	return a.key == b.key && a.op == b.op && a.value == b.value && a.rev == b.rev && a.initial == b.initial &&
		a.left == b.left && a.unknown == b.unknown
}

func (e revent) String() string {
	s := fmt.Sprintf("%s %s@%d", e.key, e.op, e.rev)
	if e.op == kvwatch.OpPut {
		s += " " + e.value
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{e.initial, "initial"}, {e.left, "left"}, {e.unknown, "unknown"}, {e.dropped, "data error"}} {
		if f.on {
			s += " " + f.name
		}
	}
	if e.sync {
		s = fmt.Sprintf("sync point @%d %v", e.rev, e.filters)
	}
	return s
}

// lifeSeq is a life's own log, for the checks of its registrations.
type lifeSeq struct {
	l     *life
	hist  *history
	epoch int
	items []revent // the life's log: events, data errors, sync points
	m     []int    // the indices in items of the events and data errors (the applies, in order)
	mpos  []int    // mpos[x]: how many of m are below x (0 ≤ x ≤ len(items))
	// firstSync is the index in items of the first sync point, -1 if none.
	firstSync int
	init      rstate
}

func newLifeSeq(hist *history, l *life) *lifeSeq {
	l.mu.Lock()
	items := slices.Clone(l.events)
	l.mu.Unlock()
	q := &lifeSeq{l: l, hist: hist, epoch: l.readEpoch(), items: items, mpos: make([]int, len(items)+1), firstSync: -1, init: l.restoredState()}
	for x, e := range items {
		q.mpos[x] = len(q.m)
		if e.sync {
			if q.firstSync < 0 {
				q.firstSync = x
			}
			continue
		}
		q.m = append(q.m, x)
	}
	q.mpos[len(items)] = len(q.m)
	return q
}

// stateAt returns the caches as the life's events make them before its
// apply number p.
func (q *lifeSeq) stateAt(p int) rstate {
	s := maps2(q.init)
	for _, x := range q.m[:p] {
		s.apply(q.items[x])
	}
	return s
}

func maps2(s rstate) rstate {
	out := make(rstate, len(s))
	for k, v := range s {
		out[k] = v
	}
	return out
}

// checkSyncPoints checks that the life's events and data errors make its
// caches at every sync point (the checkpoint there): what the
// registrations' checks build on. Sync points once Stop was called are
// left out: handlers no longer run then.
func (q *lifeSeq) checkSyncPoints(fail func(string, ...any)) {
	s := maps2(q.init)
	i := 0
	for x, e := range q.items {
		if !e.sync {
			s.apply(e)
			continue
		}
		i++
		if i == 1 && q.l.syncedAt >= 0 && q.l.syncedAt != x+1 {
			fail("its OnSynced ran at %d in its log, not right after its first sync point (%d)", q.l.syncedAt, x)
		}
		if q.l.stopAt >= 0 && x >= q.l.stopAt {
			return
		}
		if i > len(q.l.syncs) {
			fail("more sync points in its log than checkpoints")
			return
		}
		if d := mapDiff(s.cache(), cacheOf(q.l.syncs[i-1])); len(d) > 0 {
			fail("its events and data errors do not make its caches at the sync point at %d: %v", e.rev, d)
		}
	}
}
