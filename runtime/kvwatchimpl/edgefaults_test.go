package kvwatchimpl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// A watcher on an edge survives the faults of a fleet, each on a fleet of
// its own (run in parallel, so the suite waits for the longest only):
// its edge's link to the hub cut for 3 s and for 20 s, the hub restarted,
// the edge restarted. Throughout, the hub takes writes (overwrites of a
// few keys, in and out of the watcher's scope, and deletes); afterwards
// the guarantees of docs/guarantees.md hold against the recorded writes
// (edgeHistory.check), the cache equals the hub's bucket, and during a
// cut Stats showed the mirror stale.
func TestEdgeWatcherSurvivesFaults(t *testing.T) {
	faults := []struct {
		name  string
		fault func(t *testing.T, f *kvwatchtest.Fleet, w *kvwatchimpl.Watcher)
	}{
		{"link cut 3s", func(t *testing.T, f *kvwatchtest.Fleet, w *kvwatchimpl.Watcher) {
			cutFor(t, f.Edges[0], w, 3*time.Second)
		}},
		{"link cut 20s", func(t *testing.T, f *kvwatchtest.Fleet, w *kvwatchimpl.Watcher) {
			cutFor(t, f.Edges[0], w, 20*time.Second)
		}},
		{"hub restart", func(t *testing.T, f *kvwatchtest.Fleet, _ *kvwatchimpl.Watcher) { f.Hub.Restart(t) }},
		{"edge restart", func(t *testing.T, f *kvwatchtest.Fleet, _ *kvwatchimpl.Watcher) { f.Edges[0].Restart(t) }},
	}
	for _, fc := range faults {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			f := kvwatchtest.StartFleet(t, jetstream.KeyValueConfig{Bucket: "network", History: 1}, kvwatchtest.FleetOptions{})
			_, hub := f.ConnectHub(t)
			hubKV, err := hub.KeyValue(context.Background(), "network")
			if err != nil {
				t.Fatal(err)
			}
			_, js := f.Edges[0].Connect(t)
			r := newRecorder()
			routes, configs, bindings := networkBindings(r)
			w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings,
				append(r.options(), kvwatch.WithMirrorStaleAfter(time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(w.Stop)
			waitSynced(t, w)
			synced, _ := r.snapshot()

			h := writeOverwrites(t, hub)
			waitEvents(t, r, len(synced)+100)
			fc.fault(t, f, w)
			catchUp(t, js, w, h)
			// Writes go on after the fault for a while: the watcher must
			// follow them, not just what it had.
			seen, _ := r.snapshot()
			waitEvents(t, r, len(seen)+100)
			waitApplied(t, js, w, h.stop())
			events, errs := r.snapshot()
			if len(errs) > 0 {
				t.Errorf("errors reported: %v", errs)
			}
			h.check(t, events[len(synced):])
			if got, want := cacheState(routes, configs), bucketState(t, hubKV, "a"); !slices.Equal(got, want) {
				t.Errorf("cache on the edge\n%v\nwant the hub's\n%v", got, want)
			}
		})
	}
}

// waitEvents waits until r has recorded n events.
func waitEvents(t *testing.T, r *recorder, n int) {
	t.Helper()
	kvwatchtest.Eventually(t, 60*time.Second, fmt.Sprintf("%d events", n), func() bool {
		events, _ := r.snapshot()
		return len(events) >= n
	})
}

// waitApplied waits until the watcher has applied rev.
func waitApplied(t *testing.T, edge jetstream.JetStream, w *kvwatchimpl.Watcher, rev uint64) {
	t.Helper()
	if _, _, ok := waitMirrorAndWatcher(t, edge, w, rev); !ok {
		t.FailNow()
	}
}

// catchUp waits for the first write the hub acknowledges after a fault
// to reach the edge's mirror and the watcher, and logs how long each
// took: the mirror's own recovery is the server's (after a long outage it
// retries with a backoff that grows with its failures, README Fleet
// scale), the watcher's should add next to nothing.
func catchUp(t *testing.T, edge jetstream.JetStream, w *kvwatchimpl.Watcher, h *edgeHistory) {
	t.Helper()
	back := time.Now()
	before := h.acked()
	kvwatchtest.Eventually(t, 30*time.Second, "a write acknowledged after the fault", func() bool { return h.acked() > before })
	mirrored, applied, ok := waitMirrorAndWatcher(t, edge, w, h.acked())
	if !ok {
		t.FailNow()
	}
	t.Logf("after the fault: the mirror had the hub's next write in %v, the watcher in %v",
		mirrored.Sub(back).Round(time.Millisecond), applied.Sub(back).Round(time.Millisecond))
}

// waitMirrorAndWatcher waits (up to 120 s: a mirror's retry backoff
// after a long outage is the server's) until the edge's mirror holds rev
// and the watcher has applied it; it returns when the mirror first held
// it and when the watcher had, or false (the test marked failed, with
// where both were) if not in time.
func waitMirrorAndWatcher(t *testing.T, edge jetstream.JetStream, w *kvwatchimpl.Watcher, rev uint64) (mirrored, applied time.Time, ok bool) {
	t.Helper()
	deadline := time.Now().Add(120 * time.Second)
	for {
		if mirrored.IsZero() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s, err := edge.Stream(ctx, "KV_network")
			cancel()
			if err == nil && s.CachedInfo().State.LastSeq >= rev {
				mirrored = time.Now()
			}
		}
		if !mirrored.IsZero() && upTo(w, rev) {
			return mirrored, time.Now(), true
		}
		if time.Now().After(deadline) {
			t.Errorf("revision %d not applied in 120 s (mirror had it: %v); stats %+v", rev, !mirrored.IsZero(), w.Stats())
			return mirrored, time.Time{}, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// upTo reports whether the watcher has every change up to rev, also when
// rev is out of its scopes (its LastRevision only moves with its own).
func upTo(w *kvwatchimpl.Watcher, rev uint64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	return w.WaitRevision(ctx, rev) == nil
}

// cutFor cuts the edge's link for d and restores it; the watcher must
// have reported its mirror stale meanwhile.
func cutFor(t *testing.T, e *kvwatchtest.Edge, w *kvwatchimpl.Watcher, d time.Duration) {
	t.Helper()
	e.Cut()
	cut := time.Now()
	kvwatchtest.Eventually(t, d+5*time.Second, "the mirror reported stale", func() bool {
		m := w.Stats().Mirror
		return m != nil && m.Stale
	})
	time.Sleep(time.Until(cut.Add(d))) // the outage lasts d, by design
	e.Restore()
}

// edgeWrite is one write the hub acknowledged, or one whose outcome is
// unknown (rev 0: its request timed out in an outage).
type edgeWrite struct {
	key   string
	value string // "" for a delete
	rev   uint64
}

// edgeHistory is the writes of writeOverwrites, in the order made.
type edgeHistory struct {
	mu      sync.Mutex
	writes  []edgeWrite
	last    atomic.Uint64
	stopped func()
}

// writeOverwrites writes at the hub until stop: puts of unique values to
// 20 keys of VPC a and 5 of VPC b (out of the watcher's scope), and
// every seventh write a delete, retrying through outages with a new
// value. It returns once writes are under way.
func writeOverwrites(t *testing.T, hub jetstream.JetStream) *edgeHistory {
	t.Helper()
	h := &edgeHistory{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	h.stopped = func() { cancel(); wg.Wait() }
	t.Cleanup(h.stopped)
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			vpc, n := "a", i%20
			if i%5 == 4 {
				vpc, n = "b", i%5
			}
			wr := edgeWrite{key: fmt.Sprintf("vpc.%s.route.k%d", vpc, n)}
			msg := nats.NewMsg("$KV.network." + wr.key)
			if i%7 == 6 {
				msg.Header.Set("KV-Operation", "DEL")
			} else {
				wr.value = fmt.Sprintf("w%d", i)
				msg.Data, _ = json.Marshal(route{CIDR: wr.value})
			}
			wctx, wcancel := context.WithTimeout(ctx, time.Second)
			ack, err := hub.PublishMsg(wctx, msg)
			wcancel()
			if err == nil {
				wr.rev = ack.Sequence
				h.last.Store(ack.Sequence)
			}
			h.mu.Lock()
			h.writes = append(h.writes, wr)
			h.mu.Unlock()
			if err != nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	kvwatchtest.Eventually(t, 5*time.Second, "writer under way", func() bool { return h.acked() > 20 })
	return h
}

// acked returns the revision of the newest acknowledged write.
func (h *edgeHistory) acked() uint64 { return h.last.Load() }

// stop stops the writer and returns the newest acknowledged revision.
func (h *edgeHistory) stop() uint64 { h.stopped(); return h.acked() }

// check validates the events delivered after the initial sync against the
// writes, as §4a states the guarantees: ordered and unique (revisions
// strictly increase), each event a write that was made (key, revision
// and value; a write whose acknowledgement was lost is matched by value),
// and reliable: an acknowledged write of the watched VPC that was not
// delivered was replaced by a later write of its key (history 1 keeps
// only the newest), which was.
func (h *edgeHistory) check(t *testing.T, events []got) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	byValue := map[string]edgeWrite{}
	byRev := map[uint64]edgeWrite{}
	for _, wr := range h.writes {
		if wr.value != "" {
			byValue[wr.value] = wr
		}
		if wr.rev != 0 {
			byRev[wr.rev] = wr
		}
	}
	delivered := map[uint64]bool{}
	var prev uint64
	for _, ev := range events {
		if ev.Revision <= prev {
			t.Errorf("%s %s at revision %d after revision %d: not ordered or repeated", ev.Op, ev.Key, ev.Revision, prev)
		}
		prev = ev.Revision
		delivered[ev.Revision] = true
		if ev.Op == kvwatch.OpPut {
			var v route
			_ = json.Unmarshal([]byte(ev.Value), &v)
			wr, ok := byValue[v.CIDR]
			if !ok || wr.key != ev.Key || (wr.rev != 0 && wr.rev != ev.Revision) {
				t.Errorf("put %s=%s at revision %d: no such write (%+v)", ev.Key, v.CIDR, ev.Revision, wr)
			}
			continue
		}
		if wr, ok := byRev[ev.Revision]; ok && (wr.key != ev.Key || wr.value != "") {
			t.Errorf("%s %s at revision %d: that revision wrote %+v", ev.Op, ev.Key, ev.Revision, wr)
		}
	}
	lastWrite := map[string]edgeWrite{} // key → its newest write, acknowledged or not
	for _, wr := range h.writes {
		lastWrite[wr.key] = wr
	}
	missed := 0
	for _, wr := range h.writes {
		if wr.rev == 0 || wr.key[len("vpc.")] != 'a' || delivered[wr.rev] {
			continue
		}
		if lastWrite[wr.key].rev == wr.rev {
			t.Errorf("%s at revision %d, the key's newest write, never delivered", wr.key, wr.rev)
		}
		missed++
	}
	if len(events) < 100 {
		t.Errorf("only %d events after the sync: the check proves little", len(events))
	}
	t.Logf("%d writes, %d events after the sync, %d writes replaced before the watcher could see them", len(h.writes), len(events), missed)
}
