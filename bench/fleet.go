package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The fleet scenario measures the topology of DESIGN.md §4b: a hub server
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
	// hubRSSPerEdgeKiB is the hub's RSS growth from before the edges
	// started to every mirror synced, per edge.
	hubRSSPerEdgeKiB float64
	// memBefore and memAfter are each server's memory (hub first) before
	// the watchers started and after they synced.
	memBefore, memAfter []memReport
	// subscriptions are each server's subscription count (hub first) once
	// the watchers synced and the counts settled.
	subscriptions []int
	// hubCPU is the CPU time the hub used during the write rounds.
	hubCPU time.Duration
	// latencies are the delivery latencies of every watcher, in ms.
	latencies []float64
}

// runFleet measures each configuration on a fresh fleet and reports it,
// then the headline figures. It answers what DESIGN.md §4b claims: with
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
	res.hubRSSPerEdgeKiB = f.hubRSSPerEdgeKiB
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

// fleet is a running hub and its edges.
type fleet struct {
	hub   *childServer
	edges []*childServer
	// hubRSSPerEdgeKiB: see fleetResult.
	hubRSSPerEdgeKiB float64
}

// startFleet starts the hub with the bucket loaded (every key of every
// tenant), then the edges, each with its mirror, and returns once every
// mirror holds the bucket. The hub's RSS is measured before the edges and
// after their mirrors synced. On error nothing is left running.
func startFleet(ctx context.Context, cfg fleetConfig) (*fleet, error) {
	ports := make([]int, 2+cfg.edges) // hub leafnode, hub monitoring, each edge's monitoring
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	f := &fleet{}
	var err error
	f.hub, err = startFleetServer(&leafNode{Name: "hub", Domain: fleetHubDomain, HTTPPort: ports[1], ListenPort: ports[0], Isolate: cfg.isolated})
	if err != nil {
		return nil, err
	}
	last, err := loadHub(ctx, f.hub)
	if err != nil {
		f.stop()
		return nil, err
	}
	if cfg.edges == 0 {
		return f, nil
	}
	before, err := f.hub.mem(ctx)
	if err != nil {
		f.stop()
		return nil, err
	}
	for i := range cfg.edges {
		node := &leafNode{Name: fmt.Sprintf("edge%d", i+1), Domain: fmt.Sprintf("edge%d", i+1), HTTPPort: ports[2+i],
			Hub: fmt.Sprintf("nats-leaf://127.0.0.1:%d", ports[0])}
		if cfg.isolated {
			node.DenyImports = []string{fleetLocalDeny}
		}
		edge, err := startFleetServer(node)
		if err != nil {
			f.stop()
			return nil, err
		}
		f.edges = append(f.edges, edge)
	}
	for _, edge := range f.edges {
		if err := startMirror(ctx, edge, last); err != nil {
			f.stop()
			return nil, err
		}
	}
	after, err := f.hub.mem(ctx)
	if err != nil {
		f.stop()
		return nil, err
	}
	f.hubRSSPerEdgeKiB = (float64(after.RSSKiB) - float64(before.RSSKiB)) / float64(cfg.edges)
	return f, nil
}

// startFleetServer starts a server child of a fleet and connects to it.
func startFleetServer(node *leafNode) (*childServer, error) {
	store, err := os.MkdirTemp("", "kvwatchgen-bench-")
	if err != nil {
		return nil, err
	}
	srv, err := startChild(&childServer{store: store, leaf: node})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", node.Name, err)
	}
	return srv, nil
}

// loadHub creates the bucket on the hub and writes every key of every
// tenant; it returns the last revision.
func loadHub(ctx context.Context, hub *childServer) (uint64, error) {
	if _, err := hub.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: fleetBucket, History: 1, Storage: jetstream.FileStorage}); err != nil {
		return 0, fmt.Errorf("bucket on the hub: %w", err)
	}
	n := fleetTenants * fleetKeysPerTenant
	last, err := hub.load(ctx, loadRequest{Bucket: fleetBucket, Prefixes: fleetTenants, PerPrefix: fleetKeysPerTenant, Count: n, ValueSize: fleetValueSize})
	if err != nil {
		return 0, fmt.Errorf("loading the hub: %w", err)
	}
	return last, nil
}

// startMirror waits until the edge is linked to the hub, creates its
// mirror of the bucket, and waits until the mirror holds revision last
// and hears from its origin.
func startMirror(ctx context.Context, edge *childServer, last uint64) error {
	name := edge.leaf.Name
	err := waitUntil(ctx, 30*time.Second, name+" linked to the hub", func(ctx context.Context) (bool, error) {
		v, err := edge.varz(ctx)
		return err == nil && v.Leafnodes > 0, err
	})
	if err != nil {
		return err
	}
	_, err = edge.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: fleetBucket, History: 1, Storage: jetstream.FileStorage,
		Mirror: &jetstream.StreamSource{Name: fleetBucket, Domain: fleetHubDomain}})
	if err != nil {
		return fmt.Errorf("mirror on %s: %w", name, err)
	}
	return waitUntil(ctx, 60*time.Second, fmt.Sprintf("the mirror on %s holding revision %d", name, last), func(ctx context.Context) (bool, error) {
		s, err := edge.js.Stream(ctx, fleetStream)
		if err != nil {
			return false, err
		}
		info := s.CachedInfo()
		return info.State.LastSeq >= last && info.Mirror != nil && info.Mirror.Active >= 0, nil
	})
}

// servers is the hub, then the edges.
func (f *fleet) servers() []*childServer {
	return append([]*childServer{f.hub}, f.edges...)
}

// stop ends every server of the fleet.
func (f *fleet) stop() {
	for _, s := range f.servers() {
		if s != nil {
			s.stop()
		}
	}
}

// mem is each server's memory (hub first), measured after a GC in it.
func (f *fleet) mem(ctx context.Context) ([]memReport, error) {
	var out []memReport
	for _, s := range f.servers() {
		m, err := s.mem(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// consumers counts the consumers on the hub's stream and on each edge's
// mirror. A mirror's own consumer on its origin is internal: the hub does
// not count it (NATS-FACTS.md, Consumers).
func (f *fleet) consumers(ctx context.Context) (origin int, edges []int, err error) {
	count := func(s *childServer) (int, error) {
		st, err := s.js.Stream(ctx, fleetStream)
		if err != nil {
			return 0, err
		}
		return st.CachedInfo().State.Consumers, nil
	}
	if origin, err = count(f.hub); err != nil {
		return 0, nil, fmt.Errorf("consumers on the hub: %w", err)
	}
	for _, e := range f.edges {
		n, err := count(e)
		if err != nil {
			return 0, nil, fmt.Errorf("consumers on %s: %w", e.leaf.Name, err)
		}
		edges = append(edges, n)
	}
	return origin, edges, nil
}

// settledSubscriptions returns each server's subscription count (hub
// first, from /varz) once no count changed for a second: interest
// spreads across leafnode links a little after the watchers subscribe.
func (f *fleet) settledSubscriptions(ctx context.Context) ([]int, error) {
	const still = time.Second
	var last []int
	var since time.Time
	err := waitUntil(ctx, 30*time.Second, "subscription counts settled", func(ctx context.Context) (bool, error) {
		var now []int
		for _, s := range f.servers() {
			v, err := s.varz(ctx)
			if err != nil {
				return false, err
			}
			now = append(now, v.Subscriptions)
		}
		if !slices.Equal(now, last) {
			last, since = now, time.Now()
		}
		return time.Since(since) >= still, nil
	})
	return last, err
}

// waitUntil checks cond every 10 ms until it holds, for at most limit. The
// error names what was awaited, with cond's last error if any.
func waitUntil(ctx context.Context, limit time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("%s: not within %s: %w", what, limit, lastErr)
			}
			return fmt.Errorf("%s: not within %s: %w", what, limit, ctx.Err())
		case <-tick.C:
		}
	}
}

// fleetWatcher is one fleet node: a generated watcher on a connection of
// its own, recording when each live change reaches its handler.
type fleetWatcher struct {
	tenants  []int
	received *atomic.Int64 // every watcher's live changes, for the rounds
	nc       *nats.Conn
	w        *benchkv.BenchWatcher

	mu       sync.Mutex
	arrivals []arrival
	errs     []error
}

// arrival is a live change at a watcher's handler.
type arrival struct {
	rev uint64
	at  time.Time
}

func (fw *fleetWatcher) onItem(ev benchkv.ItemEvent) {
	if ev.Initial {
		return
	}
	at := time.Now()
	fw.mu.Lock()
	fw.arrivals = append(fw.arrivals, arrival{rev: ev.Revision, at: at})
	fw.mu.Unlock()
	fw.received.Add(1)
}

func (fw *fleetWatcher) onError(err error) {
	fw.mu.Lock()
	fw.errs = append(fw.errs, err)
	fw.mu.Unlock()
}

// start connects to url and returns once the watcher is synced.
func (fw *fleetWatcher) start(ctx context.Context, url string, opts ...nats.Option) error {
	nc, js, err := dial(url, opts...)
	if err != nil {
		return err
	}
	scopes := benchkv.BenchScopes{}
	for _, t := range fw.tenants {
		scopes.Prefix = append(scopes.Prefix, strconv.Itoa(t))
	}
	w, err := watchSynced(ctx, js, scopes, benchkv.BenchHandlers{OnItem: fw.onItem, OnError: fw.onError})
	if err != nil {
		nc.Close()
		return err
	}
	fw.nc, fw.w = nc, w
	return nil
}

// fleetWatchers are the watchers of a configuration.
type fleetWatchers struct {
	all      []*fleetWatcher
	received atomic.Int64
}

// startFleetWatchers starts cfg.watchers watchers, fleetStartParallel at a
// time, and returns once every one is synced. Watcher i watches tenants
// 3i, 3i+1, 3i+2 (mod 50) on edge i mod E (on the hub when E = 0). On
// error none is left running.
func startFleetWatchers(ctx context.Context, f *fleet, cfg fleetConfig) (*fleetWatchers, error) {
	ws := &fleetWatchers{}
	for i := range cfg.watchers {
		fw := &fleetWatcher{received: &ws.received}
		for k := range fleetScopesPerWatcher {
			fw.tenants = append(fw.tenants, (fleetScopesPerWatcher*i+k)%fleetTenants)
		}
		ws.all = append(ws.all, fw)
	}
	var opts []nats.Option
	if cfg.isolated {
		opts = append(opts, nats.CustomInboxPrefix(fleetLocalInbox))
	}
	err := forEachParallel(len(ws.all), func(i int) error {
		srv := f.hub
		if cfg.edges > 0 {
			srv = f.edges[i%cfg.edges]
		}
		if err := ws.all[i].start(ctx, srv.URL, opts...); err != nil {
			return fmt.Errorf("watcher %d: %w", i+1, err)
		}
		return nil
	})
	if err != nil {
		ws.stop()
		return nil, err
	}
	return ws, nil
}

// forEachParallel calls fn(0) … fn(n-1), fleetStartParallel at a time,
// and returns the first error; after one, no further call starts.
func forEachParallel(n int, fn func(i int) error) error {
	next := make(chan int)
	var failed atomic.Bool
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range fleetStartParallel {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					failed.Store(true)
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := 0; i < n && !failed.Load(); i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// stop stops every watcher that started and closes its connection.
func (ws *fleetWatchers) stop() {
	forEachParallel(len(ws.all), func(i int) error {
		if fw := ws.all[i]; fw.w != nil {
			fw.w.Stop()
			fw.nc.Close()
		}
		return nil
	})
}

// fleetWrites are the writes of the rounds: when each revision was sent,
// and the revisions written to each tenant, in order.
type fleetWrites struct {
	sentAt   map[uint64]time.Time
	byTenant [][]uint64
}

// writeRounds writes rounds rounds at the hub, on the scenario's own
// connection to it: in each, one key of every tenant, one put after the
// other, each timed just before it is sent; then it waits until every
// watcher has each write to its scopes (3 per watcher a round), for at
// most 60 s, before the next round.
func writeRounds(ctx context.Context, hub *childServer, ws *fleetWatchers, rounds int) (fleetWrites, error) {
	writes := fleetWrites{sentAt: map[uint64]time.Time{}, byTenant: make([][]uint64, fleetTenants)}
	kv, err := hub.js.KeyValue(ctx, fleetBucket)
	if err != nil {
		return writes, err
	}
	perRound := int64(0)
	for _, fw := range ws.all {
		perRound += int64(len(fw.tenants))
	}
	for r := range rounds {
		for t := range fleetTenants {
			id := r % fleetKeysPerTenant
			key := fmt.Sprintf("p.%d.item.%d", t, id)
			sent := time.Now()
			rev, err := kv.Put(ctx, key, itemValue(t*fleetKeysPerTenant+id, r+1, fleetValueSize))
			if err != nil {
				return writes, fmt.Errorf("round %d: put %s: %w", r+1, key, err)
			}
			writes.sentAt[rev] = sent
			writes.byTenant[t] = append(writes.byTenant[t], rev)
		}
		want := perRound * int64(r+1)
		err := waitUntil(ctx, 60*time.Second, fmt.Sprintf("round %d delivered", r+1), func(context.Context) (bool, error) {
			return ws.received.Load() >= want, nil
		})
		if err != nil {
			return writes, fmt.Errorf("%w (%d of %d changes)", err, ws.received.Load(), want)
		}
	}
	return writes, nil
}

// check compares what each watcher received live with what was written
// to its tenants: every revision once, in revision order, and no error
// reported to its OnError. It returns every delivery's latency from the
// put's send to the handler, in ms.
func (ws *fleetWatchers) check(writes fleetWrites) ([]float64, error) {
	var latencies []float64
	var errs []error
	for i, fw := range ws.all {
		var want []uint64
		for _, t := range fw.tenants {
			want = append(want, writes.byTenant[t]...)
		}
		slices.Sort(want)
		fw.mu.Lock()
		got := slices.Clone(fw.arrivals)
		reported := slices.Clone(fw.errs)
		fw.mu.Unlock()
		if err := checkArrivals(want, got); err != nil {
			errs = append(errs, fmt.Errorf("watcher %d (tenants %v): %w", i+1, fw.tenants, err))
		}
		if len(reported) > 0 {
			errs = append(errs, fmt.Errorf("watcher %d: %d errors reported, the first: %w", i+1, len(reported), reported[0]))
		}
		for _, a := range got {
			if sent, ok := writes.sentAt[a.rev]; ok {
				latencies = append(latencies, float64(a.at.Sub(sent))/float64(time.Millisecond))
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%d of %d watchers wrong: %w", len(errs), len(ws.all), errors.Join(errs[:min(len(errs), 5)]...))
	}
	return latencies, nil
}

// checkArrivals says how got differs from want (sorted revisions): missing,
// duplicated, unexpected or out-of-order changes.
func checkArrivals(want []uint64, got []arrival) error {
	seen := map[uint64]int{}
	var outOfOrder, unexpected int
	for i, a := range got {
		seen[a.rev]++
		if i > 0 && a.rev < got[i-1].rev {
			outOfOrder++
		}
		if _, ok := slices.BinarySearch(want, a.rev); !ok {
			unexpected++
		}
	}
	var missing, duplicated int
	for _, rev := range want {
		switch n := seen[rev]; {
		case n == 0:
			missing++
		case n > 1:
			duplicated += n - 1
		}
	}
	if missing+duplicated+unexpected+outOfOrder > 0 {
		return fmt.Errorf("%d missing, %d duplicated, %d unexpected, %d out of order of %d changes", missing, duplicated, unexpected, outOfOrder, len(want))
	}
	return nil
}

// percentile is the nearest-rank p-th percentile (0 < p <= 1) of xs, which
// it sorts; NaN for none.
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return xs[max(int(math.Ceil(p*float64(len(xs))))-1, 0)]
}

// reportFleet reports one configuration's figures, suffixed with its name.
func reportFleet(b *bench, res fleetResult, rounds int) {
	cfg, s := res.cfg, "_"+res.cfg.name()
	b.reportNote("fleet_sync_seconds"+s, res.syncTime.Seconds(), "s",
		fmt.Sprintf("%d watchers started, %d at a time, until the last synced", cfg.watchers, fleetStartParallel))
	b.report("fleet_origin_watcher_consumers"+s, float64(res.originConsumers), "consumers")
	rss, heap := res.growth(0)
	b.reportNote("fleet_hub_rss_mib"+s, float64(res.memAfter[0].RSSKiB)/1024, "MiB", "after the watchers synced")
	b.report("fleet_hub_rss_per_watcher_kib"+s, rss/float64(cfg.watchers), "KiB")
	b.reportNote("fleet_hub_heap_per_watcher_kib"+s, heap/float64(cfg.watchers), "KiB", "Go heap in use after GC")
	b.reportNote("fleet_hub_subscriptions"+s, float64(res.subscriptions[0]), "subscriptions", "/varz, once settled")
	if cfg.edges > 0 {
		b.reportNote("fleet_consumers_per_edge"+s, mean(intsToFloats(res.edgeConsumers)), "consumers",
			fmt.Sprintf("min %d, max %d", slices.Min(res.edgeConsumers), slices.Max(res.edgeConsumers)))
		b.report("fleet_hub_rss_per_edge_kib"+s, res.hubRSSPerEdgeKiB, "KiB")
		var rssPer, heapPer []float64
		for i := range res.edgeConsumers {
			rss, heap := res.growth(1 + i)
			rssPer = append(rssPer, rss/float64(watchersOn(cfg, i)))
			heapPer = append(heapPer, heap/float64(watchersOn(cfg, i)))
		}
		b.reportNote("fleet_edge_rss_per_watcher_kib"+s, mean(rssPer), "KiB", "mean over the edges")
		b.reportNote("fleet_edge_heap_per_watcher_kib"+s, mean(heapPer), "KiB", "mean over the edges; Go heap in use after GC")
		b.reportNote("fleet_edge_subscriptions"+s, mean(intsToFloats(res.subscriptions[1:])), "subscriptions", "mean over the edges")
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
	b.reportNote("fleet_origin_watcher_consumers", float64(edge.originConsumers), "consumers", note)
	b.reportNote("fleet_hub_rss_per_edge_kib", edge.hubRSSPerEdgeKiB, "KiB", note)
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
