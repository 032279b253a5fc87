package kvwatchimpl_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// The cache at OnSynced is the bucket's state at the watcher's revision
// while a writer races the initial read: it creates, overwrites (often the
// newest keys), deletes and purges keys, one at a time or in bursts. Every
// key must be there at its revision, with its value, and no other. With
// 500 keys the read is one request, answered in isolation from writes.
// With 3,000 in a bucket of 9,000 (one scope: listed, read in chunks) it
// is several, completed by the seal of the catch-up (seal.go). Before
// that, the tail caught up instead and the 3,000-key case failed about one
// run in two (a key written during the read and overwritten during the
// catch-up was missing at OnSynced). With 3,000 keys that are most of the
// bucket, or most of it overwritten once (interior deletes), the consumer
// delivers the state itself on the whole bucket (readpath.go), sealed as
// well; the keys of another scope are dropped. Without direct get the
// consumer delivers the state too, and the stream's message API seals it.
func TestSyncedExactUnderMixedWrites(t *testing.T) {
	for _, c := range []struct {
		name   string
		keys   int
		others int // keys of vpc b, out of scope
		bursts bool
		// churned overwrites the keys once before the read; noDirectGet
		// turns direct get off.
		churned, noDirectGet bool
		path                 string // Stats().InitialState
	}{
		{name: "one request, one write at a time", keys: 500, path: "direct-get"},
		{name: "one request, bursts", keys: 500, bursts: true, path: "direct-get"},
		{name: "several requests, one write at a time", keys: 3000, others: 6000, path: "direct-get-listing"},
		{name: "several requests, bursts", keys: 3000, others: 6000, bursts: true, path: "direct-get-listing"},
		{name: "by the consumer, one write at a time", keys: 3000, others: 300, path: "consumer"},
		{name: "by the consumer, bursts", keys: 3000, others: 300, bursts: true, path: "consumer"},
		{name: "by the consumer, churned, bursts", keys: 3000, others: 300, bursts: true, churned: true, path: "consumer"},
		{name: "no direct get, one write at a time", keys: 500, noDirectGet: true, path: "consumer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			syncedExactUnderMixedWrites(t, c.keys, c.others, c.bursts, c.churned, c.noDirectGet, c.path)
		})
	}
}

func syncedExactUnderMixedWrites(t *testing.T, n, others int, bursts, churned, noDirectGet bool, path string) {
	js, _ := setup(t)
	if noDirectGet {
		disableDirectGet(t, js)
	}
	// The keys of vpc b come first and last: the consumer's read of the
	// whole bucket passes over them before and after.
	var outside []write
	for i := range others {
		outside = append(outside, write{key: fmt.Sprintf("vpc.b.route.r%d", i), op: "PUT", value: fmt.Sprintf(`{"cidr":"o%d"}`, i)})
	}
	publishAll(t, js, outside[:others/2])
	log := &writeLog{}
	keys := make([]string, n)
	var initial []write
	for i := range keys {
		keys[i] = fmt.Sprintf("vpc.a.route.r%d", i)
		initial = append(initial, write{key: keys[i], op: "PUT", value: fmt.Sprintf(`{"cidr":"i%d"}`, i)})
	}
	log.publishAll(t, js, initial)
	if churned {
		for i := range initial {
			initial[i].value = fmt.Sprintf(`{"cidr":"c%d"}`, i)
		}
		log.publishAll(t, js, initial)
	}
	publishAll(t, js, outside[others/2:])
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	// Without direct get the seal reads one entry a request (~5,000/s
	// here): a writer as fast as that would keep it from ever reaching
	// the stream's end (the documented limit), so this one paces itself.
	pace := time.Duration(0)
	if noDirectGet {
		pace = time.Millisecond
	}
	wg.Go(func() { mixedWrites(ctx, t, js, log, keys, bursts, pace) })
	var watcher atomic.Pointer[kvwatchimpl.Watcher]
	var atSync kvwatchimpl.Checkpoint
	var atSyncErr error
	synced := make(chan struct{})
	onSynced := kvwatchimpl.OnSynced(func() {
		// On the event goroutine: nothing moves while the cache is read.
		// Start may not have returned yet.
		for watcher.Load() == nil {
			time.Sleep(time.Millisecond)
		}
		atSync, atSyncErr = watcher.Load().Checkpoint()
		close(synced)
	})
	r := newRecorder()
	_, _, bindings := networkBindings(r)
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings, append(r.options(), onSynced)...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(w.Stop)
	watcher.Store(w)
	select {
	case <-synced:
	case <-time.After(15 * time.Second):
		t.Fatalf("not synced within 15 s; stats %+v", w.Stats())
	}
	wg.Wait() // the writer's log is complete
	if atSyncErr != nil {
		t.Fatalf("Checkpoint in OnSynced: %v", atSyncErr)
	}
	checkStateAt(t, atSync, log)
	if got := w.Stats().InitialState; got != path {
		t.Errorf("InitialState = %q, want %q", got, path)
	}
}

// mixedWrites writes 60 rounds of 50 operations on the route keys of vpc
// a, sleeping pace after each single write.
func mixedWrites(ctx context.Context, t *testing.T, js jetstream.JetStream, log *writeLog, keys []string, bursts bool, pace time.Duration) {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	live, next := slices.Clone(keys), len(keys)
	for round := 0; round < 60 && ctx.Err() == nil; round++ {
		var burst []write
		for j := range 50 {
			var w write
			switch x := rng.IntN(10); {
			case x < 1:
				w = write{key: fmt.Sprintf("vpc.a.route.r%d", next), op: "PUT"}
				next++
				live = append(live, w.key)
			case x < 6 && rng.IntN(2) == 0: // one of the newest keys
				w = write{key: live[len(live)-1-rng.IntN(min(len(live), 20))], op: "PUT"}
			case x < 6:
				w = write{key: live[rng.IntN(len(live))], op: "PUT"}
			case x < 8:
				w = write{key: live[rng.IntN(len(live))], op: "DEL"}
			default:
				w = write{key: live[rng.IntN(len(live))], op: "PURGE"}
			}
			if w.op == "PUT" {
				w.value = fmt.Sprintf(`{"cidr":"w%d.%d"}`, round, j)
			}
			if !bursts {
				log.publish(t, js, w)
				time.Sleep(pace)
				continue
			}
			burst = append(burst, w)
		}
		if bursts {
			log.publishAsync(t, js, burst)
			time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
		}
	}
}

// write is one operation on a key, with the revision the server gave it
// (the robustness test's record, in one incarnation of the bucket).
type write = hwrite

// writeLog records every write with its revision.
type writeLog struct{ history }

func (l *writeLog) publish(t *testing.T, js jetstream.JetStream, w write) {
	ack, err := js.PublishMsg(context.Background(), w.msg(""))
	if err != nil {
		t.Errorf("publish %s: %v", w.key, err)
		return
	}
	w.rev = ack.Sequence
	l.record(w)
}

// publishAll writes ws in bursts of up to 500, recording each.
func (l *writeLog) publishAll(t *testing.T, js jetstream.JetStream, ws []write) {
	for chunk := range slices.Chunk(ws, 500) {
		l.publishAsync(t, js, slices.Clone(chunk))
	}
}

// publishAll writes ws, unrecorded.
func publishAll(t *testing.T, js jetstream.JetStream, ws []write) {
	(&writeLog{}).publishAll(t, js, ws)
}

func (l *writeLog) publishAsync(t *testing.T, js jetstream.JetStream, ws []write) {
	acks := make([]jetstream.PubAckFuture, len(ws))
	for i, w := range ws {
		f, err := js.PublishMsgAsync(w.msg(""))
		if err != nil {
			t.Errorf("publish %s: %v", w.key, err)
			return
		}
		acks[i] = f
	}
	for i, f := range acks {
		select {
		case ack := <-f.Ok():
			ws[i].rev = ack.Sequence
			l.record(ws[i])
		case err := <-f.Err():
			t.Errorf("publish %s: %v", ws[i].key, err)
		}
	}
}

// checkStateAt checks that the routes of cp are the state at its revision.
func checkStateAt(t *testing.T, cp kvwatchimpl.Checkpoint, log *writeLog) {
	t.Helper()
	got := map[string]kvwatch.Entry[routeKey, route]{}
	for _, e := range kvwatchimpl.EntriesOf(cp, &routeKind) {
		got[e.Key.String()] = e
	}
	want := log.stateAt(0, cp.Revision)
	var bad []string
	for key, w := range want {
		e, ok := got[key]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("missing %s at %d", key, w.rev))
		case e.Revision != w.rev || `{"cidr":"`+e.Value.CIDR+`"}` != w.value:
			bad = append(bad, fmt.Sprintf("%s at %d %q, want at %d %s", key, e.Revision, e.Value.CIDR, w.rev, w.value))
		}
	}
	for key, e := range got {
		if _, ok := want[key]; !ok {
			bad = append(bad, fmt.Sprintf("%s at %d: gone at %d", key, e.Revision, cp.Revision))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Errorf("the cache at OnSynced (revision %d) is not the bucket's state then, %d differences:\n%s",
			cp.Revision, len(bad), strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
}
