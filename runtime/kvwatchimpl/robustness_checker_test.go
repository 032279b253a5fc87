package kvwatchimpl_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file tests the robustness test's checker itself, with no server:
// crafted logs of a watcher (a life) and of its registrations, over a
// crafted history, each with one violation, must be reported; the same
// logs without it must not. A check that stops reporting what it should
// would otherwise go unnoticed: a soak with no violation says nothing of
// it.

// scopeA is the filters of scope a.
var scopeA = []string{"$KV.network.vpc.a", "$KV.network.vpc.a.>"}

// scopeB is the filters of scope b.
func scopeB() []string { return []string{"$KV.network.vpc.b", "$KV.network.vpc.b.>"} }

// scopeAB is the filters of scopes a and b.
func scopeAB() []string {
	return append(slices.Clone(scopeA), "$KV.network.vpc.b", "$KV.network.vpc.b.>")
}

// cfix is a crafted run: a history of writes in one epoch, and how the
// bucket keeps them.
type cfix struct {
	hist          *history
	bucketHistory int
	mirror        bool
}

// rkey is the key of route id in scope a.
func rkey(id string) string { return "vpc.a.route." + id }

// rval is a route's value as written (and as a watcher renders it).
func rval(cidr string) string { return `{"cidr":"` + cidr + `","next_hop":""}` }

// baseWrites is the history every case starts from:
//
//	1 PUT r1, 2 PUT r2, 3 PUT r1, 4 DEL r2, 5 PUT vpc.b's r9 (out of
//	scope a), 6 PUT r1, 7 PUT r3, 8 PUT r3.
func baseWrites() []hwrite {
	return []hwrite{
		{rev: 1, key: rkey("r1"), op: "PUT", value: rval("1")},
		{rev: 2, key: rkey("r2"), op: "PUT", value: rval("2")},
		{rev: 3, key: rkey("r1"), op: "PUT", value: rval("3")},
		{rev: 4, key: rkey("r2"), op: "DEL"},
		{rev: 5, key: "vpc.b.route.r9", op: "PUT", value: rval("5")},
		{rev: 6, key: rkey("r1"), op: "PUT", value: rval("6")},
		{rev: 7, key: rkey("r3"), op: "PUT", value: rval("7")},
		{rev: 8, key: rkey("r3"), op: "PUT", value: rval("8")},
	}
}

func newCfix(extra ...hwrite) *cfix {
	f := &cfix{hist: &history{}, bucketHistory: 64}
	for _, w := range append(baseWrites(), extra...) {
		f.hist.record(w)
	}
	return f
}

// ev is the live event of the write at rev.
func (f *cfix) ev(rev uint64) revent {
	w, ok := f.hist.write(0, rev)
	if !ok {
		panic("no write at that revision")
	}
	e := revent{key: w.key, rev: rev}
	switch w.op {
	case "PUT":
		e.op, e.value = kvwatch.OpPut, canonical(w.key, w.value)
	case "DEL":
		e.op = kvwatch.OpDelete
	default:
		e.op = kvwatch.OpPurge
	}
	return e
}

// ini is the write at rev as an Initial event.
func (f *cfix) ini(rev uint64) revent {
	e := f.ev(rev)
	e.initial = true
	return e
}

// syncAt is a sync point at rev with the filters of scope a.
func syncAt(rev uint64) revent { return revent{sync: true, rev: rev, filters: scopeA} }

// with returns e changed by change.
func with(e revent, change func(*revent)) revent {
	change(&e)
	return e
}

// life returns a life that logged items, with a checkpoint at each of its
// sync points that the items before make (the caches a watcher holds are
// what its events made).
func (f *cfix) life(items ...revent) *life {
	return f.lifeFrom(nil, "", items...)
}

// lifeFrom is life resumed from cp (taken in the same epoch), caught up by
// path.
func (f *cfix) lifeFrom(cp *kvwatchimpl.Checkpoint, path string, items ...revent) *life {
	l := &life{consumers: map[string]bool{}, reported: map[uint64]bool{}, stopAt: -1, syncedAt: -1,
		startFilters: scopeA, resumed: cp, resumePath: path, events: items}
	s := l.restoredState()
	for i, e := range items {
		if e.sync {
			cp := s.checkpoint()
			cp.Revision, cp.Filters = e.rev, e.filters
			l.syncs = append(l.syncs, *cp)
			if l.syncedAt < 0 {
				l.syncedAt = i + 1
			}
		}
		if e.dropped {
			l.reported[e.rev] = true
		}
		s.apply(e)
	}
	return l
}

// state returns a checkpoint at rev of scope a holding entries.
func (f *cfix) state(rev uint64, entries ...revent) *kvwatchimpl.Checkpoint {
	s := rstate{}
	for _, e := range entries {
		s.apply(e)
	}
	cp := s.checkpoint()
	cp.Revision, cp.Filters = rev, scopeA
	return cp
}

// reg adds to l a registration made by AddHandlers when l's log had logAt
// entries, with what the probe saw then, and what it received: its replay
// (st.Cached events), then the rest. Its OnSynced ran after syncedAt of
// them (-1: never).
func (f *cfix) reg(l *life, logAt int, st kvwatchimpl.RegistrationState, syncedAt int, events ...revent) *rreg {
	g := newRReg(regPlan{how: regDriver})
	g.probed, g.state, g.logAt, g.syncedAt, g.events = true, st, logAt, syncedAt, events
	l.regs = append(l.regs, g)
	return g
}

// synced is what the probe sees on a synced watcher at rev, with cached
// entries.
func synced(rev uint64, cached int) kvwatchimpl.RegistrationState {
	return kvwatchimpl.RegistrationState{Revision: rev, Synced: true, Filters: scopeA, Cached: cached}
}

// baseLog is a watcher's log of the base history: its initial read up to
// 2, then every change in scope a up to a sync point at 8.
func (f *cfix) baseLog() []revent {
	return []revent{f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8)}
}

// regAtSync adds the registration added right after the first sync point
// of the base log: its replay, then the watcher's events after.
func (f *cfix) regAtSync(l *life, live ...revent) *rreg {
	return f.reg(l, 3, synced(2, 2), 2, append([]revent{f.ini(1), f.ini(2)}, live...)...)
}

// regLive is the registration of regAtSync's events after its replay on
// the base log.
func (f *cfix) regLive() []revent { return []revent{f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8)} }

// checkerCase is one crafted run; run returns its violations.
type checkerCase struct {
	name string
	run  func(f *cfix) []string
	// want is a part of a violation it must report; "" for a run with
	// none.
	want string
}

func lifeViolations(f *cfix, l *life) []string {
	return checkLife(f.hist, f.bucketHistory, 1, 0, l, f.mirror)
}

func regViolations(f *cfix, l *life) []string {
	var st regStats
	return checkRegistrations(f.hist, f.bucketHistory, 1, 0, l, f.mirror, &st)
}

// bothViolations checks l as TestRobustness does: the life, then its
// registrations.
func bothViolations(f *cfix, l *life) []string {
	return append(lifeViolations(f, l), regViolations(f, l)...)
}

// partsViolations checks l as TestRobustness does, part by part
// (rewindParts): each part's life, then its registrations.
func partsViolations(f *cfix, l *life) []string {
	var bad []string
	for _, p := range l.rewindParts() {
		bad = append(bad, bothViolations(f, p)...)
	}
	return bad
}

// TestRobustnessCheckerReportsEachViolation runs the checker on crafted
// runs: each violation reported, none where there is none.
func TestRobustnessCheckerReportsEachViolation(t *testing.T) {
	for _, set := range []struct {
		name  string
		cases []checkerCase
	}{{"life", lifeCases()}, {"registration", regCases()}} {
		for _, c := range set.cases {
			t.Run(set.name+"/"+c.name, func(t *testing.T) {
				bad := c.run(newCfix())
				switch {
				case c.want == "" && len(bad) > 0:
					t.Errorf("violations in a run with none:\n%s", strings.Join(bad, "\n"))
				case c.want != "" && !slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, c.want) }):
					t.Errorf("%q not reported; reported:\n%s", c.want, strings.Join(bad, "\n"))
				}
			})
		}
	}
}
