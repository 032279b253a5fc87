package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/bench/benchkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file holds the storm scenario's watchers: a fleet node's watcher
// on a connection of its own, written with the generated code or by hand
// on nats.go's kv.WatchFiltered, each recording every entry it is given
// so that the scenario can say when it held the state written after a
// fault.

// stormWatcher is one node: its tenants, its connection and what it was
// given.
type stormWatcher struct {
	id      int // its place in the fleet, from 0
	edge    int
	tenants []int
	nc      *nats.Conn
	stop    func()
	// received is what the server sent the watcher so far, in entries.
	received func() uint64
	// counters are the side's own counts of what the watcher did to
	// recover (nil when the side keeps none), by figure name.
	counters func() []stormCounter
	// started is when the watch was asked for, synced when its initial
	// state was complete (zero until then).
	started time.Time
	synced  atomic.Int64 // unix nanoseconds

	mu       sync.Mutex
	latest   []uint64      // per tenant (as tenants), the highest revision given
	arrivals []stormChange // since the scenario last cleared them
	errs     []error
}

// stormCounter is one count a side keeps of a watcher.
type stormCounter struct {
	name  string
	value uint64
}

// stormChange is an entry given to a watcher, from its i-th tenant.
type stormChange struct {
	tenant int
	rev    uint64
	at     time.Time
}

// saw records an entry of tenant t at rev.
func (sw *stormWatcher) saw(t int, rev uint64) {
	at := time.Now()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for i, mine := range sw.tenants {
		if mine == t {
			sw.latest[i] = max(sw.latest[i], rev)
			sw.arrivals = append(sw.arrivals, stormChange{tenant: i, rev: rev, at: at})
			return
		}
	}
}

func (sw *stormWatcher) failed(err error) {
	sw.mu.Lock()
	sw.errs = append(sw.errs, err)
	sw.mu.Unlock()
}

// stormTenant is the tenant of a key "p.<t>.item.<id>" (-1 for none).
func stormTenant(key string) int {
	rest, ok := strings.CutPrefix(key, "p.")
	if !ok {
		return -1
	}
	t, _, _ := strings.Cut(rest, ".")
	n, err := strconv.Atoi(t)
	if err != nil {
		return -1
	}
	return n
}

// current says whether the watcher holds, for each of its tenants, the
// revision want gives it (0: nothing asked).
func (sw *stormWatcher) current(want []uint64) bool {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for i, t := range sw.tenants {
		if sw.latest[i] < want[t] {
			return false
		}
	}
	return true
}

// currentAt is when the watcher first held want's revisions among the
// entries given since the arrivals were last cleared; ok false if not.
func (sw *stormWatcher) currentAt(want []uint64) (at time.Time, ok bool) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for i, t := range sw.tenants {
		if want[t] == 0 {
			continue
		}
		found := false
		for _, c := range sw.arrivals {
			if c.tenant == i && c.rev >= want[t] {
				if c.at.After(at) {
					at = c.at
				}
				found = true
				break
			}
		}
		if !found {
			return time.Time{}, false
		}
	}
	return at, true
}

// clear forgets the arrivals (not the latest revisions) before an event.
func (sw *stormWatcher) clear() {
	sw.mu.Lock()
	sw.arrivals = sw.arrivals[:0]
	sw.errs = nil
	sw.mu.Unlock()
}

func (sw *stormWatcher) syncedAt() (time.Time, bool) {
	n := sw.synced.Load()
	return time.Unix(0, n), n != 0
}

// stormSide is one way of writing a fleet's watcher.
type stormSide struct {
	name string
	// watch starts sw's watch on js and returns at once; it marks
	// sw.synced when the initial state is complete. checkpoint, when not
	// "", is the file the watcher resumes from and saves to (the side
	// ignores it when it has none).
	watch func(ctx context.Context, js jetstream.JetStream, sw *stormWatcher, checkpoint string) error
	// checkpoints says whether the side resumes from checkpoint files.
	checkpoints bool
}

var stormSides = []stormSide{
	{name: "kvwatch", checkpoints: true, watch: watchStormKVWatch},
	{name: "natsgo", watch: watchStormNatsGo},
}

func watchStormKVWatch(ctx context.Context, js jetstream.JetStream, sw *stormWatcher, checkpoint string) error {
	scopes := benchkv.BenchScopes{}
	for _, t := range sw.tenants {
		scopes.Prefix = append(scopes.Prefix, strconv.Itoa(t))
	}
	var opts []kvwatch.Option
	if checkpoint != "" {
		opts = append(opts, kvwatch.WithCheckpointFile(checkpoint))
	}
	w, err := benchkv.WatchBench(ctx, js, scopes, benchkv.BenchHandlers{
		OnItem:   func(ev benchkv.ItemEvent) { sw.saw(stormTenant("p."+ev.Key.P+"."), ev.Revision) },
		OnError:  sw.failed,
		OnSynced: func() { sw.synced.CompareAndSwap(0, time.Now().UnixNano()) },
	}, opts...)
	if err != nil {
		return err
	}
	sw.stop = w.Stop
	sw.received = func() uint64 { return w.Stats().Received }
	sw.counters = func() []stormCounter {
		s := w.Stats()
		return []stormCounter{{"consumer_resets", s.ConsumerResets}, {"silent_connections", s.SilentConnections},
			{"cut_off_servers", s.CutOffServers}, {"stream_went_back", s.StreamWentBack}}
	}
	return nil
}

func watchStormNatsGo(ctx context.Context, js jetstream.JetStream, sw *stormWatcher, _ string) error {
	kv, err := js.KeyValue(ctx, fleetBucket)
	if err != nil {
		return err
	}
	var filters []string
	for _, t := range sw.tenants {
		filters = append(filters, fmt.Sprintf("p.%d.>", t))
	}
	fw, err := kv.WatchFiltered(ctx, filters)
	if err != nil {
		return err
	}
	var received atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range fw.Updates() {
			if e == nil {
				sw.synced.CompareAndSwap(0, time.Now().UnixNano())
				continue
			}
			received.Add(1)
			sw.saw(stormTenant(e.Key()), e.Revision())
		}
	}()
	sw.stop = func() { fw.Stop(); <-done }
	sw.received = received.Load
	return nil
}

// stormFleet is every watcher of one side, on the edges.
type stormFleet struct {
	side     stormSide
	all      []*stormWatcher
	checkDir string // the checkpoint files, one per watcher ("" for none)
}

// stormScopes is how many scopes a storm watcher watches: tenant 0, the
// fleet-wide configuration every node watches (the hot write goes
// there), and fleetScopesPerWatcher tenants of its own.
const stormScopes = 1 + fleetScopesPerWatcher

// newStormFleet makes perEdge watchers per edge: watcher n (from 0, edge
// by edge) watches tenant 0 and fleetScopesPerWatcher tenants among the
// others, from 1+3n on (mod 49).
func newStormFleet(side stormSide, edges, perEdge int, checkDir string) *stormFleet {
	f := &stormFleet{side: side, checkDir: checkDir}
	for e := range edges {
		for range perEdge {
			n := len(f.all)
			sw := &stormWatcher{id: n, edge: e, tenants: []int{0}, latest: make([]uint64, stormScopes)}
			for k := range fleetScopesPerWatcher {
				sw.tenants = append(sw.tenants, 1+(fleetScopesPerWatcher*n+k)%(fleetTenants-1))
			}
			f.all = append(f.all, sw)
		}
	}
	return f
}

// on is the watchers of the edges given (every edge for none).
func (f *stormFleet) on(edges ...int) []*stormWatcher {
	if len(edges) == 0 {
		return f.all
	}
	var out []*stormWatcher
	for _, sw := range f.all {
		for _, e := range edges {
			if sw.edge == e {
				out = append(out, sw)
			}
		}
	}
	return out
}

// start connects and starts every watcher given, all at once (a
// goroutine each, as nodes booting together), on its edge's URL, with
// nats.go's default reconnect settings as a node has them. It returns
// once every watch was asked for, not synced.
func (f *stormFleet) start(ctx context.Context, urls []string, ws []*stormWatcher) error {
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, sw := range ws {
		wg.Go(func() {
			errs[i] = f.startOne(ctx, urls[sw.edge], sw)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("%s watcher %d: %w", f.side.name, i+1, err)
		}
	}
	return nil
}

func (f *stormFleet) startOne(ctx context.Context, url string, sw *stormWatcher) error {
	sw.synced.Store(0)
	sw.started = time.Now()
	// A node whose first connection attempt times out (thousands dialing
	// one server at once) tries again, as a booting node does.
	var nc *nats.Conn
	var js jetstream.JetStream
	err := waitUntil(ctx, time.Minute, "connecting to "+url, func(context.Context) (bool, error) {
		var err error
		nc, js, err = dial(url, nats.CustomInboxPrefix(fleetLocalInbox),
			nats.ReconnectWait(nats.DefaultReconnectWait), nats.ReconnectJitter(nats.DefaultReconnectJitter, nats.DefaultReconnectJitterTLS))
		return err == nil, err
	})
	if err != nil {
		return err
	}
	checkpoint := ""
	if f.checkDir != "" && f.side.checkpoints {
		checkpoint = filepath.Join(f.checkDir, fmt.Sprintf("w%d.checkpoint", sw.id))
	}
	if err := f.side.watch(ctx, js, sw, checkpoint); err != nil {
		nc.Close()
		return err
	}
	sw.nc = nc
	return nil
}

// stopAll stops every watcher and closes its connection.
func (f *stormFleet) stopAll() {
	var wg sync.WaitGroup
	for _, sw := range f.all {
		if sw.stop == nil {
			continue
		}
		wg.Go(func() {
			sw.stop()
			sw.nc.Close()
			sw.stop = nil
		})
	}
	wg.Wait()
}
