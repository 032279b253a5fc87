// Command bench measures kvwatchgen side by side with plain nats.go, in one
// run on one machine, so that ratios hold even where absolute numbers are
// noise:
//
//	go run ./bench -scenario all                 # every scenario, full size
//	go run ./bench -scenario consumers -quick    # one scenario, ~60 s at most
//	go run ./bench -scenario all -json           # one JSON object per figure
//	go run ./bench -scenario all -charts bench/charts   # also write SVG charts
//	go run ./bench -scenario fleet-sizing -fleet-runs 5  # hub costs per edge and watcher
//
// The nats-server under test runs in a child process (this binary again),
// so its memory is measured apart from the client's. See BENCHMARKS.md for
// what each figure means.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// scenario is one benchmark.
type scenario struct {
	name  string
	about string
	run   func(ctx context.Context, b *bench) error
}

var scenarios = []scenario{
	{"consumers", "a node watching K scopes: one generated watcher vs K nats.go watchers", runConsumers},
	{"throughput", "live updates/s through a typed watcher vs a raw ordered consumer + json.Unmarshal", runThroughput},
	{"initial-sync", "time to sync 100 scopes of a large bucket, fresh and after churn", runInitialSync},
	{"rescope", "add one scope to a running watcher: SetScopes vs recreating a nats.go watcher", runRescope},
	{"read-paths", "the server's side of reading 100 scopes by direct get: in flight, halves, pinned (replies not decoded)", runReadPaths},
	{"failover", "time from a server crash, and from a silent (half-open) connection, to the first event after it: kvwatch vs kv.WatchFiltered", runFailover},
	{"fleet", "a hub and E edges with KV mirrors: consumers, memory, subscriptions and delivery latency per watcher", runFleet},
	{"storm", "a hub and E edges with W watchers each, every watcher on its own connection, moving at once (cold start, from checkpoints, edge and hub restarts, link flaps, a hot write): kvwatch vs kv.WatchFiltered", runStorm},
	{"fleet-sizing", "the hub's memory and subscriptions per edge and per watcher, fitted over fleets of several sizes and runs, default and recommended settings", runFleetSizing},
	{"backpressure", "client memory while a handler over 100x slower than the publisher falls behind", runBackpressure},
	{"modify", "read-modify-write of one key by 1, 4 and 16 concurrent ModifyItem callers: updates/s, conflicts, lost updates", runModify},
	{"index", "what a cache index costs a watcher per update: the drain of bench vs benchix (the same items, indexed by owner)", runIndex},
	{"checkpoint-file", "restart to synced over 100k keys: from a checkpoint file (WithCheckpointFile) vs a full read", runCheckpointFile},
	{"generator", "load and generate a 100-bucket x 10-kind schema", runGenerator},
}

// bench is what a scenario gets: where to report, and how big to go.
type bench struct {
	*reporter
	scenario string
	quick    bool
	// tiny shrinks every size to a smoke test (the package's own test).
	tiny bool
	// charts is the folder to write SVG charts to, "" for none.
	charts string
	// fleet are the fleet-sizing scenario's flags.
	fleet fleetOptions
}

// report adds a figure of the running scenario.
func (b *bench) report(name string, value float64, unit string) {
	b.add(figure{Scenario: b.scenario, Name: name, Value: value, Unit: unit})
}

// reportNote adds a figure with a note.
func (b *bench) reportNote(name string, value float64, unit, note string) {
	b.add(figure{Scenario: b.scenario, Name: name, Value: value, Unit: unit, Note: note})
}

// pick returns full, quick or tiny, by mode.
func (b *bench) pick(full, quick, tiny int) int {
	switch {
	case b.tiny:
		return tiny
	case b.quick:
		return quick
	}
	return full
}

func main() {
	if dir := os.Getenv(serveEnv); dir != "" {
		if err := serveChild(dir); err != nil {
			fmt.Fprintln(os.Stderr, "bench server:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var names []string
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	name := fs.String("scenario", "", "scenario to run: "+strings.Join(names, ", ")+", or all")
	quick := fs.Bool("quick", false, "smaller sizes: each scenario within about 60 s")
	asJSON := fs.Bool("json", false, "print one JSON object per figure")
	charts := fs.String("charts", "", "write SVG charts into this `folder`")
	timeout := fs.Duration("timeout", 15*time.Minute, "bound on each scenario")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the client process to `file`")
	fleetSizes := fs.String("fleet-sizes", "", "fleet-sizing scenario: the `sizes` to fit over, comma-separated e<edges>_w<watchers>, each run with default and recommended settings (default "+fleetSizingDefault+")")
	fleetRuns := fs.Int("fleet-runs", 0, "fleet-sizing scenario: measure every size `n` times (0: 3, 1 with -quick)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fleet := fleetOptions{runs: *fleetRuns}
	if *fleetSizes != "" {
		sizes, err := parseFleetSizes(*fleetSizes)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 2
		}
		fleet.sizes = sizes
	}
	if *fleetRuns < 0 {
		fmt.Fprintln(stderr, "bench: -fleet-runs must be 0 or more")
		return 2
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	var selected []scenario
	for _, s := range scenarios {
		if *name == "all" || *name == s.name {
			selected = append(selected, s)
		}
	}
	if len(selected) == 0 {
		fmt.Fprintf(stderr, "bench: -scenario must be one of %s or all\n", strings.Join(names, ", "))
		fs.PrintDefaults()
		return 2
	}
	if *charts != "" {
		if err := os.MkdirAll(*charts, 0o755); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
	}
	r := &reporter{out: stdout, json: *asJSON}
	if err := runScenarios(r, selected, *quick, false, *charts, *timeout, fleet); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	return 0
}

// runScenarios runs each scenario within timeout.
func runScenarios(r *reporter, selected []scenario, quick, tiny bool, charts string, timeout time.Duration, fleet fleetOptions) error {
	for _, s := range selected {
		r.say("\n%s: %s", s.name, s.about)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		start := time.Now()
		err := s.run(ctx, &bench{reporter: r, scenario: s.name, quick: quick, tiny: tiny, charts: charts, fleet: fleet})
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		r.say("  (%s in %.1fs)", s.name, time.Since(start).Seconds())
	}
	return nil
}

// median returns the median of xs (xs is sorted in place).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// errTimeout marks a reader that did not finish in its time bound.
var errTimeout = errors.New("did not finish in time")

// watchSynced starts a generated watcher as benchkv.WatchBench does and
// returns once it is synced. On error no watcher is left running.
func watchSynced(ctx context.Context, js jetstream.JetStream, scopes benchkv.BenchScopes, h benchkv.BenchHandlers, opts ...kvwatch.Option) (*benchkv.BenchWatcher, error) {
	w, err := benchkv.WatchBench(ctx, js, scopes, h, opts...)
	if err != nil {
		return nil, err
	}
	if err := w.WaitSynced(ctx); err != nil {
		w.Stop()
		return nil, err
	}
	return w, nil
}
