package kvwatchimpl_test

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file is how the robustness test checks a life that the store going
// back (storeGoesBack) cut in two. The watcher reports the loss to OnError
// (a *kvwatch.StreamWentBackError), in order with its events: the life's
// log holds a rewind mark there. Before it, the watcher applied the old
// history; after it, it re-lists on the new one, as a watcher resumed from
// what its caches held then on a bucket made again would. So the checks
// run on each part as a life of its own: the first stopped at the mark,
// the second resumed from the state the first one's events made.

// rewindParts returns the parts of l, split at each rewind mark in its log:
// l alone when it has none.
func (l *life) rewindParts() []*life {
	k := -1
	for i, e := range l.events {
		if e.rewound {
			k = i
			break
		}
	}
	if k < 0 {
		return []*life{l}
	}
	syncsBefore := 0
	for _, e := range l.events[:k] {
		if e.sync {
			syncsBefore++
		}
	}
	before := &life{epoch: l.epoch, resumed: l.resumed, resumedEpoch: l.resumedEpoch, resumePath: l.resumePath,
		startFilters: l.startFilters, events: l.events[:k], syncs: l.syncs[:syncsBefore], consumers: l.consumers,
		reported: l.reported, routes: l.routes, configs: l.configs, stopAt: k, syncedAt: -1}
	if l.syncedAt >= 0 && l.syncedAt <= k {
		before.syncedAt = l.syncedAt
	}
	// The second part resumes from a state of the history before the
	// store went back (resumedEpoch -1: never the part's own), whose
	// revisions say nothing of the new one's, as for a bucket made again.
	after := &life{epoch: l.events[k].epoch, resumedEpoch: -1, resumePath: "relist", startFilters: l.startFilters,
		events: l.events[k+1:], syncs: l.syncs[syncsBefore:], consumers: l.consumers, reported: l.reported,
		routes: l.routes, configs: l.configs, ended: l.ended, stopAt: -1, syncedAt: -1, final: l.final, quiet: l.quiet,
		lateChange: l.lateChange, goneBack: l.goneBack, syncEpoch: l.syncEpoch,
		hookedScopes: l.hookedScopes[min(syncsBefore, len(l.hookedScopes)):], loggedSyncs: l.loggedSyncs - syncsBefore}
	if l.stopAt > k {
		after.stopAt = l.stopAt - k - 1
	}
	if l.syncedAt > k {
		after.syncedAt = l.syncedAt - k - 1
	}
	for _, e := range after.events {
		if e.sync {
			after.startFilters = e.filters // the re-list reads the filters it syncs with
			break
		}
	}
	state := l.restoredState()
	for _, e := range before.events {
		state.apply(e)
	}
	after.resumed = state.checkpoint()
	// Registrations go with the part they were added in (they end before
	// the store goes back: endRegistrations); those of a life resumed
	// across it, which begins with the mark, with the second. Positions in
	// the second part's log are k+1 less.
	before.logShift, after.logShift = l.logShift, l.logShift+k+1
	for _, g := range l.regs {
		g.mu.Lock()
		at := g.logAt - l.logShift
		g.mu.Unlock()
		if k > 0 && at <= k {
			before.regs = append(before.regs, g)
		} else {
			after.regs = append(after.regs, g)
		}
	}
	return append([]*life{before}, after.rewindParts()...)
}

// checkpoint returns s as a checkpoint of its entries.
func (s rstate) checkpoint() *kvwatchimpl.Checkpoint {
	var cp kvwatchimpl.Checkpoint
	var routes []kvwatch.Entry[routeKey, route]
	var configs []kvwatch.Entry[vpcKey, vpcConfig]
	for key, e := range s {
		if strings.Contains(key, ".route.") {
			k, _ := parseRouteKey(key)
			var v route
			_ = json.Unmarshal([]byte(e.value), &v)
			routes = append(routes, kvwatch.Entry[routeKey, route]{Key: k, Value: v, Revision: e.rev})
		} else {
			k, _ := parseVPCKey(key)
			var v vpcConfig
			_ = json.Unmarshal([]byte(e.value), &v)
			configs = append(configs, kvwatch.Entry[vpcKey, vpcConfig]{Key: k, Value: v, Revision: e.rev})
		}
	}
	kvwatchimpl.WithEntries(&cp, &routeKind, routes)
	kvwatchimpl.WithEntries(&cp, &vpcKind, configs)
	return &cp
}

// goneBackAt is where the store went back in a life's log: at is the
// length of its log then, kept the revision the store kept, epoch the
// history's new epoch.
type goneBackAt struct {
	at    int
	kept  uint64
	epoch int
}

// goneBackEpoch is the epoch a life (or the last part of one) goes on
// with after the store went back, unreported, following its sync point at
// event position syncAt (-1: none) of the given epoch: a watcher that had
// applied no write past the revision the store kept lost nothing (the
// revisions up to there hold the same writes in the new epoch, and those
// after are the new epoch's), and had nothing to notice (rewind.go). One
// that had applied such a write keeps the old epoch: its next events, of
// the new history, are then violations, as a watcher that applied a lost
// write must report it. Positions are the part's.
func (l *life) goneBackEpoch(epoch, syncAt int) int {
	for _, g := range l.goneBack {
		at := g.at - l.logShift
		if at <= syncAt || at > len(l.events) || g.epoch <= epoch {
			continue
		}
		if !slices.ContainsFunc(l.events[:at], func(e revent) bool { return !e.sync && e.rev > g.kept }) {
			epoch = g.epoch
		}
	}
	return epoch
}
