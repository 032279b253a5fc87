package kvwatchimpl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// This file is a server that goes back in time: restarted on an older copy
// of its store, as after a crash that lost writes it had acknowledged, or
// a restore from a backup (kvwatchtest.Node.Backup). A watcher must
// notice, say so, and end with the bucket's state as it is.

// heldDialer dials NATS servers, unless held: then a dial waits until it
// is released. It keeps a watcher's connection away from the server
// while other clients write.
type heldDialer struct {
	mu   sync.Mutex
	gate chan struct{} // nil when not held
}

func (d *heldDialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	gate := d.gate
	d.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return net.DialTimeout(network, address, 2*time.Second)
}

func (d *heldDialer) hold() {
	d.mu.Lock()
	d.gate = make(chan struct{})
	d.mu.Unlock()
}

func (d *heldDialer) release() {
	d.mu.Lock()
	if d.gate != nil {
		close(d.gate)
		d.gate = nil
	}
	d.mu.Unlock()
}

// rewound is a server whose store goes back: writes made after its backup
// are lost when restore runs.
type rewound struct {
	node    *kvwatchtest.Node
	admin   jetstream.JetStream
	kv      jetstream.KeyValue
	dialer  *heldDialer
	restore func()
}

// newRewound starts a server with bucket network holding vpc a's routes
// r1..r5, then backs it up.
func newRewound(t *testing.T) *rewound {
	r := &rewound{node: kvwatchtest.StartNode(t, &server.Options{}), dialer: &heldDialer{}}
	_, r.admin = kvwatchtest.Connect(t, r.node.Server, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	r.kv = kvwatchtest.Bucket(t, r.admin, "network")
	for i := 1; i <= 5; i++ {
		put(t, r.kv, fmt.Sprintf("vpc.a.route.r%d", i), route{CIDR: "v1"})
	}
	t.Cleanup(r.dialer.release)
	r.restore = r.node.Backup(t)
	r.kv = r.bucket(t)
	return r
}

// watcherConn connects a watcher through the held dialer.
func (r *rewound) watcherConn(t *testing.T) jetstream.JetStream {
	_, js := kvwatchtest.Connect(t, r.node.Server, nats.SetCustomDialer(r.dialer), nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	return js
}

// bucket returns a handle of the bucket once the server takes requests.
func (r *rewound) bucket(t *testing.T) jetstream.KeyValue {
	var kv jetstream.KeyValue
	kvwatchtest.Eventually(t, 10*time.Second, "the bucket after a restart", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var err error
		kv, err = r.admin.KeyValue(ctx, "network")
		return err == nil
	})
	return kv
}

// loseWrites makes the writes that the restore loses: r1 changed, r6
// created, r2 deleted. It returns the last one's revision.
func (r *rewound) loseWrites(t *testing.T) uint64 {
	put(t, r.kv, "vpc.a.route.r1", route{CIDR: "lost"})
	put(t, r.kv, "vpc.a.route.r6", route{CIDR: "lost"})
	if err := r.kv.Delete(context.Background(), "vpc.a.route.r2"); err != nil {
		t.Fatal(err)
	}
	return r.lastSeq(t)
}

// lastSeq returns the stream's last sequence.
func (r *rewound) lastSeq(t *testing.T) uint64 {
	stream, err := r.admin.Stream(context.Background(), "KV_network")
	if err != nil {
		t.Fatal(err)
	}
	return stream.CachedInfo().State.LastSeq
}

// routesState returns the routes of vpc a in the cache, as bucketState
// renders them.
func routesState(routes *kvwatchimpl.Binding[routeKey, route]) []string {
	var state []string
	for _, e := range routes.Cache().List() {
		v, _ := json.Marshal(e.Value)
		state = append(state, fmt.Sprintf("%s@%d=%s", e.Key, e.Revision, v))
	}
	return state
}

// newWrites makes n writes after the restore, the first of them r3, and
// returns the last one's revision.
func (r *rewound) newWrites(t *testing.T, n int) uint64 {
	var rev uint64
	for i := range n {
		key := "vpc.a.route.r3"
		if i > 0 {
			key = fmt.Sprintf("vpc.a.route.n%d", i)
		}
		rev = put(t, r.kv, key, route{CIDR: "new"})
	}
	return rev
}

// watched is a watcher of vpc a through the held dialer: its reports, its
// routes binding and the log of its route events ("op key unknown=...").
type watched struct {
	w      *kvwatchimpl.Watcher
	rec    *recorder
	routes *kvwatchimpl.Binding[routeKey, route]
	events func() []string
}

// watch starts a watcher of vpc a through the held dialer and waits until
// it is synced.
func (r *rewound) watch(t *testing.T, opts ...kvwatch.Option) watched {
	t.Helper()
	v := watched{rec: newRecorder()}
	v.routes, v.events = routeOpLog()
	var err error
	v.w, err = kvwatchimpl.Start(context.Background(), r.watcherConn(t), &network, vpcs("a"),
		[]kvwatchimpl.AnyBinding{v.routes, kvwatchimpl.Bind(&vpcKind, nil)}, append(v.rec.options(), opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.w.Stop)
	waitSynced(t, v.w)
	return v
}

// wentBackReported waits for OnError to have a *StreamWentBackError.
func wentBackReported(t *testing.T, rec *recorder) *kvwatch.StreamWentBackError {
	t.Helper()
	var wb *kvwatch.StreamWentBackError
	rec.waitFor(t, "a StreamWentBackError", func(_ []got, errs []error) bool {
		for _, err := range errs {
			if errors.As(err, &wb) && errors.Is(err, kvwatch.ErrStreamWentBack) {
				return true
			}
		}
		return false
	})
	return wb
}

// A live watcher that applied writes the server then lost notices when it
// reconnects, reports it and re-lists: its caches are the bucket's as it
// is, the lost keys deleted with FinalStateUnknown, the lost values
// replaced. Fewer new writes than were lost leave the stream's last
// sequence below the watcher's revision; more make the revisions the
// watcher applied hold other entries. Before, the watcher went on from its
// revision and kept the lost values for good.
func TestLiveWatcherNoticesTheStreamWentBack(t *testing.T) {
	for _, c := range []struct {
		name     string
		newCount int
		at       bool // the report names an entry the stream holds otherwise
	}{
		{"last sequence below the watcher's", 1, false},
		{"another entry at a revision it applied", 6, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRewound(t)
			v := r.watch(t)
			w, rec, routes, events := v.w, v.rec, v.routes, v.events
			// A restart that loses nothing is no loss.
			r.node.Restart(t)
			r.kv = r.bucket(t)
			lost := r.loseWrites(t)
			waitRevision(t, w, lost)
			if n := w.Stats().StreamWentBack; n != 0 {
				t.Fatalf("StreamWentBack = %d after a plain restart", n)
			}
			before := len(events())

			r.dialer.hold() // the watcher stays away until the new writes are made
			r.restore()
			r.kv = r.bucket(t)
			last := r.newWrites(t, c.newCount)
			if (last >= lost) != c.at {
				t.Fatalf("the new writes end at %d, the lost ones at %d", last, lost)
			}
			r.dialer.release()

			wb := wentBackReported(t, rec)
			if wb.Revision != lost || wb.Resumed || (wb.At != 0) != c.at {
				t.Errorf("reported %+v; want the watcher's revision %d, At set: %v", wb, lost, c.at)
			}
			kvwatchtest.Eventually(t, 10*time.Second, "the caches the bucket's state", func() bool {
				return slices.Equal(routesState(routes), bucketState(t, r.kv, "a"))
			})
			if n := w.Stats().StreamWentBack; n != 1 {
				t.Errorf("StreamWentBack = %d, want 1", n)
			}
			// r6 vanished: a delete whose final state is unknown; r1's
			// change and r2's delete were lost: both come back as puts.
			kvwatchtest.Eventually(t, 10*time.Second, "the re-list's events", func() bool {
				return slices.Contains(events()[before:], "delete vpc.a.route.r6 unknown=true")
			})
			for _, want := range []string{"put vpc.a.route.r1 unknown=false", "put vpc.a.route.r2 unknown=false", "put vpc.a.route.r3 unknown=false"} {
				if !slices.Contains(events()[before:], want) {
					t.Errorf("no %q after the loss: %q", want, events()[before:])
				}
			}
			// The watch goes on.
			rev := put(t, r.kv, "vpc.a.route.after", route{CIDR: "after"})
			waitRevision(t, w, rev)
			if got, want := routesState(routes), bucketState(t, r.kv, "a"); !slices.Equal(got, want) {
				t.Errorf("after the re-list and a write: %v, want %v", got, want)
			}
		})
	}
}

// A watcher resumed from a checkpoint taken before the loss notices too,
// whether or not new writes have pushed the stream's last sequence past
// the checkpoint's revision: it reports the loss and re-lists instead of
// taking a delta that would skip the new writes at the lost revisions.
func TestResumedWatcherNoticesTheStreamWentBack(t *testing.T) {
	for _, c := range []struct {
		name     string
		newCount int
		noDirect bool // the stream's message API tells instead
	}{
		{"last sequence below the checkpoint's", 1, false},
		{"another entry at a revision in the checkpoint", 6, false},
		{"another entry, without direct get", 6, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRewound(t)
			lost := r.loseWrites(t)
			cp := checkpointOf(t, r.admin, vpcs("a"))
			if cp.Revision != lost {
				t.Fatalf("checkpoint at %d, want %d", cp.Revision, lost)
			}
			r.restore()
			r.kv = r.bucket(t)
			r.newWrites(t, c.newCount)
			if c.noDirect {
				disableDirectGet(t, r.admin)
				r.kv = r.bucket(t) // a handle that knows
			}

			v := r.watch(t, kvwatchimpl.Resume(cp))
			w, rec, routes, events := v.w, v.rec, v.routes, v.events
			wb := wentBackReported(t, rec)
			if !wb.Resumed || wb.Revision != cp.Revision {
				t.Errorf("reported %+v, want Resumed at the checkpoint's revision %d", wb, cp.Revision)
			}
			if s := w.Stats(); s.Resume != "relist" || s.StreamWentBack != 1 {
				t.Errorf("Resume %q, StreamWentBack %d; want relist, 1", s.Resume, s.StreamWentBack)
			}
			if got, want := routesState(routes), bucketState(t, r.kv, "a"); !slices.Equal(got, want) {
				t.Errorf("caches at sync: %v, want %v", got, want)
			}
			if !slices.Contains(events(), "delete vpc.a.route.r6 unknown=true") {
				t.Errorf("no delete of the lost r6: %q", events())
			}
		})
	}
}

// A watcher whose revision is past its newest entry (WaitRevision raised
// it over writes outside its scopes) notices a loss that reaches back
// before that entry: the stream keeps the entry, but now holds a write in
// the watcher's scopes at a revision the watcher already counts as seen.
// Without the check, its consumer would start after that write, and the
// write would never reach it.
func TestLiveWatcherNoticesALossPastItsNewestEntry(t *testing.T) {
	r := newRewound(t)
	v := r.watch(t)
	w, rec, routes := v.w, v.rec, v.routes
	var outside uint64
	for i := range 5 {
		outside = put(t, r.kv, fmt.Sprintf("vpc.b.route.x%d", i), route{CIDR: "lost"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.WaitRevision(ctx, outside); err != nil {
		t.Fatal(err)
	}

	r.dialer.hold()
	r.restore() // back to vpc a's r1..r5, before the writes outside
	r.kv = r.bucket(t)
	put(t, r.kv, "vpc.a.route.new", route{CIDR: "new"}) // at a revision the watcher counts as seen
	for r.lastSeq(t) < outside {
		put(t, r.kv, "vpc.b.route.y", route{CIDR: "new"})
	}
	r.dialer.release()

	wb := wentBackReported(t, rec)
	if wb.Key != "" || wb.Found != "vpc.a.route.new" {
		t.Errorf("reported %+v, want the write in scope the watcher never saw", wb)
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the caches the bucket's state", func() bool {
		return slices.Equal(routesState(routes), bucketState(t, r.kv, "a"))
	})
}

// WaitRevision for a revision the watcher has not reached returns the
// loss when the stream goes back meanwhile: the write at that revision may
// be gone, and the next one there another write.
func TestWaitRevisionAcrossAStreamGoneBack(t *testing.T) {
	r := newRewound(t)
	w := r.watch(t).w
	lost := r.loseWrites(t)
	waitRevision(t, w, lost)
	waited := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		waited <- w.WaitRevision(ctx, lost+100)
	}()
	r.restore()
	select {
	case err := <-waited:
		if !errors.Is(err, kvwatch.ErrStreamWentBack) {
			t.Errorf("WaitRevision across the loss = %v, want ErrStreamWentBack", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("WaitRevision did not return within 15 s of the loss")
	}
}

// A direct get is answered by any replica of a replicated stream, and one
// behind the leader holds nothing at or after a revision it has not
// stored yet. The stream check must not take that for a stream gone back
// (found by the soak in a 3-node cluster: a false report, then a re-list
// from the replica behind took a key back to an older value): the
// stream's leader, asked through its message API, holds the entry.
func TestAReplicaBehindIsNoStreamGoneBack(t *testing.T) {
	js, kv := setup(t)
	var behindFrom atomic.Uint64 // 0: no replica behind
	behind := func(seq uint64) bool { from := behindFrom.Load(); return from > 0 && seq >= from }
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r, kvwatchimpl.WithReplicaBehind(behind))
	waitSynced(t, w)
	var last uint64
	for i := range 3 {
		last = put(t, kv, fmt.Sprintf("vpc.a.route.r%d", i), route{CIDR: "a"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.WaitRevision(ctx, last); err != nil {
		t.Fatal(err)
	}
	// From now on the replica answering direct gets has not stored the
	// newest entry the watcher applied; SetScopes' catch-up ends with a
	// check of the stream.
	behindFrom.Store(last)
	put(t, kv, "vpc.b.route.r0", route{CIDR: "b"})
	if err := w.SetScopes(ctx, vpcs("a", "b")); err != nil {
		t.Fatal(err)
	}
	if n := w.Stats().StreamWentBack; n != 0 {
		_, errs := r.snapshot()
		t.Fatalf("a replica behind was reported as the stream gone back %d times: %v", n, errs)
	}
	if _, errs := r.snapshot(); slices.ContainsFunc(errs, func(err error) bool { return errors.Is(err, kvwatch.ErrStreamWentBack) }) {
		t.Fatalf("OnError got a stream gone back: %v", errs)
	}
}

// A leader in touch with its replicas once answered the stream's info
// with a last sequence below the revision of an entry the watcher had
// just applied from its consumer (the cluster's robustness run, seed
// 1796658929664632081: "its last sequence 3768 is below the watcher's
// revision 3769", no loss injected), and the re-list that followed
// delivered that entry a second time. Such an answer is the stream gone
// back only if it still holds when asked again: once is a store a moment
// behind.
func TestAnInfoBehindOnceIsNoStreamGoneBack(t *testing.T) {
	js, kv := setup(t)
	var behindOnce atomic.Bool
	behind := func(uint64) bool { return behindOnce.CompareAndSwap(true, false) }
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r, kvwatchimpl.WithInfoBehind(behind))
	waitSynced(t, w)
	var last uint64
	for i := range 3 {
		last = put(t, kv, fmt.Sprintf("vpc.a.route.r%d", i), route{CIDR: "a"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.WaitRevision(ctx, last); err != nil {
		t.Fatal(err)
	}
	behindOnce.Store(true) // the check at the end of SetScopes' catch-up
	put(t, kv, "vpc.b.route.r0", route{CIDR: "b"})
	if err := w.SetScopes(ctx, vpcs("a", "b")); err != nil {
		t.Fatal(err)
	}
	if behindOnce.Load() {
		t.Fatal("the stream was not checked")
	}
	if n := w.Stats().StreamWentBack; n != 0 {
		_, errs := r.snapshot()
		t.Fatalf("one answer behind was reported as the stream gone back %d times: %v", n, errs)
	}
}

// A replica behind (its direct get finds nothing at a revision the
// watcher applied) is asked of the stream's leader; a leader that does
// not answer (a request lost to a silent link, a leader being elected)
// tells nothing either: the check is retried, and no stream gone back is
// reported. Before, an unanswered question counted as the leader holding
// nothing: a false report, and a re-list, in the cluster's robustness runs.
func TestALeaderNotAnsweringIsNoStreamGoneBack(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, jsDirect := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.Bucket(t, jsDirect, "network")
	p := netfault.Start(t, s.ClientURL())
	_, js := connectURLs(t, p.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	var behindFrom atomic.Uint64 // 0: no replica behind
	var silenced atomic.Bool
	behind := func(seq uint64) bool {
		from := behindFrom.Load()
		if from == 0 || seq < from {
			return false
		}
		if silenced.CompareAndSwap(false, true) {
			p.Blackhole() // the question to the leader goes unanswered
		}
		return true
	}
	healed := make(chan struct{})
	var healOnce sync.Once
	logger := slog.New(logWatch{match: "retrying", on: func() {
		if silenced.Load() {
			healOnce.Do(func() { p.Heal(); close(healed) })
		}
	}})
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r, kvwatchimpl.WithReplicaBehind(behind),
		kvwatch.WithRequestTimeout(time.Second), kvwatch.WithLogger(logger))
	waitSynced(t, w)
	last := put(t, kv, "vpc.a.route.r0", route{CIDR: "a"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WaitRevision(ctx, last); err != nil {
		t.Fatal(err)
	}
	behindFrom.Store(last)
	put(t, kv, "vpc.b.route.r0", route{CIDR: "b"})
	if err := w.SetScopes(ctx, vpcs("a", "b")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-healed:
	default:
		t.Fatal("the check did not fail while the leader was not answering: the test did not test")
	}
	if n := w.Stats().StreamWentBack; n != 0 {
		_, errs := r.snapshot()
		t.Fatalf("a leader not answering was reported as the stream gone back %d times: %v", n, errs)
	}
}
