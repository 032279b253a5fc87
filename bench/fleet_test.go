package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"testing"
)

func TestParseFleetSizes(t *testing.T) {
	got, err := parseFleetSizes("e2_w400, e8_w1600,,e1_w1")
	if err != nil {
		t.Fatal(err)
	}
	want := []fleetConfig{{edges: 2, watchers: 400}, {edges: 8, watchers: 1600}, {edges: 1, watchers: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for _, c := range got {
		if back, err := parseFleetSizes(c.name()); err != nil || back[0] != c {
			t.Errorf("%s does not read back: %+v %v", c.name(), back, err)
		}
	}
	if def, err := parseFleetSizes(fleetSizingDefault); err != nil || len(def) != 4 {
		t.Errorf("default sizes: %v %v", def, err)
	}
	// Sizes run with both settings: a size naming one is refused, as is a
	// fleet without edges (nothing to fit per edge) or without watchers.
	for _, bad := range []string{"", ",", "e4", "w4_e4", "e0_w4", "e-1_w4", "e4_w0", "e4_w4_isolated", "ex_w4", "e4_wx"} {
		if _, err := parseFleetSizes(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestLeastSquares(t *testing.T) {
	// y = 3 + 2a + 0.5b exactly, over columns of very different scales.
	var X [][]float64
	var y []float64
	for _, p := range [][2]float64{{400, 400}, {1600, 1600}, {400, 2800}, {1600, 11200}, {800, 100}} {
		X = append(X, []float64{1, p[0], p[1]})
		y = append(y, 3+2*p[0]+0.5*p[1])
	}
	coef, ok := leastSquares(X, y)
	if !ok {
		t.Fatal("not solved")
	}
	for i, want := range []float64{3, 2, 0.5} {
		if math.Abs(coef[i]-want) > 1e-6 {
			t.Errorf("coef[%d] = %v, want %v", i, coef[i], want)
		}
	}
	// Noise: the line through the middle of two points each side.
	coef, ok = leastSquares([][]float64{{1, 0}, {1, 0}, {1, 10}, {1, 10}}, []float64{1, 3, 21, 23})
	if !ok || math.Abs(coef[0]-2) > 1e-9 || math.Abs(coef[1]-2) > 1e-9 {
		t.Errorf("got %v %v, want [2 2]", coef, ok)
	}
	// Not determined: dependent columns (one number of edges, so W(E−1)
	// is a multiple of W), a zero column, fewer points than unknowns.
	for name, X := range map[string][][]float64{
		"dependent": {{1, 400, 1200}, {1, 1600, 4800}, {1, 800, 2400}},
		"zero":      {{1, 0}, {1, 0}, {1, 0}},
		"too few":   {{1, 2, 3}, {1, 4, 5}},
		"none":      nil,
	} {
		if coef, ok := leastSquares(X, make([]float64, len(X))); ok {
			t.Errorf("%s: solved: %v", name, coef)
		}
	}
}

// fakeFleet is a measured fleet whose costs follow the scenario's models
// exactly, with fixed costs that a single configuration's per-unit figure
// would include.
func fakeFleet(edges, watchers int, isolated bool) fleetResult {
	const (
		fixed        = 500 // KiB any fleet grows regardless of its size
		perEdge      = 600
		perWatcher   = 2
		perOtherE    = 0.25 // per watcher per other edge
		ownW, otherW = 100, 1
	)
	cfg := fleetConfig{edges: edges, watchers: watchers, isolated: isolated}
	w, e := float64(watchers), float64(edges)
	res := fleetResult{cfg: cfg,
		hubBeforeEdges: memReport{RSSKiB: 1000, LiveHeapKiB: 100},
		hubAfterEdges:  memReport{RSSKiB: uint64(1000 + fixed + perEdge*edges), LiveHeapKiB: uint64(100 + 3000*edges)},
		memBefore:      []memReport{{RSSKiB: 2000}},
		memAfter:       []memReport{{RSSKiB: uint64(2000 + fixed + perWatcher*w + perOtherE*w*(e-1))}},
		subscriptions:  []int{100 + 17*edges + 2*watchers},
	}
	for i := range edges {
		own := watchersOn(cfg, i)
		res.memBefore = append(res.memBefore, memReport{RSSKiB: 3000})
		res.memAfter = append(res.memAfter, memReport{RSSKiB: uint64(3000 + fixed + ownW*own + otherW*(watchers-own))})
		res.subscriptions = append(res.subscriptions, 200+2*watchers)
		res.interestFromHub = append(res.interestFromHub, 50+15*(edges-1)+2*(watchers-own))
	}
	return res
}

// figures reads the JSON figures a reporter printed.
func figures(t *testing.T, out *bytes.Buffer) map[string]figure {
	t.Helper()
	got := map[string]figure{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var f figure
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatal(err)
		}
		if _, dup := got[f.Name]; dup {
			t.Errorf("figure %s reported twice", f.Name)
		}
		got[f.Name] = f
	}
	return got
}

// The fits recover each cost of fakeFleet, without its fixed costs; the
// median and range run over the runs; a setting whose sizes do not
// determine a cost leaves it out.
func TestFleetSizingFits(t *testing.T) {
	sizes := []fleetConfig{{edges: 2, watchers: 400}, {edges: 2, watchers: 1600}, {edges: 8, watchers: 400}, {edges: 8, watchers: 1600}}
	run := func(shift uint64) []fleetResult {
		var out []fleetResult
		for _, s := range sizes {
			out = append(out, fakeFleet(s.edges, s.watchers, false))
			// Recommended settings: one number of edges only.
			if s.edges == 2 {
				iso := fakeFleet(s.edges, s.watchers, true)
				iso.memAfter[0].RSSKiB += shift * uint64(s.watchers) / 400
				out = append(out, iso)
			}
		}
		return out
	}
	var out bytes.Buffer
	b := &bench{reporter: &reporter{out: &out, json: true}, scenario: "fleet-sizing"}
	all := [][]fleetResult{run(0), run(400), run(800)} // +0, +1, +2 KiB per watcher isolated
	reportSizingConfigs(b, all)
	reportSizingFits(b, all)
	got := figures(t, &out)
	want := map[string]float64{
		"fleet_sizing_hub_rss_kib_per_edge":                          600,
		"fleet_sizing_hub_live_heap_kib_per_edge":                    3000,
		"fleet_sizing_hub_rss_kib_per_watcher":                       2,
		"fleet_sizing_hub_rss_kib_per_watcher_per_other_edge":        0.25,
		"fleet_sizing_hub_rss_kib_per_watcher_e2":                    2.25,
		"fleet_sizing_hub_rss_kib_per_watcher_e8":                    3.75,
		"fleet_sizing_hub_subscriptions_per_edge":                    17,
		"fleet_sizing_hub_subscriptions_per_watcher":                 2,
		"fleet_sizing_edge_subscriptions_from_hub_per_other_edge":    15,
		"fleet_sizing_edge_subscriptions_from_hub_per_other_watcher": 2,
		"fleet_sizing_edge_rss_kib_per_own_watcher":                  100,
		"fleet_sizing_edge_rss_kib_per_other_watcher":                1,
		"fleet_sizing_hub_rss_kib_per_watcher_e2_isolated":           3.25,
		"fleet_sizing_hub_rss_kib_per_watcher_e2_isolated_min":       2.25,
		"fleet_sizing_hub_rss_kib_per_watcher_e2_isolated_max":       4.25,
		"fleet_sizing_hub_rss_growth_watchers_kib_e2_w400":           500 + 800 + 100,
		"fleet_sizing_hub_rss_growth_edges_kib_e8_w1600":             500 + 8*600,
		"fleet_sizing_edge_subscriptions_from_hub_e8_w400":           50 + 15*7 + 2*350,
		"fleet_sizing_edge_rss_per_watcher_kib_e2_w400":              (500 + 100*200 + 200) / 200.0,
		"fleet_sizing_hub_rss_growth_watchers_kib_e2_w400_isolated":  500 + 800 + 100 + 1*400,
	}
	for name, w := range want {
		if f, ok := got[name]; !ok || math.Abs(f.Value-w) > 1e-6 {
			t.Errorf("%s = %v (present %v), want %v", name, f.Value, ok, w)
		}
	}
	if note := got["fleet_sizing_hub_rss_kib_per_watcher_e2_isolated"].Note; !bytes.Contains([]byte(note), []byte("median of 3 runs, min 2.25, max 4.25")) {
		t.Errorf("note %q does not give the range", note)
	}
	// With the recommended settings only E = 2 ran: nothing per edge, nor
	// per other edge.
	for _, name := range []string{"fleet_sizing_hub_rss_kib_per_edge_isolated", "fleet_sizing_hub_rss_kib_per_watcher_per_other_edge_isolated",
		"fleet_sizing_hub_rss_kib_per_watcher_e8_isolated"} {
		if _, ok := got[name]; ok {
			t.Errorf("%s reported, the sizes do not determine it", name)
		}
	}
}

func TestSpread(t *testing.T) {
	for _, c := range []struct {
		s    spread
		want float64
	}{{spread{3}, 3}, {spread{5, 1, 3}, 3}, {spread{4, 1, 3, 2}, 2.5}} {
		if got := c.s.median(); got != c.want {
			t.Errorf("median of %v = %v, want %v", c.s, got, c.want)
		}
	}
	if !math.IsNaN(spread{}.median()) {
		t.Error("median of nothing is not NaN")
	}
	if got := (spread{2}).note(); got != "1 run" {
		t.Errorf("note of one run: %q", got)
	}
}
