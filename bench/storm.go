package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"
)

// The storm scenario: a hub and E edges with KV mirrors, W watchers per
// edge, each on its own connection as a node has (nats.go's default
// reconnect settings), moving together. Each side (the generated
// watcher, then the same fleet written by hand on nats.go's
// kv.WatchFiltered) meets the same events on the same servers:
//
//   - cold_start: every watcher of every edge starts at once;
//   - checkpoint_start: the same, from the checkpoint files the watchers
//     saved when they stopped, a change to every tenant later (kvwatch
//     only: nats.go has none);
//   - edge_restart: the first edge killed and started again, a change to
//     every tenant written while it was down;
//   - hub_restart: the hub killed and started again, a change to every
//     tenant written once it is back;
//   - link_flaps: the first edge's leafnode link cut three times, a change
//     to every tenant written after the last heal;
//   - fanout: one write at the hub to the scope every watcher watches.
//
// A watcher is synced again when it holds the changes written for the
// event (and, at a start, its initial state is complete); each event is
// timed from the fault (the start, the kill, the last heal, the write) to
// the last watcher it touched synced again.

// stormSize is how big the storm scenario goes.
type stormSize struct {
	edges, perEdge   int
	limit            time.Duration // for an event's watchers to sync again
	flapDown, flapUp time.Duration // a link flap: cut, then up before the next
}

func stormPlan(b *bench) stormSize {
	switch {
	case b.tiny:
		return stormSize{edges: 2, perEdge: 10, limit: 30 * time.Second, flapDown: 300 * time.Millisecond, flapUp: 700 * time.Millisecond}
	case b.quick:
		return stormSize{edges: 4, perEdge: 500, limit: 60 * time.Second, flapDown: time.Second, flapUp: 3 * time.Second}
	}
	return stormSize{edges: 8, perEdge: 500, limit: 120 * time.Second, flapDown: 2 * time.Second, flapUp: 18 * time.Second}
}

// stormStateSize is the entries a watcher's scopes hold: reading as many
// in one event is reading its whole state again.
const stormStateSize = stormScopes * fleetKeysPerTenant

func runStorm(ctx context.Context, b *bench) error {
	size := stormPlan(b)
	b.reportNote("storm_watchers", float64(size.edges*size.perEdge), "watchers",
		fmt.Sprintf("%d edges x %d watchers, each on its own connection, %d scopes of %d keys each", size.edges, size.perEdge, stormScopes, fleetKeysPerTenant))
	servers, err := startStormServers(ctx, size.edges)
	if err != nil {
		return err
	}
	defer servers.stop()
	for _, side := range stormSides {
		if err := runStormSide(ctx, b, servers, side, size); err != nil {
			return fmt.Errorf("%s: %w", side.name, err)
		}
	}
	return nil
}

// stormRun is one side's run of the events.
type stormRun struct {
	b        *bench
	servers  *stormServers
	side     stormSide
	size     stormSize
	fleet    *stormFleet
	version  int // of the values written
	unsynced int // over every event
	apiErrs  uint64
}

func runStormSide(ctx context.Context, b *bench, servers *stormServers, side stormSide, size stormSize) error {
	dir, err := os.MkdirTemp("", "kvwatchgen-bench-storm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r := &stormRun{b: b, servers: servers, side: side, size: size, fleet: newStormFleet(side, size.edges, size.perEdge, dir)}
	defer r.fleet.stopAll()
	for _, event := range []func(context.Context) error{r.coldStart, r.checkpointStart, r.edgeRestart, r.hubRestart, r.linkFlaps, r.fanout} {
		if err := event(ctx); err != nil {
			return err
		}
	}
	b.reportNote("storm_unsynced_watchers_"+side.name, float64(r.unsynced), "watchers", "not synced again within "+size.limit.String()+", over every event")
	b.reportNote("storm_api_errors_"+side.name, float64(r.apiErrs), "errors", "JetStream API errors at every server, over every event")
	return nil
}

// run is one event: begin metering the edges given (every edge for
// none), apply the fault, which sets what the watchers must hold, and
// finish.
func (r *stormRun) run(ctx context.Context, name string, edges []int, fault func(ev *stormEvent) error) error {
	ev, err := r.begin(ctx, name, edges)
	if err != nil {
		return err
	}
	if err := fault(ev); err != nil {
		ev.meter.stop()
		return err
	}
	return r.finish(ctx, ev)
}

func (r *stormRun) coldStart(ctx context.Context) error {
	return r.run(ctx, "cold_start", nil, func(ev *stormEvent) error {
		ev.initial = true
		return r.fleet.start(ctx, r.servers.urls(), r.fleet.all)
	})
}

func (r *stormRun) checkpointStart(ctx context.Context) error {
	if !r.side.checkpoints {
		return nil
	}
	r.fleet.stopAll()
	want, err := r.writeProbes(ctx, nil)
	if err != nil {
		return err
	}
	return r.run(ctx, "checkpoint_start", nil, func(ev *stormEvent) error {
		ev.initial, ev.want = true, want
		return r.fleet.start(ctx, r.servers.urls(), r.fleet.all)
	})
}

func (r *stormRun) edgeRestart(ctx context.Context) error {
	return r.run(ctx, "edge_restart", []int{0}, func(ev *stormEvent) error {
		ev.meter.edges[0].kill(ctx)
		var err error
		if ev.want, err = r.writeProbes(ctx, nil); err != nil {
			return err
		}
		return ev.meter.edges[0].start()
	})
}

func (r *stormRun) hubRestart(ctx context.Context) error {
	return r.run(ctx, "hub_restart", nil, func(ev *stormEvent) error {
		ev.meter.hub.kill(ctx)
		if err := ev.meter.hub.start(); err != nil {
			return err
		}
		var err error
		ev.want, err = r.writeProbes(ctx, nil)
		return err
	})
}

// linkFlaps cuts the first edge's link three times, flapDown each, up
// flapUp between; the time counts from the last heal.
func (r *stormRun) linkFlaps(ctx context.Context) error {
	return r.run(ctx, "link_flaps", []int{0}, func(ev *stormEvent) error {
		link := r.servers.links[0]
		for i := range 3 {
			if i > 0 {
				time.Sleep(r.size.flapUp) // the fault's script, not a wait for a condition
			}
			link.Partition()
			time.Sleep(r.size.flapDown)
			link.Heal()
		}
		ev.t0 = time.Now()
		var err error
		ev.want, err = r.writeProbes(ctx, nil)
		return err
	})
}

// fanout writes one change to tenant 0, which every watcher watches.
func (r *stormRun) fanout(ctx context.Context) error {
	return r.run(ctx, "fanout", nil, func(ev *stormEvent) error {
		var err error
		ev.want, err = r.writeProbes(ctx, []int{0})
		return err
	})
}

// writeProbes writes one change to each tenant given (every tenant for
// none) at the hub, trying again until each is stored or the event's
// limit passed (the hub may be starting), and returns the revisions by
// tenant.
func (r *stormRun) writeProbes(ctx context.Context, tenants []int) ([]uint64, error) {
	if tenants == nil {
		for t := range fleetTenants {
			tenants = append(tenants, t)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, r.size.limit)
	defer cancel()
	r.version++
	want := make([]uint64, fleetTenants)
	for _, t := range tenants {
		key := fmt.Sprintf("p.%d.item.0", t)
		err := waitUntil(ctx, r.size.limit, "writing "+key+" at the hub", func(ctx context.Context) (bool, error) {
			kv, err := r.servers.hub.js.KeyValue(ctx, fleetBucket)
			if err != nil {
				return false, err
			}
			rev, err := kv.Put(ctx, key, itemValue(t*fleetKeysPerTenant, r.version, fleetValueSize))
			want[t] = rev
			return err == nil, err
		})
		if err != nil {
			return nil, err
		}
	}
	return want, nil
}

// stormEvent is one event of a side's run.
type stormEvent struct {
	name     string
	edges    []int // touched (nil: every edge)
	watchers []*stormWatcher
	before   map[*stormWatcher]uint64         // entries received at the start
	counted  map[*stormWatcher][]stormCounter // counters at the start
	meter    *stormMeter
	t0       time.Time
	initial  bool     // a start: the initial state must be complete
	want     []uint64 // by tenant, the changes to hold (nil: none)
}

func (r *stormRun) begin(ctx context.Context, name string, edges []int) (*stormEvent, error) {
	ev := &stormEvent{name: name, edges: edges, watchers: r.fleet.on(edges...), before: map[*stormWatcher]uint64{}, counted: map[*stormWatcher][]stormCounter{}}
	for _, sw := range ev.watchers {
		if sw.stop != nil {
			ev.before[sw] = sw.received()
			if sw.counters != nil {
				ev.counted[sw] = sw.counters()
			}
		}
		sw.clear()
	}
	m, err := beginMeter(ctx, r.servers)
	if err != nil {
		return nil, err
	}
	ev.meter, ev.t0 = m, time.Now()
	return ev, nil
}

// ready says whether sw is synced again.
func (ev *stormEvent) ready(sw *stormWatcher) bool {
	if _, ok := sw.syncedAt(); ev.initial && !ok {
		return false
	}
	return ev.want == nil || sw.current(ev.want)
}

// readyAt is when sw was synced again.
func (ev *stormEvent) readyAt(sw *stormWatcher) (time.Time, bool) {
	var at time.Time
	if ev.initial {
		s, ok := sw.syncedAt()
		if !ok {
			return at, false
		}
		at = s
	}
	if ev.want != nil {
		c, ok := sw.currentAt(ev.want)
		if !ok {
			return at, false
		}
		at = later(at, c)
	}
	return at, true
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// finish waits for the event's watchers to be synced again, for at most
// the size's limit, and reports the event's figures.
func (r *stormRun) finish(ctx context.Context, ev *stormEvent) error {
	waitUntil(ctx, r.size.limit, ev.name, func(context.Context) (bool, error) { //nolint:errcheck // a watcher not synced in time is a figure
		for _, sw := range ev.watchers {
			if !ev.ready(sw) {
				return false, nil
			}
		}
		return true, nil
	})
	spent := ev.meter.end(ctx)
	var secs []float64
	unsynced, reread, read := 0, 0, uint64(0)
	var counts []stormCounter // summed over the watchers
	for _, sw := range ev.watchers {
		if sw.counters != nil {
			now, then := sw.counters(), ev.counted[sw]
			for i, c := range now {
				if counts == nil || len(counts) < len(now) {
					counts = append(counts, stormCounter{name: c.name})
				}
				counts[i].value += c.value
				if i < len(then) {
					counts[i].value -= then[i].value
				}
			}
		}
		if at, ok := ev.readyAt(sw); ok {
			secs = append(secs, at.Sub(ev.t0).Seconds())
		} else {
			unsynced++
		}
		got := sw.received() - ev.before[sw]
		read += got
		if got >= stormStateSize {
			reread++
		}
	}
	r.unsynced += unsynced
	r.report(ev, secs, unsynced, reread, read, spent)
	for _, c := range counts {
		r.b.reportNote("storm_"+ev.name+"_"+c.name+"_"+r.side.name, float64(c.value), "times", "summed over the watchers (Stats)")
	}
	return nil
}

func (r *stormRun) report(ev *stormEvent, secs []float64, unsynced, reread int, read uint64, spent []serverSpent) {
	name := func(metric string) string { return "storm_" + ev.name + "_" + metric + "_" + r.side.name }
	n := len(ev.watchers)
	of := fmt.Sprintf("%d watchers", n)
	if len(secs) == 0 {
		secs = []float64{r.size.limit.Seconds()}
	}
	slices.Sort(secs)
	r.b.reportNote(name("synced_seconds_p50"), percentile(secs, 0.5), "s", of)
	r.b.reportNote(name("synced_seconds_p99"), percentile(secs, 0.99), "s", of)
	r.b.reportNote(name("synced_seconds_max"), secs[len(secs)-1], "s", of)
	r.b.reportNote(name("unsynced_watchers"), float64(unsynced), "watchers", "not synced again within "+r.size.limit.String())
	r.b.reportNote(name("entries_read_per_watcher"), float64(read)/float64(n), "entries", fmt.Sprintf("mean; its scopes hold %d", stormStateSize))
	r.b.reportNote(name("reread_share"), float64(reread)/float64(n), "share", fmt.Sprintf("watchers that read %d entries or more", stormStateSize))
	hub, edges := spent[0], spent[1:]
	touched := edges
	if ev.edges != nil {
		touched = nil
		for _, e := range ev.edges {
			touched = append(touched, edges[e])
		}
	}
	var edgeCPU time.Duration
	var edgeRSS uint64
	var edgeRate float64
	for _, e := range touched {
		edgeCPU += e.cpu
		edgeRSS = max(edgeRSS, e.peakRSSKiB)
		edgeRate = max(edgeRate, e.peakRate)
	}
	var api, apiErrs uint64
	var created int64
	var byKind [numAPIKinds]uint64
	for _, s := range spent {
		api += s.apiRequests
		apiErrs += s.apiErrs
		created += s.consumersCreated
		for k, n := range s.apiByKind {
			byKind[k] += n
		}
	}
	r.apiErrs += apiErrs
	edgesOf := fmt.Sprintf("%d edges touched, summed", len(touched))
	r.b.reportNote(name("edge_cpu_seconds"), edgeCPU.Seconds(), "s", edgesOf)
	r.b.reportNote(name("hub_cpu_seconds"), hub.cpu.Seconds(), "s", "")
	r.b.reportNote(name("edge_peak_rss_mib"), float64(edgeRSS)/1024, "MiB", "the largest touched edge's, sampled every "+stormMeterEvery.String())
	r.b.reportNote(name("hub_peak_rss_mib"), float64(hub.peakRSSKiB)/1024, "MiB", "sampled every "+stormMeterEvery.String())
	r.b.reportNote(name("api_requests"), float64(api), "requests", "JetStream API, every server")
	r.b.reportNote(name("api_errors"), float64(apiErrs), "errors", "JetStream API, every server")
	r.b.reportNote(name("api_peak_rate_edge"), edgeRate, "requests/s", "the busiest touched edge, over "+stormMeterEvery.String())
	r.b.reportNote(name("api_peak_rate_hub"), hub.peakRate, "requests/s", "over "+stormMeterEvery.String())
	r.b.reportNote(name("consumers_created"), float64(created), "consumers", "every server, by their advisories")
	for k := range numAPIKinds {
		r.b.reportNote(name("api_requests_"+k.String()), float64(byKind[k]), "requests", "every server, counted by subject on $JS.API.> (direct gets too)")
	}
}
