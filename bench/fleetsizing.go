package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The fleet-sizing scenario separates what the fleet scenario's single
// configurations cannot: the hub's cost per edge and per watcher, apart
// from its fixed costs (one configuration's growth divided by its edges
// or watchers holds a share of those, and noise of the same size as the
// costs sought). It runs the fleet scenario's measurement (measureFleet)
// on fleets of several sizes, each with default and with the recommended
// settings, several times, and fits, within each run and setting, least
// squares lines across the sizes:
//
//   - hub RSS growth while the edges start and their mirrors sync
//     = a + per edge × E;
//   - hub RSS growth while the watchers start and sync
//     = a + per watcher × W + per watcher per other edge × W(E−1): with
//     default settings the hub passes each edge's interest on to every
//     other edge and keeps, per leafnode connection, what it sent;
//   - hub subscriptions (/varz) = a + per edge × E + per watcher × W;
//   - subscriptions the hub sent each edge (its /leafz)
//     = a + per other edge × (E−1) + per other watcher × (W − own);
//   - each edge's RSS growth while the watchers start
//     = a + per own watcher × own + per other watcher × (W − own);
//
// and, within each number of edges of two sizes or more, the hub's RSS
// growth per watcher (the plain slope over W). Each fitted cost is
// reported as the median over the runs, with its min and max.

// fleetSizingDefault are the sizes of a full run: more watchers per edge
// (W = 250 → 1,000 at E = 2 and 8) and more edges of fewer watchers
// (E = 2 → 8 at W = 250 and 1,000). Three runs of them, with both
// settings, took 5–6 minutes on BENCHMARKS.md's 2 cores; the fleet's
// memory is measured before the write rounds, so larger sizes cost
// mostly the time to start and sync their watchers.
const fleetSizingDefault = "e2_w250,e2_w1000,e8_w250,e8_w1000"

// fleetOptions are the fleet-sizing scenario's flags: the sizes (none:
// the mode's own) and the runs (0: the mode's own).
type fleetOptions struct {
	sizes []fleetConfig
	runs  int
}

// parseFleetSizes reads a comma-separated list of sizes as
// fleetConfig.name writes them, without settings: "e2_w250,e8_w1000".
func parseFleetSizes(list string) ([]fleetConfig, error) {
	var out []fleetConfig
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		e, w, ok := strings.Cut(item, "_")
		edges, err1 := strconv.Atoi(strings.TrimPrefix(e, "e"))
		watchers, err2 := strconv.Atoi(strings.TrimPrefix(w, "w"))
		if !ok || !strings.HasPrefix(e, "e") || !strings.HasPrefix(w, "w") || err1 != nil || err2 != nil || edges < 1 || watchers < 1 {
			return nil, fmt.Errorf("fleet size %q: want e<edges>_w<watchers>, edges and watchers 1 or more", item)
		}
		out = append(out, fleetConfig{edges: edges, watchers: watchers})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("fleet sizes %q: none given", list)
	}
	return out, nil
}

// fleetSizingPlan is what the run measures: the sizes, how many times,
// and the write rounds of each fleet (they only check that every watcher
// works: memory and subscriptions are measured before them).
func fleetSizingPlan(b *bench) (sizes []fleetConfig, runs, rounds int) {
	list := fleetSizingDefault
	switch {
	case b.tiny:
		list = "e1_w2,e1_w4,e2_w4"
	case b.quick:
		list = "e2_w100,e2_w300,e4_w100,e4_w300"
	}
	sizes, err := parseFleetSizes(list)
	if err != nil {
		panic(err) // the lists above parse
	}
	if len(b.fleet.sizes) > 0 {
		sizes = b.fleet.sizes
	}
	runs = b.pick(3, 1, 1)
	if b.fleet.runs > 0 {
		runs = b.fleet.runs
	}
	return sizes, runs, b.pick(2, 1, 1)
}

// runFleetSizing measures every size with both settings, run after run
// (a fresh fleet each time, the settings side by side so that the
// machine's drift meets both alike), then reports each configuration's
// figures and the fitted costs.
func runFleetSizing(ctx context.Context, b *bench) error {
	sizes, runs, rounds := fleetSizingPlan(b)
	var all [][]fleetResult
	for r := range runs {
		var run []fleetResult
		for _, size := range sizes {
			for _, isolated := range []bool{false, true} {
				cfg := fleetConfig{edges: size.edges, watchers: size.watchers, isolated: isolated}
				res, err := measureFleet(ctx, cfg, rounds)
				if err != nil {
					return fmt.Errorf("run %d, %s: %w", r+1, cfg.name(), err)
				}
				run = append(run, res)
			}
		}
		all = append(all, run)
	}
	reportSizingConfigs(b, all)
	reportSizingFits(b, all)
	return nil
}

// spread is a figure's values over the runs.
type spread []float64

func (s spread) median() float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	xs := slices.Sorted(slices.Values(s))
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// note says how many runs, and the range when more than one.
func (s spread) note() string {
	if len(s) == 1 {
		return "1 run"
	}
	return fmt.Sprintf("median of %d runs, min %s, max %s", len(s), formatValue(slices.Min(s)), formatValue(slices.Max(s)))
}

// reportSizingConfigs reports, per configuration, the medians over the
// runs of what the fits are made of.
func reportSizingConfigs(b *bench, all [][]fleetResult) {
	type perConfig struct {
		name string
		get  func(r fleetResult) float64
		unit string
		what string
	}
	edgesMean := func(r fleetResult, f func(i int) float64) float64 {
		var xs []float64
		for i := range r.cfg.edges {
			xs = append(xs, f(i))
		}
		return mean(xs)
	}
	figures := []perConfig{
		{"fleet_sizing_hub_rss_growth_edges_kib", func(r fleetResult) float64 { rss, _ := r.hubEdgesGrowth(); return rss },
			"KiB", "hub, from before the edges started to every mirror synced"},
		{"fleet_sizing_hub_live_heap_growth_edges_kib", func(r fleetResult) float64 { _, live := r.hubEdgesGrowth(); return live },
			"KiB", "hub, Go heap reachable after GC, same span"},
		{"fleet_sizing_hub_rss_growth_watchers_kib", func(r fleetResult) float64 { rss, _ := r.growth(0); return rss },
			"KiB", "hub, from before the watchers started to every one synced"},
		{"fleet_sizing_hub_subscriptions", func(r fleetResult) float64 { return float64(r.subscriptions[0]) },
			"subscriptions", "hub, /varz"},
		{"fleet_sizing_edge_subscriptions", func(r fleetResult) float64 { return mean(intsToFloats(r.subscriptions[1:])) },
			"subscriptions", "mean over the edges, /varz"},
		{"fleet_sizing_edge_subscriptions_from_hub", func(r fleetResult) float64 { return mean(intsToFloats(r.interestFromHub)) },
			"subscriptions", "mean over the edges: what the hub sent each (/leafz)"},
		{"fleet_sizing_edge_rss_per_watcher_kib", func(r fleetResult) float64 {
			return edgesMean(r, func(i int) float64 { rss, _ := r.growth(1 + i); return rss / float64(watchersOn(r.cfg, i)) })
		}, "KiB", "mean over the edges of RSS growth per own watcher"},
		{"fleet_sizing_sync_seconds", func(r fleetResult) float64 { return r.syncTime.Seconds() },
			"s", "every watcher started and synced"},
	}
	for i, first := range all[0] {
		for _, fig := range figures {
			var s spread
			for _, run := range all {
				s = append(s, fig.get(run[i]))
			}
			b.reportNote(fig.name+"_"+first.cfg.name(), s.median(), fig.unit, fig.what+"; "+s.note())
		}
	}
}

// fleetCost is one fitted cost.
type fleetCost struct {
	name string // without the settings' suffix
	unit string
	what string
}

// fleetCosts fits the costs of one run's results with one setting (see
// the scenario's comment); a cost the sizes do not determine (e.g. per
// edge with one number of edges) is left out.
func fleetCosts(results []fleetResult, isolated bool) map[fleetCost]float64 {
	var rs []fleetResult
	for _, r := range results {
		if r.cfg.isolated == isolated && r.cfg.edges > 0 {
			rs = append(rs, r)
		}
	}
	out := map[fleetCost]float64{}
	fit := func(X [][]float64, y []float64, costs ...fleetCost) {
		coef, ok := leastSquares(X, y)
		if !ok {
			return
		}
		for i, c := range costs {
			if c.name != "" {
				// To a millionth: a count fitted exactly reads 2, not
				// 1.9999999999 or -0.000.
				out[c] = math.Round(coef[i]*1e6) / 1e6
			}
		}
	}
	// Per edge: the hub while the edges start.
	var X [][]float64
	var rss, live []float64
	for _, r := range rs {
		X = append(X, []float64{1, float64(r.cfg.edges)})
		g, l := r.hubEdgesGrowth()
		rss, live = append(rss, g), append(live, l)
	}
	fit(X, rss, fleetCost{}, fleetCost{"hub_rss_kib_per_edge", "KiB", "hub RSS per edge (its leafnode connection and mirror consumer)"})
	fit(X, live, fleetCost{}, fleetCost{"hub_live_heap_kib_per_edge", "KiB", "hub Go heap reachable after GC, per edge"})

	// Per watcher: the hub while the watchers start.
	X, rss = nil, nil
	var hubSubs []float64
	var XSubs [][]float64
	for _, r := range rs {
		w, e := float64(r.cfg.watchers), float64(r.cfg.edges)
		X = append(X, []float64{1, w, w * (e - 1)})
		g, _ := r.growth(0)
		rss = append(rss, g)
		XSubs = append(XSubs, []float64{1, e, w})
		hubSubs = append(hubSubs, float64(r.subscriptions[0]))
	}
	fit(X, rss, fleetCost{},
		fleetCost{"hub_rss_kib_per_watcher", "KiB", "hub RSS per watcher, apart from other edges"},
		fleetCost{"hub_rss_kib_per_watcher_per_other_edge", "KiB", "hub RSS per watcher and per edge it is not on"})
	fit(XSubs, hubSubs, fleetCost{},
		fleetCost{"hub_subscriptions_per_edge", "subscriptions", "hub /varz subscriptions per edge"},
		fleetCost{"hub_subscriptions_per_watcher", "subscriptions", "hub /varz subscriptions per watcher"})
	edges := map[int][]fleetResult{}
	for _, r := range rs {
		edges[r.cfg.edges] = append(edges[r.cfg.edges], r)
	}
	for e, group := range edges {
		var X [][]float64
		var rss []float64
		for _, r := range group {
			X = append(X, []float64{1, float64(r.cfg.watchers)})
			g, _ := r.growth(0)
			rss = append(rss, g)
		}
		fit(X, rss, fleetCost{}, fleetCost{fmt.Sprintf("hub_rss_kib_per_watcher_e%d", e), "KiB",
			fmt.Sprintf("hub RSS per watcher with %d edges (slope over W)", e)})
	}

	// Each edge: what the hub sends it, and its memory.
	var XFrom, XEdge [][]float64
	var from, edgeRSS []float64
	for _, r := range rs {
		for i := range r.cfg.edges {
			own := float64(watchersOn(r.cfg, i))
			other := float64(r.cfg.watchers) - own
			XFrom = append(XFrom, []float64{1, float64(r.cfg.edges - 1), other})
			from = append(from, float64(r.interestFromHub[i]))
			XEdge = append(XEdge, []float64{1, own, other})
			g, _ := r.growth(1 + i)
			edgeRSS = append(edgeRSS, g)
		}
	}
	fit(XFrom, from, fleetCost{},
		fleetCost{"edge_subscriptions_from_hub_per_other_edge", "subscriptions", "subscriptions the hub sends an edge per other edge"},
		fleetCost{"edge_subscriptions_from_hub_per_other_watcher", "subscriptions", "subscriptions the hub sends an edge per watcher on another edge"})
	fit(XEdge, edgeRSS, fleetCost{},
		fleetCost{"edge_rss_kib_per_own_watcher", "KiB", "edge RSS per watcher on it"},
		fleetCost{"edge_rss_kib_per_other_watcher", "KiB", "edge RSS per watcher on another edge"})
	return out
}

// reportSizingFits reports each cost fitted in every run as its median
// over the runs (fleet_sizing_<cost>, with _isolated for the recommended
// settings) and its min and max (…_min, …_max).
func reportSizingFits(b *bench, all [][]fleetResult) {
	for _, isolated := range []bool{false, true} {
		suffix, settings := "", "default settings"
		if isolated {
			suffix, settings = "_isolated", "recommended settings"
		}
		values := map[fleetCost]spread{}
		var order []fleetCost
		for _, run := range all {
			for c, v := range fleetCosts(run, isolated) {
				if _, ok := values[c]; !ok {
					order = append(order, c)
				}
				values[c] = append(values[c], v)
			}
		}
		slices.SortFunc(order, func(a, b fleetCost) int { return strings.Compare(a.name, b.name) })
		for _, c := range order {
			s := values[c]
			name := "fleet_sizing_" + c.name + suffix
			b.reportNote(name, s.median(), c.unit, fmt.Sprintf("%s, %s; least squares over the sizes; %s", c.what, settings, s.note()))
			b.reportNote(name+"_min", slices.Min(s), c.unit, "over the runs")
			b.reportNote(name+"_max", slices.Max(s), c.unit, "over the runs")
		}
	}
}

// leastSquares solves min |X·coef − y|² by the normal equations; ok is
// false with fewer points than unknowns or when the columns of X are
// (nearly) dependent: the sizes do not tell those costs apart.
func leastSquares(X [][]float64, y []float64) (coef []float64, ok bool) {
	if len(X) == 0 || len(X) != len(y) || len(X) < len(X[0]) {
		return nil, false
	}
	p := len(X[0])
	// Scale each column to unit largest value, so that one tolerance
	// serves columns of counts and of products of counts.
	scale := make([]float64, p)
	for _, row := range X {
		for j, v := range row {
			scale[j] = max(scale[j], math.Abs(v))
		}
	}
	for j := range scale {
		if scale[j] == 0 {
			return nil, false
		}
	}
	A := make([][]float64, p) // [XᵀX | Xᵀy], scaled
	for i := range A {
		A[i] = make([]float64, p+1)
	}
	for k, row := range X {
		for i := range p {
			for j := range p {
				A[i][j] += row[i] / scale[i] * row[j] / scale[j]
			}
			A[i][p] += row[i] / scale[i] * y[k]
		}
	}
	norm := 0.0
	for i := range p {
		norm = max(norm, A[i][i])
	}
	for col := range p {
		pivot := col
		for r := col + 1; r < p; r++ {
			if math.Abs(A[r][col]) > math.Abs(A[pivot][col]) {
				pivot = r
			}
		}
		if math.Abs(A[pivot][col]) <= 1e-9*norm {
			return nil, false
		}
		A[col], A[pivot] = A[pivot], A[col]
		for r := range p {
			if r == col {
				continue
			}
			f := A[r][col] / A[col][col]
			for c := col; c <= p; c++ {
				A[r][c] -= f * A[col][c]
			}
		}
	}
	coef = make([]float64, p)
	for i := range p {
		coef[i] = A[i][p] / A[i][i] / scale[i]
	}
	return coef, true
}
