package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// The fleet scenario measures the topology of docs/fleet.md: a hub server
// (JetStream domain "hub") holds the bucket; E edge servers, each a leaf
// node of the hub with a domain of its own, hold a KV mirror named like
// it; W watchers (fleet nodes), each a generated watcher on a connection
// of its own, watch their edge's mirror (the hub's bucket when E = 0).
// Every server is a child process of its own, so that memory is per
// server. A fresh fleet per configuration.

// The data: fleetTenants scopes ("p.<t>") of fleetKeysPerTenant keys of
// ~fleetValueSize bytes; each watcher watches fleetScopesPerWatcher of
// them, as NATS-FACTS.md "Fleet scale" measured.
const (
	fleetBucket           = "bench"
	fleetStream           = "KV_" + fleetBucket
	fleetHubDomain        = "hub"
	fleetTenants          = 50
	fleetKeysPerTenant    = 10
	fleetScopesPerWatcher = 3
	fleetValueSize        = 200
	// fleetStartParallel is how many watchers start at once.
	fleetStartParallel = 8
	// fleetLocalInbox is the watchers' inbox prefix with the recommended
	// settings; edges deny it on their leaf remote (fleetLocalDeny).
	fleetLocalInbox = "_LOCAL"
	fleetLocalDeny  = fleetLocalInbox + ".>"
)

// fleetConfig is one configuration: edges (0: every watcher on the hub),
// watchers, and whether the recommended settings are on (hub
// isolate_leafnode_interest; watcher inboxes under _LOCAL, denied on each
// edge's leaf remote, so that their reply subscriptions stay on the edge).
type fleetConfig struct {
	edges, watchers int
	isolated        bool
}

// name is the figures' suffix: e4_w2000, e4_w2000_isolated.
func (c fleetConfig) name() string {
	n := fmt.Sprintf("e%d_w%d", c.edges, c.watchers)
	if c.isolated {
		n += "_isolated"
	}
	return n
}

// fleetConfigs are the configurations of the run: all on the hub, 2 edges,
// 4 edges, and 4 edges with the recommended settings.
func fleetConfigs(b *bench) []fleetConfig {
	if b.tiny {
		return []fleetConfig{{edges: 0, watchers: 4}, {edges: 1, watchers: 4}, {edges: 1, watchers: 4, isolated: true}}
	}
	small, large := b.pick(1000, 200, 4), b.pick(2000, 400, 4)
	return []fleetConfig{{edges: 0, watchers: small}, {edges: 2, watchers: small}, {edges: 4, watchers: large}, {edges: 4, watchers: large, isolated: true}}
}

// fleetResult is what one configuration measured.
type fleetResult struct {
	cfg fleetConfig
	// syncTime is from the first watcher's start to the last one synced.
	syncTime time.Duration
	// originConsumers are the consumers on the hub's stream, edgeConsumers
	// those on each edge's mirror, after every watcher synced.
	originConsumers int
	edgeConsumers   []int
	// hubBeforeEdges and hubAfterEdges are the hub's memory before the
	// edges started and once every mirror synced.
	hubBeforeEdges, hubAfterEdges memReport
	// memBefore and memAfter are each server's memory (hub first) before
	// the watchers started and after they synced.
	memBefore, memAfter []memReport
	// subscriptions are each server's subscription count (hub first) once
	// the watchers synced and the counts settled; interestFromHub, at the
	// same time, the subscriptions the hub had sent each edge.
	subscriptions   []int
	interestFromHub []int
	// hubCPU is the CPU time the hub used during the write rounds.
	hubCPU time.Duration
	// latencies are the delivery latencies of every watcher, in ms.
	latencies []float64
}

// runFleet measures each configuration on a fresh fleet and reports it,
// then the headline figures. It answers what docs/fleet.md claims: with
// watchers on edges the hub carries no watcher consumer (the scenario
// fails otherwise) and little memory per watcher, each edge pays for its
// own watchers, a write reaches every watcher of its scope within a few
// milliseconds more than on the hub, and the recommended settings keep
// the watchers' reply subscriptions off the hub.
func runFleet(ctx context.Context, b *bench) error {
	rounds := b.pick(30, 20, 3)
	var results []fleetResult
	for _, cfg := range fleetConfigs(b) {
		res, err := measureFleet(ctx, cfg, rounds)
		if err != nil {
			return fmt.Errorf("%s: %w", cfg.name(), err)
		}
		reportFleet(b, res, rounds)
		results = append(results, res)
	}
	return reportFleetHeadlines(b, results)
}

// measureFleet starts the fleet of cfg, starts the watchers, writes rounds
// rounds at the hub and measures what it costs the servers and how long
// each write takes to reach its watchers. Every watcher must receive
// every write to its scopes once and in order.
func measureFleet(ctx context.Context, cfg fleetConfig, rounds int) (fleetResult, error) {
	res := fleetResult{cfg: cfg}
	f, err := startFleet(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer f.stop()
	res.hubBeforeEdges, res.hubAfterEdges = f.hubBeforeEdges, f.hubAfterEdges
	if res.memBefore, err = f.mem(ctx); err != nil {
		return res, err
	}
	start := time.Now()
	ws, err := startFleetWatchers(ctx, f, cfg)
	if err != nil {
		return res, err
	}
	defer ws.stop()
	res.syncTime = time.Since(start)
	if res.subscriptions, err = f.settledSubscriptions(ctx); err != nil {
		return res, err
	}
	for _, e := range f.edges {
		n, err := e.interestFromHub(ctx)
		if err != nil {
			return res, err
		}
		res.interestFromHub = append(res.interestFromHub, n)
	}
	if res.memAfter, err = f.mem(ctx); err != nil {
		return res, err
	}
	if res.originConsumers, res.edgeConsumers, err = f.consumers(ctx); err != nil {
		return res, err
	}
	if cfg.edges > 0 && res.originConsumers != 0 {
		return res, fmt.Errorf("%d watcher consumers on the hub's stream with every watcher on an edge, want 0", res.originConsumers)
	}
	cpuBefore := cpuTime(f.hub.cmd.Process.Pid)
	writes, err := writeRounds(ctx, f.hub, ws, rounds)
	if err != nil {
		return res, err
	}
	res.hubCPU = cpuTime(f.hub.cmd.Process.Pid) - cpuBefore
	res.latencies, err = ws.check(writes)
	return res, err
}

// reportFleet reports one configuration's figures, suffixed with its name.
func reportFleet(b *bench, res fleetResult, rounds int) {
	cfg, s := res.cfg, "_"+res.cfg.name()
	b.reportNote("fleet_sync_seconds"+s, res.syncTime.Seconds(), "s",
		fmt.Sprintf("%d watchers started, %d at a time, until the last synced", cfg.watchers, fleetStartParallel))
	b.report("fleet_origin_watcher_consumers"+s, float64(res.originConsumers), "consumers")
	rss, heap := res.growth(0)
	live := res.liveGrowth(0)
	b.reportNote("fleet_hub_rss_mib"+s, float64(res.memAfter[0].RSSKiB)/1024, "MiB", "after the watchers synced")
	b.reportNote("fleet_hub_rss_growth_kib"+s, rss, "KiB", "from before the watchers started to every one synced")
	b.reportNote("fleet_hub_live_heap_growth_kib"+s, live, "KiB", "Go heap reachable after GC, same span")
	b.report("fleet_hub_rss_per_watcher_kib"+s, rss/float64(cfg.watchers), "KiB")
	b.reportNote("fleet_hub_heap_per_watcher_kib"+s, heap/float64(cfg.watchers), "KiB", "Go heap in use after GC")
	b.reportNote("fleet_hub_live_heap_per_watcher_kib"+s, live/float64(cfg.watchers), "KiB", "Go heap reachable after GC")
	b.reportNote("fleet_hub_subscriptions"+s, float64(res.subscriptions[0]), "subscriptions", "/varz, once settled")
	if cfg.edges > 0 {
		b.reportNote("fleet_consumers_per_edge"+s, mean(intsToFloats(res.edgeConsumers)), "consumers",
			fmt.Sprintf("min %d, max %d", slices.Min(res.edgeConsumers), slices.Max(res.edgeConsumers)))
		edgesRSS, edgesLive := res.hubEdgesGrowth()
		b.reportNote("fleet_hub_rss_growth_edges_kib"+s, edgesRSS, "KiB",
			fmt.Sprintf("hub, from before the %d edges started to every mirror synced", cfg.edges))
		b.reportNote("fleet_hub_live_heap_growth_edges_kib"+s, edgesLive, "KiB", "Go heap reachable after GC, same span")
		b.report("fleet_hub_rss_per_edge_kib"+s, edgesRSS/float64(cfg.edges), "KiB")
		var rssPer, heapPer, livePer, rssGrowth, rssBefore []float64
		for i := range res.edgeConsumers {
			rss, heap := res.growth(1 + i)
			n := float64(watchersOn(cfg, i))
			rssPer = append(rssPer, rss/n)
			heapPer = append(heapPer, heap/n)
			livePer = append(livePer, res.liveGrowth(1+i)/n)
			rssGrowth = append(rssGrowth, rss)
			rssBefore = append(rssBefore, float64(res.memBefore[1+i].RSSKiB)/1024)
		}
		b.reportNote("fleet_edge_rss_mib_before_watchers"+s, mean(rssBefore), "MiB", "mean over the edges, mirror synced")
		b.reportNote("fleet_edge_rss_growth_kib"+s, mean(rssGrowth), "KiB", "mean over the edges")
		b.reportNote("fleet_edge_rss_per_watcher_kib"+s, mean(rssPer), "KiB", "mean over the edges")
		b.reportNote("fleet_edge_heap_per_watcher_kib"+s, mean(heapPer), "KiB", "mean over the edges; Go heap in use after GC")
		b.reportNote("fleet_edge_live_heap_per_watcher_kib"+s, mean(livePer), "KiB", "mean over the edges; Go heap reachable after GC")
		b.reportNote("fleet_edge_subscriptions"+s, mean(intsToFloats(res.subscriptions[1:])), "subscriptions",
			fmt.Sprintf("mean over the edges; min %d, max %d", slices.Min(res.subscriptions[1:]), slices.Max(res.subscriptions[1:])))
	}
	b.reportNote("fleet_hub_cpu_ms_per_round"+s, float64(res.hubCPU)/float64(time.Millisecond)/float64(rounds), "ms",
		fmt.Sprintf("hub CPU time over the %d rounds, per round of %d writes", rounds, fleetTenants))
	b.reportNote("fleet_deliveries"+s, float64(len(res.latencies)), "changes",
		fmt.Sprintf("%d rounds x %d writes; none missing, duplicated or out of order", rounds, fleetTenants))
	b.report("fleet_delivery_p50_ms"+s, percentile(res.latencies, 0.50), "ms")
	b.report("fleet_delivery_p99_ms"+s, percentile(res.latencies, 0.99), "ms")
}

// growth is server i's RSS and Go heap growth (KiB) from before the
// watchers started to after they synced.
func (res fleetResult) growth(i int) (rss, heap float64) {
	before, after := res.memBefore[i], res.memAfter[i]
	return float64(after.RSSKiB) - float64(before.RSSKiB), float64(after.HeapKiB) - float64(before.HeapKiB)
}

// liveGrowth is server i's growth of reachable Go heap (KiB) over the
// same span as growth.
func (res fleetResult) liveGrowth(i int) float64 {
	return float64(res.memAfter[i].LiveHeapKiB) - float64(res.memBefore[i].LiveHeapKiB)
}

// hubEdgesGrowth is the hub's RSS and reachable-heap growth (KiB) from
// before the edges started to every mirror synced.
func (res fleetResult) hubEdgesGrowth() (rss, live float64) {
	before, after := res.hubBeforeEdges, res.hubAfterEdges
	return float64(after.RSSKiB) - float64(before.RSSKiB), float64(after.LiveHeapKiB) - float64(before.LiveHeapKiB)
}

// watchersOn is the number of watchers on edge i (watcher j is on edge
// j mod E).
func watchersOn(cfg fleetConfig, i int) int {
	n := cfg.watchers / cfg.edges
	if i < cfg.watchers%cfg.edges {
		n++
	}
	return n
}

// reportFleetHeadlines reports the headline figures: those of the largest
// edge configuration with default settings (most edges, then most
// watchers), and the hub's subscriptions with the recommended settings
// (the largest such configuration).
func reportFleetHeadlines(b *bench, results []fleetResult) error {
	largest := func(isolated bool) *fleetResult {
		var best *fleetResult
		for i := range results {
			r := &results[i]
			if r.cfg.edges == 0 || r.cfg.isolated != isolated {
				continue
			}
			if best == nil || r.cfg.edges > best.cfg.edges || (r.cfg.edges == best.cfg.edges && r.cfg.watchers > best.cfg.watchers) {
				best = r
			}
		}
		return best
	}
	edge, isolated := largest(false), largest(true)
	if edge == nil || isolated == nil {
		return errors.New("no edge configuration, or none with the recommended settings")
	}
	note := edge.cfg.name()
	rss, _ := edge.hubEdgesGrowth()
	b.reportNote("fleet_origin_watcher_consumers", float64(edge.originConsumers), "consumers", note)
	b.reportNote("fleet_hub_rss_per_edge_kib", rss/float64(edge.cfg.edges), "KiB", note)
	b.reportNote("fleet_delivery_p50_ms", percentile(edge.latencies, 0.50), "ms", note)
	b.reportNote("fleet_delivery_p99_ms", percentile(edge.latencies, 0.99), "ms", note)
	b.reportNote("fleet_hub_subscriptions_isolated", float64(isolated.subscriptions[0]), "subscriptions", isolated.cfg.name())
	return nil
}

// mean is the mean of xs, NaN for none.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func intsToFloats(xs []int) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}
