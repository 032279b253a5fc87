package kvwatch_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// This file is the robustness test's oracle: every write, with the
// revision the server acknowledged it at, and the writers that make them.
// A write that times out during a fault is sent again with the same
// Nats-Msg-Id, which the stream deduplicates: its acknowledgement then
// carries the revision of the copy that was stored, so the record is
// exact through restarts and failovers.

// hwrite is one recorded write.
type hwrite struct {
	epoch int // the bucket's incarnation: deleting and recreating it starts a new one
	rev   uint64
	key   string
	op    string // PUT, DEL or PURGE
	value string
}

// history records the writes of a run.
type history struct {
	mu     sync.Mutex
	epoch  int
	writes []hwrite
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
	next  int    // a counter for fresh keys and message ids
	runID string // unique to the writer: message ids never repeat
	// fail reports a write the bucket did not take within writeBound
	// while the run went on; the writer then stops, so that the run ends
	// (with that report) instead of waiting for it forever.
	fail   func(string)
	failed bool
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

// run writes until ctx ends: single writes, and now and then a burst of
// up to 40 in flight at once, about writesPerSecond in all.
func (wr *writer) run(ctx context.Context) {
	start, written := time.Now(), 0
	for ctx.Err() == nil && !wr.failed {
		if ahead := time.Duration(written)*time.Second/writesPerSecond - time.Since(start); ahead > 0 {
			sleep(ctx, ahead)
		}
		n := 1
		if wr.rng.IntN(20) == 0 {
			n = 1 + wr.rng.IntN(40)
		}
		batch := make([]hwrite, n)
		for i := range batch {
			batch[i] = wr.op(wr.key())
		}
		wr.send(ctx, batch)
		written += n
	}
}

// send publishes batch, in flight together, and records each write once
// acknowledged, retrying through faults with the same message ids.
func (wr *writer) send(ctx context.Context, batch []hwrite) {
	wr.gate.RLock()
	defer wr.gate.RUnlock()
	epoch := wr.hist.currentEpoch()
	ids := make([]string, len(batch))
	for i := range batch {
		wr.next++
		ids[i] = fmt.Sprintf("%s-%d", wr.runID, wr.next)
	}
	acks := make([]jetstream.PubAckFuture, len(batch))
	for i, w := range batch {
		f, err := wr.js.PublishMsgAsync(w.msg(ids[i]))
		if err == nil {
			acks[i] = f
		}
	}
	for i, w := range batch {
		var ack *jetstream.PubAck
		if acks[i] != nil {
			select {
			case ack = <-acks[i].Ok():
			case <-acks[i].Err():
			case <-time.After(2 * time.Second):
			}
		}
		// Sent again, with the same id, until the stream acknowledges it;
		// once the run is over, for 10 s more, so that a write that was
		// stored is recorded.
		deadline := time.Now().Add(10 * time.Second)
		since := time.Now()
		var err error
		for ack == nil {
			if ctx.Err() != nil && time.Now().After(deadline) {
				panic(fmt.Sprintf("robustness: write %s (%s) never acknowledged: the history would be incomplete", w.key, ids[i]))
			}
			if ctx.Err() == nil {
				deadline = time.Now().Add(10 * time.Second)
			}
			if time.Since(since) > writeBound {
				wr.fail(fmt.Sprintf("writer %s: write %s (%s) not acknowledged in %v while the run went on (last error: %v); the writer stops",
					wr.runID, w.key, ids[i], writeBound, err))
				wr.failed = true
				return
			}
			time.Sleep(50 * time.Millisecond)
			actx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			ack, err = wr.js.PublishMsg(actx, w.msg(ids[i]))
			cancel()
		}
		w.epoch, w.rev = epoch, ack.Sequence
		wr.hist.record(w)
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
