package kvwatchimpl_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// This file is the robustness test's oracle: every write, with the
// revision the server acknowledged it at, and the writers that make them.
// A write that times out during a fault is sent again with the same
// Nats-Msg-Id, which the stream deduplicates: its acknowledgement then
// carries the revision of the copy that was stored, so the record is
// exact through restarts and failovers. An atomic batch cannot carry
// message ids: one whose outcome is unknown is looked up on the stream
// before it is sent again (sendBatch).

// hwrite is one recorded write.
type hwrite struct {
	epoch int // the bucket's incarnation: deleting and recreating it starts a new one
	rev   uint64
	key   string
	op    string // PUT, DEL or PURGE
	value string
	batch string // the id of the atomic batch it was written in, if any
}

// history records the writes of a run.
type history struct {
	mu     sync.Mutex
	epoch  int
	writes []hwrite
	// rewound holds, for an epoch begun by the store going back, the epoch
	// it went back from and the last revision it kept of it.
	rewound map[int]rewind
	// sorted caches writes of one epoch by revision, for stateAt.
	sorted      map[int][]hwrite
	sortedCount int
}

func (h *history) record(w hwrite) {
	h.mu.Lock()
	h.writes = append(h.writes, w)
	h.mu.Unlock()
}

func (h *history) currentEpoch() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.epoch
}

func (h *history) newEpoch() {
	h.mu.Lock()
	h.epoch++
	h.mu.Unlock()
}

// rewind starts a new epoch that holds the current one's writes up to
// rev: the store went back to it, losing the writes after, whose
// revisions the next writes reuse.
func (h *history) rewind(rev uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.epoch
	h.epoch++
	if h.rewound == nil {
		h.rewound = map[int]rewind{}
	}
	h.rewound[h.epoch] = rewind{from: old, kept: rev}
	for _, w := range h.writes[:len(h.writes)] {
		if w.epoch == old && w.rev <= rev {
			w.epoch = h.epoch
			h.writes = append(h.writes, w)
		}
	}
}

// rewind is how an epoch began: the store went back from epoch from,
// keeping its writes up to revision kept.
type rewind struct {
	from int
	kept uint64
}

// sharedUpTo reports whether epoch later descends from epoch a by the
// store going back, and up to which revision the two hold the same writes.
func (h *history) sharedUpTo(a, later int) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	shared := ^uint64(0)
	for e := later; e != a; {
		r, ok := h.rewound[e]
		if !ok {
			return 0, false
		}
		shared = min(shared, r.kept)
		e = r.from
	}
	return shared, true
}

// epochWrites returns the writes of an epoch sorted by revision.
func (h *history) epochWrites(epoch int) []hwrite {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sortedCount != len(h.writes) {
		h.sorted, h.sortedCount = map[int][]hwrite{}, len(h.writes)
		for _, w := range h.writes {
			h.sorted[w.epoch] = append(h.sorted[w.epoch], w)
		}
		for _, ws := range h.sorted {
			slices.SortFunc(ws, func(a, b hwrite) int { return cmp.Compare(a.rev, b.rev) })
		}
	}
	return h.sorted[epoch]
}

// newest returns the current epoch and the revision of its newest write
// acknowledged so far (0 when none).
func (h *history) newest() (epoch int, rev uint64) {
	epoch = h.currentEpoch()
	if ws := h.epochWrites(epoch); len(ws) > 0 {
		rev = ws[len(ws)-1].rev
	}
	return epoch, rev
}

// write returns the write of epoch at rev, if any.
func (h *history) write(epoch int, rev uint64) (hwrite, bool) {
	ws := h.epochWrites(epoch)
	i, ok := slices.BinarySearchFunc(ws, rev, func(w hwrite, rev uint64) int { return cmp.Compare(w.rev, rev) })
	if !ok {
		return hwrite{}, false
	}
	return ws[i], true
}

// stateAt returns the newest write at or below rev of every key that
// exists then (its newest write a put), in epoch.
func (h *history) stateAt(epoch int, rev uint64) map[string]hwrite {
	state := map[string]hwrite{}
	for _, w := range h.epochWrites(epoch) {
		if w.rev > rev {
			break
		}
		if w.op == "PUT" {
			state[w.key] = w
		} else {
			delete(state, w.key)
		}
	}
	return state
}

// keyWrites returns the writes of key in epoch, by revision.
func (h *history) keyWrites(epoch int, key string) []hwrite {
	var out []hwrite
	for _, w := range h.epochWrites(epoch) {
		if w.key == key {
			out = append(out, w)
		}
	}
	return out
}

// writer makes random writes to the robustness test's keys and records
// them. It can be paused (a bucket being deleted and made again).
type writer struct {
	js   jetstream.JetStream
	hist *history
	rng  *rand.Rand
	vpcs int // VPCs v0..v<vpcs-1>
	// gate is held for reading by each write and for writing by pause:
	// no write is in flight while the bucket is recreated. Shared by the
	// writers of a run.
	gate  *sync.RWMutex
	next  int    // a counter for fresh keys, message ids and batch ids
	runID string // unique to the writer: message ids never repeat
	// fail reports a write the bucket did not take within writeBound
	// while the run went on; the writer then stops, so that the run ends
	// (with that report) instead of waiting for it forever.
	fail   func(string)
	failed bool
	// batchesOnly makes a writer send atomic batches only, at a quarter
	// of writesPerSecond.
	batchesOnly bool
	// Atomic batches: committed and recorded; attempts whose commit had
	// no clear answer and were looked up on the stream, of which found
	// stored; attempts sent again (not stored).
	batches, batchesLookedUp, batchesFound, batchesResent int
}

// writeBound is how long a write is retried while the run goes on: far
// longer than any fault of the run lasts.
const writeBound = time.Minute

// key returns a random key: a route (most), a VPC config, now and then a
// fresh route or a key no template matches.
func (wr *writer) key() string {
	vpc := fmt.Sprintf("v%d", wr.rng.IntN(wr.vpcs))
	switch x := wr.rng.IntN(100); {
	case x < 8:
		return "vpc." + vpc
	case x < 10:
		wr.next++
		return fmt.Sprintf("vpc.%s.route.n%d", vpc, wr.next)
	case x < 11:
		return "vpc." + vpc + ".other.x" // in scope, no template: reported
	default:
		return fmt.Sprintf("vpc.%s.route.r%d", vpc, wr.rng.IntN(40))
	}
}

// op returns a random write of key.
func (wr *writer) op(key string) hwrite {
	wr.next++
	w := hwrite{key: key, op: "PUT"}
	switch x := wr.rng.IntN(100); {
	case x < 12:
		w.op = "DEL"
	case x < 18:
		w.op = "PURGE"
	case x < 20 && strings.Contains(key, ".route."):
		w.value = "not json" // reported as a DataError, the key leaves the cache
	case strings.Contains(key, ".route."):
		w.value = fmt.Sprintf(`{"cidr":"w%d"}`, wr.next)
	default:
		w.value = fmt.Sprintf(`{"name":"w%d"}`, wr.next)
	}
	return w
}

// msg is the message nats.go's KV sends for w, with the message id id
// when it is not "".
func (w hwrite) msg(id string) *nats.Msg {
	m := nats.NewMsg("$KV.network." + w.key)
	if id != "" {
		m.Header.Set(jetstream.MsgIDHeader, id)
	}
	switch w.op {
	case "DEL":
		m.Header.Set("KV-Operation", "DEL")
	case "PURGE":
		m.Header.Set("KV-Operation", "PURGE")
		m.Header.Set("Nats-Rollup", "sub")
	default:
		m.Data = []byte(w.value)
	}
	return m
}

// writesPerSecond is what each writer aims at: enough traffic to race
// every catch-up, not more than slowed-down watchers can apply.
const writesPerSecond = 600

// run writes until ctx ends: single writes, now and then a burst of up
// to 40 in flight at once, and 1 send in 25 an atomic batch of 2 to 8
// writes, about writesPerSecond in all; or only batches (batchesOnly).
func (wr *writer) run(ctx context.Context) {
	start, written := time.Now(), 0
	rate := writesPerSecond
	if wr.batchesOnly {
		rate /= 4
	}
	for ctx.Err() == nil && !wr.failed {
		if ahead := time.Duration(written)*time.Second/time.Duration(rate) - time.Since(start); ahead > 0 {
			sleep(ctx, ahead)
		}
		n := 1
		switch x := wr.rng.IntN(100); {
		case x < 4 || wr.batchesOnly:
			ws := wr.batchWrites()
			wr.sendBatch(ctx, ws)
			written += len(ws)
			continue
		case x < 9:
			n = 1 + wr.rng.IntN(40)
		}
		burst := make([]hwrite, n)
		for i := range burst {
			burst[i] = wr.op(wr.key())
		}
		wr.send(ctx, burst)
		written += n
	}
}

// retryBound bounds the retries of one write or batch: writeBound while
// the run goes on, and once it is over 10 s more, so that a write that
// was stored is recorded.
type retryBound struct {
	ctx      context.Context
	since    time.Time
	deadline time.Time
}

func newRetryBound(ctx context.Context) *retryBound {
	now := time.Now()
	return &retryBound{ctx: ctx, since: now, deadline: now.Add(10 * time.Second)}
}

// retry reports whether what (a write, a batch) may be tried once more;
// when not, it has reported it (wr.fail) and stopped the writer. Once
// the run is over it panics instead: the history would be incomplete.
func (wr *writer) retry(b *retryBound, what string, err error) bool {
	if b.ctx.Err() != nil && time.Now().After(b.deadline) {
		panic(fmt.Sprintf("robustness: %s never settled (last error: %v): the history would be incomplete", what, err))
	}
	if b.ctx.Err() == nil {
		b.deadline = time.Now().Add(10 * time.Second)
	}
	if time.Since(b.since) > writeBound {
		wr.fail(fmt.Sprintf("writer %s: %s not settled in %v while the run went on (last error: %v); the writer stops",
			wr.runID, what, writeBound, err))
		wr.failed = true
		return false
	}
	return true
}

// acknowledged sends w with the message id id until the stream
// acknowledges it (ack, when not nil, is the first attempt's), within b;
// nil when the writer gives up.
func (wr *writer) acknowledged(b *retryBound, w hwrite, id string, ack *jetstream.PubAck) *jetstream.PubAck {
	var err error
	for ack == nil {
		if !wr.retry(b, fmt.Sprintf("write %s (%s)", w.key, id), err) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
		actx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ack, err = wr.js.PublishMsg(actx, w.msg(id))
		cancel()
	}
	return ack
}

// send publishes burst, in flight together, and records each write once
// acknowledged, retrying through faults with the same message ids.
func (wr *writer) send(ctx context.Context, burst []hwrite) {
	wr.gate.RLock()
	defer wr.gate.RUnlock()
	epoch := wr.hist.currentEpoch()
	ids := make([]string, len(burst))
	for i := range burst {
		wr.next++
		ids[i] = fmt.Sprintf("%s-%d", wr.runID, wr.next)
	}
	acks := make([]jetstream.PubAckFuture, len(burst))
	for i, w := range burst {
		f, err := wr.js.PublishMsgAsync(w.msg(ids[i]))
		if err == nil {
			acks[i] = f
		}
	}
	for i, w := range burst {
		var ack *jetstream.PubAck
		if acks[i] != nil {
			select {
			case ack = <-acks[i].Ok():
			case <-acks[i].Err():
			case <-time.After(2 * time.Second):
			}
		}
		// Sent again, with the same id, until the stream acknowledges it.
		if ack = wr.acknowledged(newRetryBound(ctx), w, ids[i], ack); ack == nil {
			return
		}
		w.epoch, w.rev = epoch, ack.Sequence
		wr.hist.record(w)
	}
}

// batchWrites returns 2 to 8 random writes of distinct keys: the server
// refuses a second purge (a rollup) of one subject in a batch.
func (wr *writer) batchWrites() []hwrite {
	n := 2 + wr.rng.IntN(7)
	seen := map[string]bool{}
	var ws []hwrite
	for len(ws) < n {
		if key := wr.key(); !seen[key] {
			seen[key] = true
			ws = append(ws, wr.op(key))
		}
	}
	return ws
}

// batchAttempt is one sending of a batch: its id, its writes with the
// marker among them, and their messages.
type batchAttempt struct {
	id     string
	writes []hwrite
	marker int // the index of the marker in writes
	msgs   []*nats.Msg
}

// newBatchAttempt makes an attempt of ws with a fresh id and a fresh
// marker: a put of a key of its own, written by nothing else and in no
// watcher's scopes (batch.<writer>.m<n>), at a position that varies, so
// that a batch's commit is sometimes out of the watchers' scopes and
// sometimes not.
func (wr *writer) newBatchAttempt(ws []hwrite) *batchAttempt {
	wr.next++
	a := &batchAttempt{id: fmt.Sprintf("%s-b%d", wr.runID, wr.next), marker: wr.next % (len(ws) + 1)}
	marker := hwrite{key: fmt.Sprintf("batch.%s.m%d", wr.runID, wr.next), op: "PUT", value: fmt.Sprintf(`{"batch":%q}`, a.id)}
	a.writes = slices.Insert(slices.Clone(ws), a.marker, marker)
	for i, w := range a.writes {
		m := w.msg("") // a batch cannot carry message ids
		m.Header.Set("Nats-Batch-Id", a.id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if i == len(a.writes)-1 {
			m.Header.Set("Nats-Batch-Commit", "1")
		}
		a.msgs = append(a.msgs, m)
	}
	return a
}

// settleDelay is how long an attempt whose commit had no clear answer is
// left before its fence is written (see sendBatch).
const settleDelay = 500 * time.Millisecond

// sendBatch sends ws as one atomic batch and records its writes, at the
// consecutive revisions ending at the commit's, once the batch is known
// to be stored; through faults, a batch known not to be stored is sent
// again, as a new attempt (a new batch id and marker).
//
// Exact recording. A batch is stored whole or not at all (ADR-50), at
// consecutive sequences, and only once the server processes its commit
// message: an attempt that failed before sending the commit is never
// stored, and is sent again at once. An attempt whose commit was sent
// without a clear answer (a timeout, a lost connection, no responders, an
// error answer: all taken alike) is settled before anything else is sent:
//
//  1. After settleDelay, a fence is written: a put of another key of its
//     own (batch.<writer>.f<n>), with a message id, retried until
//     acknowledged at a revision F. The stream processes the messages it
//     takes in one queue, in order (nats-server: processInboundJetStreamMsg
//     queues them, one goroutine stores them), and this connection sends
//     its messages in order, across reconnects too (what nats.go buffers
//     while disconnected goes out first): so if the commit reached the
//     stream at all, it was processed before the fence, and its batch is
//     stored below F or never. In a cluster the stream's sequence follows
//     the raft log, in which the leader proposes in that order; a leader
//     elected since holds every entry committed before F in its log, an
//     entry it lacks is never committed. The one order the client cannot
//     see: a commit still in the route from the server it was sent
//     through (a node being lost) to the stream leader while the fence
//     goes by another node; settleDelay, beyond what a route takes to
//     hand over what it received, covers that.
//  2. Then the marker and the fence are read by a batched direct get of
//     their last messages ("multi_last"), at the server that answers; a
//     replica that has not stored the fence yet (a follower in a cluster)
//     is asked again. An answer holding the fence at F is of a replica
//     that has stored everything below F (a replica applies the stream's
//     entries in order): the marker is there if and only if the batch is
//     stored. Its key is
//     written by nothing else, so no later write or purge can have taken
//     it away (with a bucket's history of 1, any of the batch's other
//     messages may be gone already), and the bucket is not recreated
//     meanwhile (the gate). Found: the batch's revisions follow from the
//     marker's. Not found: the attempt is sent again, with a new id and
//     a new marker.
//
// The markers and fences are recorded in the history like the other
// writes; no watcher watches them. The fleet's writers write to the hub,
// and read there.
func (wr *writer) sendBatch(ctx context.Context, ws []hwrite) {
	wr.gate.RLock()
	defer wr.gate.RUnlock()
	epoch := wr.hist.currentEpoch()
	b := newRetryBound(ctx)
	var err error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			wr.batchesResent++
			if !wr.retry(b, fmt.Sprintf("batch of %d writes", len(ws)), err) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		a := wr.newBatchAttempt(ws)
		var commit uint64
		var sent bool
		commit, sent, err = wr.publishBatch(a)
		if err != nil && sent {
			wr.batchesLookedUp++
			var found, ok bool
			if commit, found, ok = wr.settleBatch(b, a, epoch, err); !ok {
				return
			}
			if !found {
				continue
			}
			wr.batchesFound++
		} else if err != nil {
			continue // its commit was never sent: not stored
		}
		first := commit - uint64(len(a.writes)) + 1
		for i, w := range a.writes {
			w.epoch, w.rev, w.batch = epoch, first+uint64(i), a.id
			wr.hist.record(w)
		}
		wr.batches++
		return
	}
}

// publishBatch sends an attempt's messages, in flight together: the
// others without a reply subject (the server answers a batch's message
// only when asked to), the commit as a request. It returns the commit's
// revision, or an error and whether the commit was sent. A batch sent
// while the connection is down waits in nats.go's buffer and goes out
// once it is up again, after its commit's request timed out: such a
// batch is looked up, and is often found stored.
func (wr *writer) publishBatch(a *batchAttempt) (commit uint64, sent bool, err error) {
	nc := wr.js.Conn()
	last := len(a.msgs) - 1
	for i, m := range a.msgs[:last] {
		if err := nc.PublishMsg(m); err != nil {
			return 0, false, fmt.Errorf("batch %s, message %d of %d: %w", a.id, i+1, len(a.msgs), err)
		}
	}
	reply, err := nc.RequestMsg(a.msgs[last], 2*time.Second)
	if err != nil {
		return 0, true, fmt.Errorf("batch %s, its commit: %w", a.id, err)
	}
	var ack struct {
		Seq   uint64          `json:"seq"`
		Batch string          `json:"batch"`
		Count int             `json:"count"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(reply.Data, &ack); err != nil || ack.Error != nil || ack.Seq == 0 ||
		ack.Batch != a.id || ack.Count != len(a.msgs) {
		// Looked up rather than trusted: an error (the server dropped a
		// message of the batch, or has no leader), or an answer of
		// another kind than the acknowledgement of this batch.
		return 0, true, fmt.Errorf("batch %s: its commit answered %q", a.id, reply.Data)
	}
	return ack.Seq, true, nil
}

// settleBatch finds out whether an attempt whose commit had no clear
// answer (why) was stored (see sendBatch): its commit's revision if so;
// ok is false when the writer gives up.
func (wr *writer) settleBatch(b *retryBound, a *batchAttempt, epoch int, why error) (commit uint64, found, ok bool) {
	time.Sleep(settleDelay)
	wr.next++
	fence := hwrite{key: fmt.Sprintf("batch.%s.f%d", wr.runID, wr.next), op: "PUT", value: fmt.Sprintf(`{"after":%q}`, a.id)}
	ack := wr.acknowledged(b, fence, fmt.Sprintf("%s-%d", wr.runID, wr.next), nil)
	if ack == nil {
		return 0, false, false
	}
	fence.epoch, fence.rev = epoch, ack.Sequence
	wr.hist.record(fence)
	markerSubject, fenceSubject := "$KV.network."+a.writes[a.marker].key, "$KV.network."+fence.key
	get := directget.New(wr.js, "KV_network", 2*time.Second)
	err := why
	for {
		if !wr.retry(b, fmt.Sprintf("batch %s (looking it up)", a.id), err) {
			return 0, false, false
		}
		var fenceAt, markerAt uint64
		var markerBatch string
		if err = get.Open(context.Background()); err == nil {
			_, err = get.Read(directget.Request{MultiLast: []string{markerSubject, fenceSubject}}, func(m *nats.Msg) {
				switch m.Header.Get("Nats-Subject") {
				case fenceSubject:
					fenceAt = directget.HeaderUint(m, "Nats-Sequence")
				case markerSubject:
					markerAt, markerBatch = directget.HeaderUint(m, "Nats-Sequence"), m.Header.Get("Nats-Batch-Id")
				}
			})
			get.Close()
		}
		switch {
		case err == nil && fenceAt == fence.rev && markerAt == 0:
			return 0, false, true
		case err == nil && fenceAt == fence.rev && (markerBatch != a.id || markerAt >= fence.rev):
			wr.fail(fmt.Sprintf("writer %s: batch %s: its marker is stored at %d with batch id %q (fence at %d); the writer stops",
				wr.runID, a.id, markerAt, markerBatch, fence.rev))
			wr.failed = true
			return 0, false, false
		case err == nil && fenceAt == fence.rev:
			return markerAt + uint64(len(a.writes)-1-a.marker), true, true
		case err == nil || errors.Is(err, directget.ErrNoResults):
			err = fmt.Errorf("batch %s: the server answering holds the fence at %d, not at %d yet", a.id, fenceAt, fence.rev)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pause stops every write (waiting for those in flight) until resume is
// called.
func (wr *writer) pause() (resume func()) {
	wr.gate.Lock()
	return wr.gate.Unlock
}

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// The robustness writer's record of an atomic batch is exact when the
// commit has no clear answer: a batch stored (its answer lost, every
// message but the marker purged since) is found at its revisions, one whose commit never reached the stream or
// was refused is found not stored; and what sendBatch records is what
// the stream holds.
func TestWriterSettlesBatches(t *testing.T) {
	node := kvwatchtest.StartNode(t, &server.Options{})
	nc, js := kvwatchtest.Connect(t, node.Server)
	kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", History: 64})
	mustAllowBatches(t, js)
	var failures []string
	wr := &writer{js: js, hist: &history{}, rng: rand.New(rand.NewPCG(1, 2)), vpcs: 2, gate: &sync.RWMutex{}, runID: "t",
		fail: func(msg string) { failures = append(failures, msg) }}
	ctx := context.Background()
	lastSeq := func() uint64 {
		stream, err := js.Stream(ctx, "KV_network")
		if err != nil {
			t.Fatal(err)
		}
		return stream.CachedInfo().State.LastSeq
	}
	publish := func(msgs ...*nats.Msg) { // without a reply subject: no answer
		for _, m := range msgs {
			if err := nc.PublishMsg(m); err != nil {
				t.Fatal(err)
			}
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	settle := func(a *batchAttempt) (uint64, bool) {
		commit, found, ok := wr.settleBatch(newRetryBound(ctx), a, 0, errors.New("no answer"))
		if !ok {
			t.Fatalf("settling batch %s: gave up: %v", a.id, failures)
		}
		return commit, found
	}

	stored := wr.newBatchAttempt(wr.batchWrites())
	publish(stored.msgs...)
	kvwatchtest.Eventually(t, 5*time.Second, "the batch stored", func() bool { return lastSeq() >= uint64(len(stored.msgs)) })
	want := lastSeq()
	for i, w := range stored.writes {
		if i != stored.marker {
			publish(hwrite{key: w.key, op: "PURGE"}.msg(""))
		}
	}
	if commit, found := settle(stored); !found || commit != want {
		t.Errorf("a stored batch: settled as found=%v at %d, want found at %d", found, commit, want)
	}

	partial := wr.newBatchAttempt(wr.batchWrites())
	publish(partial.msgs[0]) // its commit never sent
	if _, found := settle(partial); found {
		t.Error("a batch whose commit was never sent: settled as stored")
	}
	refused := wr.newBatchAttempt(wr.batchWrites())
	publish(refused.msgs[len(refused.msgs)-1]) // a commit without the rest: refused
	if _, found := settle(refused); found {
		t.Error("a batch whose commit was refused: settled as stored")
	}

	for range 5 {
		wr.sendBatch(ctx, wr.batchWrites())
	}
	if wr.batches != 5 || len(failures) > 0 {
		t.Fatalf("%d batches recorded of 5, failures %v", wr.batches, failures)
	}
	ws := wr.hist.epochWrites(0)
	for i, w := range ws {
		m, err := js.Conn().Request("$JS.API.DIRECT.GET.KV_network", fmt.Appendf(nil, `{"seq":%d}`, w.rev), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m.Header.Get("Status") == "404" &&
			slices.ContainsFunc(ws[i+1:], func(later hwrite) bool { return later.key == w.key && later.op == "PURGE" }) {
			continue // rolled up by a later purge of the key
		}
		op := m.Header.Get("KV-Operation")
		if op == "" {
			op = "PUT"
		}
		if m.Header.Get("Nats-Subject") != "$KV.network."+w.key || op != w.op || (op == "PUT" && string(m.Data) != w.value) {
			t.Errorf("recorded %s %s %q at %d; the stream holds %s %s %q there", w.op, w.key, w.value, w.rev,
				m.Header.Get("Nats-Subject"), op, m.Data)
		}
	}
}
