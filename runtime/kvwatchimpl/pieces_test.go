package kvwatchimpl

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/subjects"
)

// Table tests of the engine's pure pieces: no server, no watcher.

func TestCatchUpPlan(t *testing.T) {
	for _, c := range []struct {
		name                 string
		plan                 catchUpPlan
		applied              []uint64
		wantFrom             uint64
		wantReached, nothing bool
		wantLastPerSubject   bool
	}{
		{name: "exact read, nothing after", plan: catchUpPlan{from: 7, target: 7, exact: true, pending: true}, wantFrom: 7, wantReached: true, nothing: true},
		{name: "a read behind its target", plan: catchUpPlan{from: 3, target: 9, pending: true}, applied: []uint64{4, 6}, wantFrom: 6},
		{name: "the target reached", plan: catchUpPlan{from: 3, target: 9, pending: true}, applied: []uint64{5, 9}, wantFrom: 9, wantReached: true},
		{name: "an older entry does not move from back", plan: catchUpPlan{from: 8, target: 9, pending: true}, applied: []uint64{5}, wantFrom: 8},
		{name: "exact but with entries to skip", plan: catchUpPlan{from: 7, target: 7, exact: true, pending: true, skip: &dedupeWindow{}}, wantFrom: 7, wantReached: true},
		{name: "last per subject before anything", plan: catchUpPlan{lastPerSubject: true, target: 5, pending: true}, wantLastPerSubject: true},
		{name: "last per subject after an entry", plan: catchUpPlan{lastPerSubject: true, target: 5, pending: true}, applied: []uint64{3}, wantFrom: 3},
		{name: "last per subject at the target", plan: catchUpPlan{lastPerSubject: true, target: 5, pending: true}, applied: []uint64{2, 5}, wantFrom: 5, wantReached: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.plan
			for _, rev := range c.applied {
				p.applied(rev)
			}
			if p.from != c.wantFrom || p.reached() != c.wantReached || p.needsNothing() != c.nothing || p.lastPerSubject != c.wantLastPerSubject {
				t.Errorf("from %d reached %v needsNothing %v lastPerSubject %v; want %d %v %v %v",
					p.from, p.reached(), p.needsNothing(), p.lastPerSubject, c.wantFrom, c.wantReached, c.nothing, c.wantLastPerSubject)
			}
		})
	}
}

// finish turns the plan into the live tail's, runs done once and forgets
// what only the catch-up needed.
func TestCatchUpPlanFinish(t *testing.T) {
	ran := 0
	p := catchUpPlan{from: 4, pending: true, initial: true, skip: &dedupeWindow{}, added: subjects.NewMatcher([]string{"a.>"}), done: func() { ran++ }}
	if p.live() || !p.initialEntry("b") || !p.initialEntry("a.x") {
		t.Fatalf("before finish: live %v, initial %v", p.live(), p.initialEntry("b"))
	}
	p.finish()
	p.finish()
	if !p.live() || ran != 1 || p.skip != nil || p.initialEntry("a.x") || p.from != 4 {
		t.Errorf("after finish: live %v, done ran %d times, skip %v, initial %v, from %d", p.live(), ran, p.skip, p.initialEntry("a.x"), p.from)
	}
}

func TestDedupeWindow(t *testing.T) {
	a := &dedupeWindow{groups: []dedupeGroup{{keys: subjects.NewMatcher([]string{"vpc.a.>"}), upTo: 10}}, upTo: 10}
	b := &dedupeWindow{groups: []dedupeGroup{{keys: subjects.NewMatcher([]string{"vpc.b.>"}), upTo: 20}}, upTo: 20}
	both := a.with(b)
	for _, c := range []struct {
		name string
		w    *dedupeWindow
		e    rawEntry
		want bool
	}{
		{"read by a request at a later revision", a, rawEntry{key: "vpc.a.r", revision: 9, ordered: true}, true},
		{"at the request's revision", a, rawEntry{key: "vpc.a.r", revision: 10, ordered: true}, true},
		{"after the request", a, rawEntry{key: "vpc.a.r", revision: 11, ordered: true}, false},
		{"a key no request read", a, rawEntry{key: "vpc.b.r", revision: 9, ordered: true}, false},
		{"not in stream order (a read's own entry)", a, rawEntry{key: "vpc.a.r", revision: 9}, false},
		{"no window", nil, rawEntry{key: "vpc.a.r", revision: 1, ordered: true}, false},
		{"joined: the first group", both, rawEntry{key: "vpc.a.r", revision: 10, ordered: true}, true},
		{"joined: the first group's keys past its revision", both, rawEntry{key: "vpc.a.r", revision: 15, ordered: true}, false},
		{"joined: the second group", both, rawEntry{key: "vpc.b.r", revision: 15, ordered: true}, true},
	} {
		if got := c.w.covers(&c.e); got != c.want {
			t.Errorf("%s: covers(%s@%d) = %v, want %v", c.name, c.e.key, c.e.revision, got, c.want)
		}
	}
	if a.with(nil) != a || (*dedupeWindow)(nil).with(b) != b {
		t.Error("with a nil window is not the other window")
	}
}

func TestRescopeQueue(t *testing.T) {
	q := rescopeQueue{wake: make(chan struct{}, 1)}
	if q.add([]string{"a"}, []string{"a"}) != nil {
		t.Fatal("a request for the current filters was queued")
	}
	r1 := q.add([]string{"b"}, []string{"a"})
	if r1 == nil || !q.waitingAny() || len(q.wake) != 1 {
		t.Fatal("a request for other filters was not queued, or did not wake the event goroutine")
	}
	if q.add([]string{"b"}, []string{"a"}) != r1 {
		t.Error("the same filters twice made two requests")
	}
	r2 := q.add([]string{"c"}, []string{"a"})
	taken := q.take()
	if len(taken) != 2 || taken[0] != r1 || taken[1] != r2 || q.waitingAny() {
		t.Fatalf("take = %v, want both requests oldest first and none waiting", taken)
	}
	// While c is applied, a call for c joins it; one for the current
	// filters (a) is a change back, queued.
	if q.add([]string{"c"}, []string{"a"}) != r2 {
		t.Error("a call for the filters being applied did not join them")
	}
	r3 := q.add([]string{"a"}, []string{"a"})
	if r3 == nil {
		t.Error("a change back while another is applied was not queued")
	}
	q.finish(nil, false)
	for _, r := range []*rescopeRequest{r1, r2} {
		select {
		case <-r.finished:
		default:
			t.Error("finish did not report to the requests being applied")
		}
	}
	select {
	case <-r3.finished:
		t.Error("finish of the batch applied reported to a waiting request")
	default:
	}
	q.finish(errTest, true)
	<-r3.finished
	if r3.err != errTest {
		t.Errorf("the watch's end reported %v to a waiting request, want %v", r3.err, errTest)
	}
}

var errTest = &errConsumerBroken{why: "test"}

// The creation timeout grows with the filters' O(F²) cost and doubles per
// attempt, up to a ceiling of ten times that cost (at least a second, at
// most maxCreateTimeout), never below the first attempt's.
func TestCreateTimeout(t *testing.T) {
	for _, c := range []struct {
		filters, attempt int
		want             time.Duration
	}{
		{0, 0, 500 * time.Millisecond},
		{0, 1, time.Second},
		{0, 6, time.Second}, // the ceiling: at least a second
		{1000, 0, 610 * time.Millisecond},
		{1000, 1, time.Second}, // 10× the cost (550 ms) is below a second
		{3000, 0, 1490 * time.Millisecond},
		{3000, 1, 2980 * time.Millisecond},
		{3000, 2, 4950 * time.Millisecond}, // 10× the cost
		{10000, 0, 11500 * time.Millisecond},
		{10000, 1, 23 * time.Second},
		{10000, 2, maxCreateTimeout},
		{100000, 0, 500*time.Millisecond + 1100*time.Second}, // above the ceiling: never below the first
		{100000, 3, 500*time.Millisecond + 1100*time.Second},
	} {
		if got := createTimeout(c.filters, c.attempt); got != c.want {
			t.Errorf("createTimeout(%d filters, attempt %d) = %v, want %v", c.filters, c.attempt, got, c.want)
		}
	}
}

func TestPendingBatch(t *testing.T) {
	hdr := func(kv ...string) nats.Header {
		h := nats.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, c := range []struct {
		name     string
		e        rawEntry
		hdr      nats.Header
		wantID   string
		wantLast bool
	}{
		{"no headers", rawEntry{}, nil, "", false},
		{"the server's marks, not the last", rawEntry{}, hdr(batchIDHeader, "b1"), "b1", false},
		{"the server's commit", rawEntry{}, hdr(batchIDHeader, "b1", batchCommitHeader, "1"), "b1", true},
		{"the client's own marks (a mirror)", rawEntry{}, hdr(ownBatchIDHeader, "c1", ownBatchPosHeader, "2/3"), "c1", false},
		{"the client's last", rawEntry{}, hdr(ownBatchIDHeader, "c1", ownBatchPosHeader, "3/3"), "c1", true},
		{"the server's marks win", rawEntry{}, hdr(batchIDHeader, "b1", ownBatchIDHeader, "c1", ownBatchPosHeader, "3/3"), "b1", false},
		{"a state entry is no batch's", rawEntry{state: true}, hdr(batchIDHeader, "b1", batchCommitHeader, "1"), "", false},
	} {
		var b pendingBatch
		id, last := b.mark(c.e, c.hdr)
		if id != c.wantID || last != c.wantLast {
			t.Errorf("%s: mark = %q, %v; want %q, %v", c.name, id, last, c.wantID, c.wantLast)
		}
	}
	var b pendingBatch
	if b.held() || b.closes("") || b.closes("x") {
		t.Fatal("an empty collector holds or closes something")
	}
	b.hold("x", rawEntry{revision: 1})
	b.hold("x", rawEntry{revision: 2})
	if !b.held() || b.closes("x") || !b.closes("y") || !b.closes("") {
		t.Errorf("holding x: held %v, closes x %v, y %v, none %v", b.held(), b.closes("x"), b.closes("y"), b.closes(""))
	}
	b.reset()
	if b.held() || b.id != "" || cap(b.entries) < 2 {
		t.Errorf("after reset: held %v, id %q, room %d", b.held(), b.id, cap(b.entries))
	}
}
