package kvwatchimpl_test

import (
	"errors"
	"slices"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file is the crafted runs of robustness_checker_test.go.

// lifeCases are runs of the watcher's own checks (checkLife).
func lifeCases() []checkerCase {
	return []checkerCase{
		{name: "clean", run: func(f *cfix) []string { return lifeViolations(f, f.life(f.baseLog()...)) }},
		{name: "clean resumed by a delta", run: func(f *cfix) []string {
			return lifeViolations(f, f.lifeFrom(f.state(3, f.ev(3), f.ev(2)), "delta", f.ini(4), f.ini(6), f.ini(7), syncAt(7), f.ev(8), syncAt(8)))
		}},
		{name: "clean resumed by a delta, then a scope added", run: func(f *cfix) []string {
			// Synced, the watcher reads scope b: the Initial event of its
			// key is older than the checkpoint.
			l := f.lifeFrom(f.state(6, f.ev(6)), "delta", f.ini(7), f.ini(8), syncAt(8), f.ini(5), revent{sync: true, rev: 8, filters: scopeAB()})
			return lifeViolations(f, l)
		}},
		{name: "out of order", want: rkey("r2") + " at 4: live event after one at 6", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(6), f.ev(4), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "duplicate", want: rkey("r1") + " at 3: delivered after its revision 3", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "duplicate initial", want: rkey("r1") + " at 1: delivered after its revision 1", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "skipped write", want: rkey("r1") + ": write at 3 never delivered", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "skipped write, history 1", run: func(f *cfix) []string {
			f.bucketHistory = 1 // one message a key: an overwritten write is gone
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "skipped write reported as a data error", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), revent{dropped: true, key: rkey("r1"), rev: 3},
				f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "wrong value", want: rkey("r1") + " put at 6 " + rval("x") + ": the write there is", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4),
				with(f.ev(6), func(e *revent) { e.value = rval("x") }), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "wrong op", want: rkey("r2") + " put at 4 : the write there is", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3),
				with(f.ev(4), func(e *revent) { e.op = kvwatch.OpPut }), f.ev(6), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "wrong key", want: rkey("r9") + " put at 7", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6),
				with(f.ev(7), func(e *revent) { e.key = rkey("r9") }), f.ev(8), syncAt(8)))
		}},
		{name: "no write", want: rkey("r1") + " at 9: no write at that revision", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8),
				with(f.ev(6), func(e *revent) { e.rev = 9 })))
		}},
		{name: "LeftScope on a put", want: rkey("r1") + ": LeftScope or FinalStateUnknown on a put", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4),
				with(f.ev(6), func(e *revent) { e.left, e.inferred = true, true }), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "a delta delivers the checkpoint's revision", want: rkey("r1") + " at 3: a delta from 3 delivered it", run: func(f *cfix) []string {
			return lifeViolations(f, f.lifeFrom(f.state(3, f.ev(3), f.ev(2)), "delta", f.ini(3), f.ini(4), f.ini(6), f.ini(7), syncAt(7), f.ev(8), syncAt(8)))
		}},
		{name: "stale cache at a sync point", want: "sync point at 8: " + rkey("r1") + " cached as 3", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			l.syncs[1] = *f.state(8, f.ev(3), f.ev(8))
			return lifeViolations(f, l)
		}},
		{name: "a key missing at a sync point", want: "sync point at 8: " + rkey("r3") + " missing", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			l.syncs[1] = *f.state(8, f.ev(6))
			return lifeViolations(f, l)
		}},
		{name: "a key out of scope at a sync point", want: "sync point at 8: vpc.b.route.r9 cached as 5", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			l.syncs[1] = *f.state(8, f.ev(6), f.ev(8), f.ev(5))
			return lifeViolations(f, l)
		}},
		{name: "an event out of scope", want: "sync point at 8: vpc.b.route.r9 cached as 5", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(5), f.ev(6), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "a key behind at a sync point, not on a mirror", want: "sync point at 8: " + rkey("r3") + " missing",
			run: func(f *cfix) []string { return behindOnMirror(f, false) }},
		{name: "a key behind at a sync point on a mirror", run: func(f *cfix) []string { return behindOnMirror(f, true) }},
		{name: "a sync point on another incarnation", want: "sync point at 2 on another incarnation", run: func(f *cfix) []string {
			return lifeViolations(f, f.life(f.ini(1), f.ini(2), with(syncAt(2), func(e *revent) { e.epoch = 1 }), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8)))
		}},
		{name: "clean: the store went back behind the watcher, unnoticed", run: func(f *cfix) []string {
			// The store keeps up to 6, where the watcher is, and the new
			// epoch writes r3 and r1 again at 7 and 8: nothing was lost
			// for the watcher, which goes on, and has no sync point since
			// (a soak at 4853ef6, seed 1796192642631895990).
			l := goneBackAt6(f, f.ev(6))
			return partsViolations(f, l)
		}},
		{name: "a lost write applied, then the new history, unreported", want: rkey("r1") + " put at 8 " + rval("n8") + ": the write there is", run: func(f *cfix) []string {
			l := goneBackAt6(f, f.ev(6), f.ev(7))
			return partsViolations(f, l)
		}},
		{name: "clean re-listed on a bucket made again, stopped before its handlers recorded the sync point", run: func(f *cfix) []string {
			// The bucket was deleted and made again as the life resumed: its
			// read is of the new one, and Stop came before the handlers ran
			// the sync point (a soak at 76b3fb8, seed 1796197093283605668).
			f.hist.record(hwrite{epoch: 1, rev: 1, key: rkey("r1"), op: "PUT", value: rval("e1")})
			r1 := revent{key: rkey("r1"), op: kvwatch.OpPut, value: rval("e1"), rev: 1, initial: true}
			r3 := revent{key: rkey("r3"), op: kvwatch.OpDelete, rev: 1, initial: true, unknown: true, inferred: true}
			l := f.lifeFrom(f.state(8, f.ev(6), f.ev(8)), "relist", r1, r3)
			l.stopAt, l.syncEpoch = 2, 1
			return lifeViolations(f, l)
		}},
		{name: "the watch ended on an error", want: "the watch ended on boom", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			l.ended = errors.New("boom")
			return lifeViolations(f, l)
		}},
	}
}

// behindOnMirror is a watcher of a history-1 bucket whose sync point at 8
// lacks r3, written again at 9: a mirror may not have brought it yet.
func behindOnMirror(f *cfix, mirror bool) []string {
	f.hist.record(hwrite{rev: 9, key: rkey("r3"), op: "PUT", value: rval("9")})
	f.bucketHistory, f.mirror = 1, mirror
	l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6), syncAt(8), f.ev(9))
	f.regAtSync(l, f.ev(3), f.ev(4), f.ev(6), f.ev(9))
	return bothViolations(f, l)
}

// regCases are runs of the registrations' checks (checkRegistrations).
func regCases() []checkerCase {
	return []checkerCase{
		{name: "clean", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.regAtSync(l, f.regLive()...)
			// Added after the change at 3, between two sync points.
			f.reg(l, 4, synced(3, 2), 2, f.ini(3), f.ini(2), f.ev(4), f.ev(6), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "clean with a scope added while synced", run: func(f *cfix) []string {
			// Its replay at 6, then the watcher's SetScopes adds scope b:
			// the Initial event of its key is older than R.
			ab := scopeAB()
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6), f.ini(5),
				revent{sync: true, rev: 6, filters: ab}, f.ev(7), f.ev(8), revent{sync: true, rev: 8, filters: ab})
			f.reg(l, 6, synced(6, 1), 1, f.ini(6), f.ini(5), f.ev(7), f.ev(8))
			return bothViolations(f, l)
		}},
		{name: "clean re-listed from a checkpoint of another incarnation", run: func(f *cfix) []string {
			// The bucket was made again: its revisions start over.
			f.hist.record(hwrite{epoch: 1, rev: 1, key: rkey("r1"), op: "PUT", value: rval("e1")})
			r1 := revent{key: rkey("r1"), op: kvwatch.OpPut, value: rval("e1"), rev: 1, initial: true}
			r3 := revent{key: rkey("r3"), op: kvwatch.OpDelete, rev: 1, initial: true, unknown: true, inferred: true}
			l := f.lifeFrom(f.state(8, f.ev(6), f.ev(8)), "relist", r1, r3, revent{sync: true, rev: 1, filters: scopeA, epoch: 1})
			l.epoch = 1
			f.reg(l, 0, kvwatchimpl.RegistrationState{Revision: 8, Filters: scopeA, Cached: 2}, 4, f.ini(6), f.ini(8), r1, r3)
			return bothViolations(f, l)
		}},
		{name: "clean with a scope left and re-added", run: func(f *cfix) []string {
			// r2, deleted, is written while scope a is out: its next event
			// comes after writes it was not told of.
			f.hist.record(hwrite{rev: 9, key: rkey("r2"), op: "PUT", value: rval("9")})
			f.hist.record(hwrite{rev: 10, key: rkey("r2"), op: "DEL"})
			f.hist.record(hwrite{rev: 11, key: rkey("r2"), op: "PUT", value: rval("11")})
			left := func(rev uint64) revent {
				return with(f.ev(rev), func(e *revent) { e.op, e.value, e.left, e.inferred = kvwatch.OpDelete, "", true, true })
			}
			b := []string{"$KV.network.vpc.b", "$KV.network.vpc.b.>"}
			live := []revent{f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8),
				left(6), left(8), f.ini(5), revent{sync: true, rev: 8, filters: b},
				left(5), f.ini(6), f.ini(8), syncAt(10), f.ev(11), syncAt(11)}
			l := f.life(append([]revent{f.ini(1), f.ini(2), syncAt(2)}, live...)...)
			f.regAtSync(l, slices.DeleteFunc(slices.Clone(live), func(e revent) bool { return e.sync })...)
			return bothViolations(f, l)
		}},
		{name: "clean added while a scope is added again, the watcher's handlers behind", run: func(f *cfix) []string {
			// Scope a is added, left and added again: its keys come twice
			// flagged Initial at the same revisions. A registration added
			// during the second time, while the watcher's own handlers had
			// not reached the first, splits the log at the second.
			left := func(rev uint64) revent {
				return with(f.ev(rev), func(e *revent) { e.op, e.value, e.left, e.inferred = kvwatch.OpDelete, "", true, true })
			}
			b := []string{"$KV.network.vpc.b", "$KV.network.vpc.b.>"}
			l := f.life(append(f.baseLog(),
				left(6), left(8), f.ini(5), revent{sync: true, rev: 8, filters: b},
				f.ini(6), f.ini(8), revent{sync: true, rev: 8, filters: scopeAB()},
				left(6), left(8), revent{sync: true, rev: 8, filters: b},
				left(5), f.ini(6), f.ini(8), syncAt(8))...)
			st := kvwatchimpl.RegistrationState{Revision: 8, Synced: true, Rescoping: true, Filters: scopeA}
			f.reg(l, 13, st, 0, f.ini(6), f.ini(8))
			return bothViolations(f, l)
		}},
		{name: "clean with a data error", run: func(f *cfix) []string {
			// r1 written at 9 does not decode: the watcher drops it.
			f.hist.record(hwrite{rev: 9, key: rkey("r1"), op: "PUT", value: "not json"})
			l := f.life(append(f.baseLog(), revent{dropped: true, key: rkey("r1"), rev: 9}, syncAt(9))...)
			f.regAtSync(l, f.regLive()...)
			return bothViolations(f, l)
		}},
		{name: "clean past where Stop cut the watcher's handlers", run: func(f *cfix) []string {
			// 9 does not decode: the watcher, stopped, never reported it.
			f.hist.record(hwrite{rev: 9, key: rkey("r1"), op: "PUT", value: "not json"})
			f.hist.record(hwrite{rev: 10, key: rkey("r1"), op: "PUT", value: rval("10")})
			l := f.life(f.baseLog()[:8]...)
			l.stopAt = 8
			f.reg(l, 8, synced(8, 2), 2, f.ini(6), f.ini(8), f.ev(10))
			return regViolations(f, l)
		}},
		{name: "a replay not Initial", want: "replayed as " + rkey("r1") + " put@1 " + rval("1") + ": not an initial put", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.reg(l, 3, synced(2, 2), 2, append([]revent{f.ev(1), f.ini(2)}, f.regLive()...)...)
			return regViolations(f, l)
		}},
		{name: "a key replayed twice", want: rkey("r1") + " replayed twice", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.reg(l, 3, synced(2, 2), 2, append([]revent{f.ini(1), f.ini(1)}, f.regLive()...)...)
			return regViolations(f, l)
		}},
		{name: "a replay no state of the watcher's", want: "no split of the watcher's log fits it", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.reg(l, 3, synced(2, 2), 2, append([]revent{f.ini(1), f.ini(8)}, f.regLive()...)...)
			return regViolations(f, l)
		}},
		{name: "a first event none of the watcher's", want: "its first event after the replay, " + rkey("r1") + " put@3", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.regAtSync(l, with(f.ev(3), func(e *revent) { e.value = rval("x") }), f.ev(4), f.ev(6), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "an event missing", want: "event 1 after the replay is " + rkey("r1") + " put@6", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.regAtSync(l, f.ev(3), f.ev(6), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "an event added", want: "6 events after the replay, the watcher had 5 after the split", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.regAtSync(l, append(f.regLive(), f.ev(8))...)
			return regViolations(f, l)
		}},
		{name: "the last events missing", want: "2 events after the replay, but 5 were due", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.regAtSync(l, f.ev(3), f.ev(4))
			return regViolations(f, l)
		}},
		{name: "events after it removed itself", want: "2 events after it removed itself", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			g := f.regAtSync(l, f.regLive()...)
			g.selfRemovedAt = 5
			return regViolations(f, l)
		}},
		{name: "OnSynced misplaced", want: "OnSynced after 1 events after its replay, the watcher's sync point after 0", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.regAtSync(l, f.regLive()...).syncedAt = 3
			return regViolations(f, l)
		}},
		{name: "no OnSynced", want: "no OnSynced, but 5 events after the watcher's sync point", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.regAtSync(l, f.regLive()...).syncedAt = -1
			return regViolations(f, l)
		}},
		{name: "OnSynced with its replay cut short", want: "OnSynced with its replay cut short", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.reg(l, 3, synced(2, 3), 2, f.ini(1), f.ini(2))
			return regViolations(f, l)
		}},
		{name: "OnSynced on a watcher never synced", want: "OnSynced, the watcher never synced", run: func(f *cfix) []string {
			l := f.life(f.ini(1), f.ini(2), f.ini(3))
			f.reg(l, 2, kvwatchimpl.RegistrationState{Revision: 2, Filters: scopeA, Cached: 2}, 3, f.ini(1), f.ini(2), f.ini(3))
			return regViolations(f, l)
		}},
		{name: "a live event before OnSynced", want: rkey("r2") + " put@2 " + rval("2") + " before its OnSynced, not flagged Initial", run: func(f *cfix) []string {
			l := f.life(f.ini(1), f.ev(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8))
			f.reg(l, 1, kvwatchimpl.RegistrationState{Revision: 1, Filters: scopeA, Cached: 1}, 2,
				f.ini(1), f.ev(2), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "a stale replay", want: "its replay at 2: " + rkey("r2") + " missing", run: func(f *cfix) []string {
			l := f.life(f.ini(1), syncAt(2), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8))
			f.reg(l, 2, synced(2, 1), 1, f.ini(1), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "stale at a sync point", want: "at the watcher's sync point at 8: " + rkey("r2") + " cached as 2", run: func(f *cfix) []string {
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(6), f.ev(7), f.ev(8), syncAt(8))
			f.regAtSync(l, f.ev(3), f.ev(6), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "stale at the end", want: "at the end: " + rkey("r3") + " cached as 7", run: func(f *cfix) []string {
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6), f.ev(7))
			l.final, l.quiet = f.state(8, f.ev(6), f.ev(8)), true
			f.regAtSync(l, f.ev(3), f.ev(4), f.ev(6), f.ev(7))
			return regViolations(f, l)
		}},
		{name: "out of order", want: rkey("r2") + " at 4: live event after one at 6", run: func(f *cfix) []string {
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(6), f.ev(4), f.ev(7), f.ev(8), syncAt(8))
			f.regAtSync(l, f.ev(3), f.ev(6), f.ev(4), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "duplicate", want: rkey("r1") + " at 6: delivered after its revision 6", run: func(f *cfix) []string {
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6), f.ev(6), f.ev(7), f.ev(8), syncAt(8))
			f.regAtSync(l, f.ev(3), f.ev(4), f.ev(6), f.ev(6), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "a change at or below R after the split", want: rkey("r1") + " put@3 " + rval("3") + " after the split is a change of the live tail at or below 3", run: func(f *cfix) []string {
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8))
			f.reg(l, 4, synced(3, 2), 2, f.ini(3), f.ini(2), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "skipped write", want: rkey("r1") + ": write at 3 never delivered", run: func(f *cfix) []string {
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8))
			f.regAtSync(l, f.ev(4), f.ev(6), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "skipped write after a restored entry", want: rkey("r1") + ": write at 3 never delivered", run: func(f *cfix) []string {
			// Resumed from 2, synced with nothing new, then a write of r1
			// skipped: the replay holds r1 as restored, its last event is R.
			l := f.lifeFrom(f.state(2, f.ev(1), f.ev(2)), "delta", syncAt(2), f.ev(4), f.ev(6), f.ev(7), f.ev(8), syncAt(8))
			f.reg(l, 1, synced(2, 2), 2, f.ini(1), f.ini(2), f.ev(4), f.ev(6), f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "the first write after R of a key absent at R skipped", want: rkey("r3") + ": write at 7 never delivered", run: func(f *cfix) []string {
			// The watcher's own check cannot see it: r3 had no event before.
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6), f.ev(8), syncAt(8))
			f.reg(l, 4, synced(3, 2), 2, f.ini(3), f.ini(2), f.ev(4), f.ev(6), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "wrong value", want: rkey("r1") + " put at 6 " + rval("x") + ": the write there is", run: func(f *cfix) []string {
			bad := with(f.ev(6), func(e *revent) { e.value = rval("x") })
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), bad, f.ev(7), f.ev(8), syncAt(8))
			f.regAtSync(l, f.ev(3), f.ev(4), bad, f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "no write", want: rkey("r1") + " at 9: no write at that revision", run: func(f *cfix) []string {
			bad := with(f.ev(6), func(e *revent) { e.rev = 9 })
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), f.ev(6), f.ev(7), f.ev(8), bad)
			f.regAtSync(l, append(f.regLive(), bad)...)
			return regViolations(f, l)
		}},
		{name: "LeftScope on a put", want: rkey("r1") + ": LeftScope or FinalStateUnknown on a put", run: func(f *cfix) []string {
			bad := with(f.ev(6), func(e *revent) { e.left, e.inferred = true, true })
			l := f.life(f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4), bad, f.ev(7), f.ev(8), syncAt(8))
			f.regAtSync(l, f.ev(3), f.ev(4), bad, f.ev(7), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "a live event at or below R past where Stop cut the watcher's handlers", want: rkey("r1") + " at 3: live event at or below R 8", run: func(f *cfix) []string {
			l := f.life(f.baseLog()[:8]...)
			l.stopAt = 8
			f.reg(l, 8, synced(8, 2), 2, f.ini(6), f.ini(8), f.ev(3))
			return regViolations(f, l)
		}},
		{name: "skipped write past where Stop cut the watcher's handlers", want: rkey("r1") + ": write at 9 never delivered", run: func(f *cfix) []string {
			f.hist.record(hwrite{rev: 9, key: rkey("r1"), op: "PUT", value: rval("9")})
			f.hist.record(hwrite{rev: 10, key: rkey("r1"), op: "PUT", value: rval("10")})
			l := f.life(f.baseLog()[:8]...)
			l.stopAt = 8
			f.reg(l, 8, synced(8, 2), 2, f.ini(6), f.ini(8), f.ev(10))
			return regViolations(f, l)
		}},
		{name: "a scope left and added again past where Stop cut the watcher's handlers", run: func(f *cfix) []string {
			// The watcher synced without scope a after the cut (its
			// handlers no longer logged it), r1 was written meanwhile, and
			// scope a came back: r1's next event starts over.
			f.hist.record(hwrite{rev: 9, key: rkey("r1"), op: "PUT", value: rval("9")})
			f.hist.record(hwrite{rev: 10, key: rkey("r1"), op: "PUT", value: rval("10")})
			l := f.life(f.baseLog()[:8]...)
			l.stopAt = 8
			l.hookedScopes, l.loggedSyncs = []hookedSync{{8, scopeA}, {8, scopeB()}, {9, scopeA}}, 1
			f.reg(l, 8, synced(8, 2), 2, f.ini(6), f.ini(8), f.ev(10))
			return regViolations(f, l)
		}},
		{name: "skipped write past the cut, every scope past it keeping the key", want: rkey("r1") + ": write at 9 never delivered", run: func(f *cfix) []string {
			f.hist.record(hwrite{rev: 9, key: rkey("r1"), op: "PUT", value: rval("9")})
			f.hist.record(hwrite{rev: 10, key: rkey("r1"), op: "PUT", value: rval("10")})
			l := f.life(f.baseLog()[:8]...)
			l.stopAt = 8
			l.hookedScopes, l.loggedSyncs = []hookedSync{{8, scopeA}, {9, scopeAB()}}, 1
			f.reg(l, 8, synced(8, 2), 2, f.ini(6), f.ini(8), f.ev(10))
			return regViolations(f, l)
		}},
		{name: "skipped write past the cut, before the scope left", want: rkey("r1") + ": write at 9 never delivered", run: func(f *cfix) []string {
			f.hist.record(hwrite{rev: 9, key: rkey("r1"), op: "PUT", value: rval("9")})
			f.hist.record(hwrite{rev: 10, key: rkey("r1"), op: "PUT", value: rval("10")})
			l := f.life(f.baseLog()[:8]...)
			l.stopAt = 8
			l.hookedScopes, l.loggedSyncs = []hookedSync{{8, scopeA}, {10, scopeB()}, {11, scopeA}}, 1
			f.reg(l, 8, synced(8, 2), 2, f.ini(6), f.ini(8), f.ev(10))
			return regViolations(f, l)
		}},
		{name: "events without a registration", want: "events without a registration", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.regAtSync(l, f.regLive()...).probed = false
			return regViolations(f, l)
		}},
		{name: "a loop's count", want: "the loop counted 0 events, recorded 8", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			g := f.regAtSync(l, f.regLive()...)
			g.plan.how, g.done = regLoop, make(chan struct{})
			close(g.done)
			return regViolations(f, l)
		}},
		{name: "noted by its handlers", want: "OnSynced twice", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			f.regAtSync(l, f.regLive()...).odd = []string{"OnSynced twice"}
			return regViolations(f, l)
		}},
		{name: "a log that does not make its caches", want: "its events and data errors do not make its caches at the sync point at 8", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			l.syncs[1] = *f.state(8, f.ev(3), f.ev(8))
			return regViolations(f, l)
		}},
		{name: "the watcher's OnSynced misplaced", want: "its OnSynced ran at 1 in its log", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			l.syncedAt = 1
			return regViolations(f, l)
		}},
		{name: "more sync points than checkpoints", want: "more sync points in its log than checkpoints", run: func(f *cfix) []string {
			l := f.life(f.baseLog()...)
			l.syncs = l.syncs[:1]
			return regViolations(f, l)
		}},
	}
}

// goneBackAt6 is a life of scope a on the base history that applied the
// base log up to last, when the store went back to 6 (epoch 1, writing r3
// at 7 and r1 at 8 again), then applied the new epoch's 7 and 8 (7 only
// when it had not applied the old one), with no sync point since: only
// the record of the store going back tells the new epoch.
func goneBackAt6(f *cfix, last ...revent) *life {
	f.hist.rewind(6)
	n7 := hwrite{epoch: 1, rev: 7, key: rkey("r3"), op: "PUT", value: rval("n7")}
	n8 := hwrite{epoch: 1, rev: 8, key: rkey("r1"), op: "PUT", value: rval("n8")}
	f.hist.record(n7)
	f.hist.record(n8)
	events := append([]revent{f.ini(1), f.ini(2), syncAt(2), f.ev(3), f.ev(4)}, last...)
	at := len(events)
	if last[len(last)-1].rev < 7 {
		events = append(events, revent{key: n7.key, op: kvwatch.OpPut, value: canonical(n7.key, n7.value), rev: 7})
	}
	events = append(events, revent{key: n8.key, op: kvwatch.OpPut, value: canonical(n8.key, n8.value), rev: 8})
	l := f.life(events...)
	l.goneBack = []goneBackAt{{at: at, kept: 6, epoch: 1}}
	return l
}
