package fleetkv_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// eventLog records the route events and the sync of one set of handlers.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(s string) {
	l.mu.Lock()
	l.events = append(l.events, s)
	l.mu.Unlock()
}

func (l *eventLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func (l *eventLog) handlers() fleetkv.NetworkHandlers {
	return fleetkv.NetworkHandlers{
		OnRoute: func(ev fleetkv.RouteEvent) {
			l.add(fmt.Sprintf("%s %s %s initial=%v", ev.Op, ev.Key.RouteID, ev.Value.CIDR, ev.Initial))
		},
		OnSynced: func() { l.add("synced") },
	}
}

// Components of a node share one watcher: handlers added to it get the
// cache replayed as initial events, their OnSynced, then live changes in
// order, with values of their own; removed, they get nothing more; the
// bucket keeps one consumer.
func TestAddHandlersSharesOneWatcher(t *testing.T) {
	ctx, js, b := openNetwork(t)
	for _, r := range []string{"r1", "r2"} {
		b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: r}, fleetkv.Route{CIDR: "v1-" + r})
	}
	var main eventLog
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, main.handlers())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}

	var second eventLog
	h := second.handlers()
	onRoute := h.OnRoute
	h.OnRoute = func(ev fleetkv.RouteEvent) {
		onRoute(ev)
		ev.Value.Tags = append(ev.Value.Tags, "mine") // its own copy
	}
	reg, err := w.AddHandlers(h)
	if err != nil {
		t.Fatal(err)
	}
	if !reg.Synced() {
		t.Error("a registration on a synced watcher is not synced when AddHandlers returns")
	}
	want := []string{"put r1 v1-r1 initial=true", "put r2 v1-r2 initial=true", "synced"}
	kvwatchtest.Eventually(t, 10*time.Second, "the replay", func() bool { return len(second.get()) >= len(want) })
	if got := second.get(); !slices.Equal(got, want) {
		t.Errorf("replay = %q, want %q", got, want)
	}

	rev, _ := b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r1"}, fleetkv.Route{CIDR: "v2-r1"})
	if err := w.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the second handlers got the change", func() bool { return len(second.get()) == 4 })
	if got := second.get()[3]; got != "put r1 v2-r1 initial=false" {
		t.Errorf("live event = %q", got)
	}
	if r, _ := w.RouteCache().Get(fleetkv.RouteKey{VPC: "a", RouteID: "r1"}); len(r.Tags) != 0 {
		t.Errorf("a registration's handler changed the cache: %v", r.Tags)
	}

	reg.Remove()
	rev, _ = b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r3"}, fleetkv.Route{CIDR: "v1-r3"})
	if err := w.WaitRevision(ctx, rev); err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the watcher's own handlers got r3", func() bool {
		return slices.Contains(main.get(), "put r3 v1-r3 initial=false")
	})
	if got := second.get(); len(got) != 4 {
		t.Errorf("removed handlers got %q", got[4:])
	}
	if err := reg.WaitSynced(ctx); err != nil {
		t.Errorf("WaitSynced of a synced, removed registration = %v", err)
	}
	if n := consumers(t, js); n != 1 {
		t.Errorf("%d consumers, want 1", n)
	}
}

// moreThanOneRead is how many routes the initial read takes more than one
// request for (1,024 keys an answer): a watcher whose handler holds its
// first event then stops before it is synced, its handler's queue full.
const moreThanOneRead = 1100

// putRoutes writes n routes of VPC a, r0000 on.
func putRoutes(t *testing.T, b *fleetkv.NetworkBucket, n int) {
	t.Helper()
	for i := range n {
		if _, err := b.PutRoute(t.Context(), fleetkv.RouteKey{VPC: "a", RouteID: fmt.Sprintf("r%04d", i)}, fleetkv.Route{CIDR: "v1"}); err != nil {
			t.Fatal(err)
		}
	}
}

// Handlers added before the watcher is synced get what is cached so far,
// then the rest of the initial state, then OnSynced; each key once. A
// panic in them goes to their OnError; one added from a handler (OnSynced)
// gets its replay too.
func TestAddHandlersBeforeSyncAndFromAHandler(t *testing.T) {
	ctx, js, b := openNetwork(t)
	const routes = moreThanOneRead
	putRoutes(t, b, routes)
	hold := make(chan struct{})
	first := make(chan struct{})
	var once sync.Once
	var main eventLog
	h := main.handlers()
	onRoute := h.OnRoute
	h.OnRoute = func(ev fleetkv.RouteEvent) {
		onRoute(ev)
		once.Do(func() { close(first); <-hold }) // the initial state stops after one event
	}
	// The registration made from OnSynced is handed over on a channel: the
	// handler runs on the watcher's goroutine for handlers, not this one.
	added := make(chan kvwatch.Registration, 1)
	var inner eventLog
	var w *fleetkv.NetworkWatcher
	ready := make(chan struct{})
	h.OnSynced = func() {
		main.add("synced")
		<-ready
		r, err := w.AddHandlers(inner.handlers())
		if err != nil {
			t.Errorf("AddHandlers from a handler: %v", err)
		}
		added <- r
	}
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, h)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	close(ready)
	<-first

	var early eventLog
	var errs []error
	eh := early.handlers()
	onEarly := eh.OnRoute
	eh.OnRoute = func(ev fleetkv.RouteEvent) {
		onEarly(ev)
		if ev.Key.RouteID == "r0007" {
			panic("boom")
		}
	}
	eh.OnError = func(err error) { errs = append(errs, err) }
	reg, err := w.AddHandlers(eh)
	if err != nil {
		t.Fatal(err)
	}
	if reg.Synced() {
		t.Error("registered before the watcher's sync, it is synced at once")
	}
	close(hold)
	if err := reg.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	// Synced, as a watcher is, once its initial events are queued; its
	// OnSynced runs after them, on its own goroutine.
	kvwatchtest.Eventually(t, 10*time.Second, "the early registration's OnSynced", func() bool {
		got := early.get()
		return len(got) > 0 && got[len(got)-1] == "synced"
	})
	got := early.get()
	if got[len(got)-1] != "synced" || len(got) != routes+1 {
		t.Fatalf("early registration got %d events, last %q; want %d then synced", len(got), got[len(got)-1], routes)
	}
	seen := map[string]bool{}
	for _, e := range got[:routes] {
		if seen[e] {
			t.Errorf("event %q twice", e)
		}
		seen[e] = true
	}
	var he *kvwatch.HandlerError
	if len(errs) != 1 || !errors.As(errs[0], &he) {
		t.Errorf("the registration's OnError got %v, want one HandlerError", errs)
	}
	var fromHandler kvwatch.Registration
	select {
	case fromHandler = <-added:
	case <-ctx.Done():
		t.Fatal("OnSynced never added its handlers")
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the replay of handlers added from OnSynced", func() bool { return len(inner.get()) >= routes+1 })
	if fromHandler == nil || !fromHandler.Synced() || len(inner.get()) != routes+1 {
		t.Errorf("registered from OnSynced: %d events", len(inner.get()))
	}
}

// Handlers removed before the watcher is synced never sync: their
// WaitSynced says so.
func TestAddHandlersRemovedBeforeSync(t *testing.T) {
	ctx, js, b := openNetwork(t)
	putRoutes(t, b, moreThanOneRead)
	hold, held := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{
		OnRoute: func(fleetkv.RouteEvent) { once.Do(func() { close(held); <-hold }) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	<-held
	var got eventLog
	reg, err := w.AddHandlers(got.handlers())
	if err != nil {
		t.Fatal(err)
	}
	if reg.Synced() {
		t.Fatal("the watcher synced while its handler held its first event, past a full queue")
	}
	reg.Remove()
	close(hold)
	if err := reg.WaitSynced(ctx); !errors.Is(err, kvwatch.ErrRemoved) {
		t.Errorf("WaitSynced of handlers removed before sync = %v, want ErrRemoved", err)
	}
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range got.get() {
		if e == "synced" {
			t.Error("removed handlers got OnSynced")
		}
	}
}

// Handlers added while the watcher's own OnSynced runs are synced: the
// caches are, and held at the sync point meanwhile (docs/guarantees.md,
// guarantee). They get their replay and OnSynced at once, without
// waiting for the watcher's OnSynced: each set of handlers runs on its own.
func TestAddHandlersWhileTheWatchersOnSyncedRuns(t *testing.T) {
	ctx, js, b := openNetwork(t)
	b.PutRoute(ctx, fleetkv.RouteKey{VPC: "a", RouteID: "r1"}, fleetkv.Route{})
	release := make(chan struct{})
	var order eventLog
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{
		OnSynced: func() { <-release; order.add("watcher") },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	defer close(release)
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	var second eventLog
	reg, err := w.AddHandlers(second.handlers())
	if err != nil {
		t.Fatal(err)
	}
	if !reg.Synced() {
		t.Error("handlers added to a synced watcher are not synced")
	}
	if err := reg.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "their replay and OnSynced, the watcher's OnSynced still running", func() bool {
		return slices.Equal(second.get(), []string{"put r1  initial=true", "synced"})
	})
	if got := order.get(); len(got) != 0 {
		t.Errorf("the watcher's OnSynced returned: %q", got)
	}
}

// SetScopes takes the keys of a left scope out of every kind's cache at
// once, before any handler hears of it: a handler (or handlers added
// then) never sees one kind's entries of the scope gone and another's
// still there.
func TestLeavingAScopeEmptiesEveryCacheAtOnce(t *testing.T) {
	ctx, js, b := openNetwork(t)
	for _, vpc := range []string{"a", "b"} {
		b.PutVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: vpc}, fleetkv.VPCConfig{Name: vpc})
		b.PutRoute(ctx, fleetkv.RouteKey{VPC: vpc, RouteID: "r1"}, fleetkv.Route{})
	}
	var w *fleetkv.NetworkWatcher
	routesLeft := make(chan int, 1)
	ready := make(chan struct{})
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a", "b"}}, fleetkv.NetworkHandlers{
		OnVPCConfig: func(ev fleetkv.VPCConfigEvent) {
			if ev.LeftScope {
				<-ready
				inB, _ := w.RouteCache().In(fleetkv.NetworkScopes{VPC: []string{"b"}})
				routesLeft <- len(inB)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	close(ready)
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.SetScopes(ctx, fleetkv.NetworkScopes{VPC: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	// The handler runs on its own goroutine, after SetScopes returns.
	select {
	case n := <-routesLeft:
		if n != 0 {
			t.Errorf("when vpc b's config left the scopes, %d of its routes were still cached", n)
		}
	case <-ctx.Done():
		t.Fatal("vpc b's config never left the scopes")
	}
}
