package kvwatchimpl

import (
	"slices"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/subjects"
)

// dedupeWindow recognises the consumer's replay of entries a read without
// a consumer already delivered: after SetScopes added scopes (the consumer
// starts from the watcher's revision, older than the read), or after an
// initial read in several requests, each answered as of its own revision
// (the consumer starts after the oldest). An entry is replayed when its
// key was read by a request answered as of its revision or a later one.
type dedupeWindow struct {
	groups []dedupeGroup
	upTo   uint64 // the newest revision of any group
}

// dedupeGroup is the keys read as of one revision.
type dedupeGroup struct {
	keys *subjects.Matcher // as key filters
	upTo uint64
}

// covers reports whether an ordered entry falls in the window.
func (d *dedupeWindow) covers(e *rawEntry) bool {
	if d == nil || !e.ordered || e.revision > d.upTo {
		return false
	}
	for _, g := range d.groups {
		if e.revision <= g.upTo && g.keys.Matches(e.key) {
			return true
		}
	}
	return false
}

// with returns a window covering d's entries and o's (see rescopePlan:
// the added scopes' read, and the old scopes up to the watcher's revision
// when the consumer must start before it).
func (d *dedupeWindow) with(o *dedupeWindow) *dedupeWindow {
	switch {
	case d == nil:
		return o
	case o == nil:
		return d
	}
	return &dedupeWindow{groups: slices.Concat(d.groups, o.groups), upTo: max(d.upTo, o.upTo)}
}

// readMarks records, for a read made of several requests, which filters
// were read as of which revision.
type readMarks struct {
	byRevision map[uint64][]string
}

// mark records that filters were read as of revision upTo.
func (m *readMarks) mark(filters []string, upTo uint64) {
	if m.byRevision == nil {
		m.byRevision = map[uint64][]string{}
	}
	m.byRevision[upTo] = append(m.byRevision[upTo], filters...)
}

// oldest and newest return the range of revisions marked; ok is false
// when nothing was.
func (m *readMarks) oldest() (rev uint64, ok bool) {
	for r := range m.byRevision {
		if !ok || r < rev {
			rev, ok = r, true
		}
	}
	return rev, ok
}

func (m *readMarks) newest() uint64 {
	var rev uint64
	for r := range m.byRevision {
		rev = max(rev, r)
	}
	return rev
}

// window returns the dedupe window the consumer needs after this read.
// When the read was answered as of one revision and the consumer starts
// right after it, there is nothing to recognise: nil. A read that marked
// nothing (a single atomic answer) is taken as filters read as of upTo,
// which is what a consumer starting before upTo must skip; with filters
// nil, nil too.
func (m *readMarks) window(w *Watcher, filters []string, upTo uint64) *dedupeWindow {
	revs := make([]uint64, 0, len(m.byRevision))
	for r := range m.byRevision {
		revs = append(revs, r)
	}
	slices.Sort(revs)
	switch {
	case len(revs) == 0 && filters == nil:
		return nil
	case len(revs) == 0:
		return &dedupeWindow{groups: []dedupeGroup{{keys: w.keyMatcher(filters), upTo: upTo}}, upTo: upTo}
	case len(revs) == 1 && filters == nil:
		return nil // read as of one revision, the consumer starts after it
	}
	d := &dedupeWindow{}
	for _, r := range revs {
		d.groups = append(d.groups, dedupeGroup{keys: w.keyMatcher(m.byRevision[r]), upTo: r})
		d.upTo = max(d.upTo, r)
	}
	return d
}
