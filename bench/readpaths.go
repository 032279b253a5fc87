package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// runReadPaths measures the server's side of the ways to read the state of
// 100 scopes, replies counted and not decoded, so that the choices the
// runtime's read makes (readplan.go, snapshot.go) rest on figures a
// command reproduces: requests in flight, splitting in halves against one
// request per scope, pinned against unpinned requests while keys are
// written, and a consumer's own delivery (kv.WatchFiltered) for scale.
func runReadPaths(ctx context.Context, b *bench) error {
	prefixes, perPrefix := 100, b.pick(1000, 500, 20)
	srv, kv, err := startWithBucket(ctx, 0)
	if err != nil {
		return err
	}
	defer srv.stop()
	total := prefixes * perPrefix
	if _, err := srv.load(ctx, loadRequest{Bucket: "bench", Prefixes: prefixes, PerPrefix: perPrefix, Count: total, ValueSize: 200}); err != nil {
		return err
	}
	b.say("  %d keys over %d prefixes, fresh", total, prefixes)
	r := directGetCounter{nc: srv.nc, subject: "$JS.API.DIRECT.GET.KV_bench"}
	filters := make([]string, prefixes)
	for i := range filters {
		filters[i] = "$KV.bench.p." + strconv.Itoa(i) + ".>"
	}
	perScope := func(pinned bool) ([]multiLastBody, error) {
		var pin uint64
		if pinned {
			var err error
			if pin, err = lastSeq(ctx, srv.js); err != nil {
				return nil, err
			}
		}
		reqs := make([]multiLastBody, len(filters))
		for i, f := range filters {
			reqs[i] = multiLastBody{MultiLast: []string{f}, UpToSeq: pin}
		}
		return reqs, nil
	}
	measure := func(name string, window int, reqs []multiLastBody) error {
		n, sent, refused, elapsed, err := r.read(ctx, reqs, window)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if n != total {
			return fmt.Errorf("%s: read %d entries, want %d", name, n, total)
		}
		b.reportNote(name, float64(n)/elapsed.Seconds(), "entries/s", fmt.Sprintf("%d requests, %d refused", sent, refused))
		return nil
	}
	for _, window := range []int{1, 2, 4, 8, 16} {
		reqs, err := perScope(false)
		if err != nil {
			return err
		}
		if err := measure(fmt.Sprintf("read_raw_per_scope_w%d", window), window, reqs); err != nil {
			return err
		}
	}
	pin, err := lastSeq(ctx, srv.js)
	if err != nil {
		return err
	}
	if err := measure("read_raw_halving_w4", 4, []multiLastBody{{MultiLast: filters, UpToSeq: pin}}); err != nil {
		return err
	}
	start := time.Now()
	w, err := kv.WatchFiltered(ctx, prefixFilters(prefixes))
	if err != nil {
		return err
	}
	n := 0
	for e := range w.Updates() {
		if e == nil {
			break
		}
		n++
	}
	w.Stop()
	b.report("read_raw_watchfiltered", float64(n)/time.Since(start).Seconds(), "entries/s")

	// The same per-scope read while keys are overwritten: a request
	// pinned below the stream's last revision makes the server walk back
	// through its blocks.
	b.say("  while keys are overwritten at up to %d/s", liveWritesPerSecond)
	// The writer has its own connection (the reads would queue its
	// writes behind their answers) and is under way before measuring.
	wnc, err := nats.Connect(srv.URL)
	if err != nil {
		return err
	}
	defer wnc.Close()
	wjs, err := jetstream.New(wnc)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopWrites := overwrite(wctx, wjs, prefixes, perPrefix)
	for from := pin; ; {
		last, err := lastSeq(ctx, srv.js)
		if err != nil {
			return err
		}
		if last >= from+liveWritesPerSecond/10 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, pinned := range []bool{true, false} {
		reqs, err := perScope(pinned)
		if err != nil {
			return err
		}
		name := "read_raw_per_scope_unpinned_live_w8"
		if pinned {
			name = "read_raw_per_scope_pinned_live_w8"
		}
		n, sent, _, elapsed, err := r.read(ctx, reqs, 8)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		// Keys overwritten after a pin are missing from a pinned read
		// (history 1): the rate counts what was read.
		b.reportNote(name, float64(n)/elapsed.Seconds(), "entries/s", fmt.Sprintf("%d entries, %d requests", n, sent))
	}
	return stopWrites()
}

// multiLastBody is a batched direct get (multi_last) request.
type multiLastBody struct {
	MultiLast []string `json:"multi_last"`
	UpToSeq   uint64   `json:"up_to_seq,omitempty"`
}

// directGetCounter sends batched direct gets and counts the replies, without
// decoding them: the server's cost, and the client's least.
type directGetCounter struct {
	nc      *nats.Conn
	subject string
}

// read sends reqs, window at a time, one inbox each, and reads their
// answers in order. A request refused for matching more than 1,024 keys
// (413) is split in halves, as the runtime did before it sized requests.
func (r directGetCounter) read(ctx context.Context, reqs []multiLastBody, window int) (entries, sent, refused int, elapsed time.Duration, err error) {
	type inflight struct {
		req multiLastBody
		sub *nats.Subscription
	}
	var queue []inflight
	start := time.Now()
	defer func() {
		for _, q := range queue {
			q.sub.Unsubscribe()
		}
	}()
	for len(reqs) > 0 || len(queue) > 0 {
		for len(queue) < window && len(reqs) > 0 {
			body, err := json.Marshal(reqs[0])
			if err != nil {
				return 0, 0, 0, 0, err
			}
			inbox := r.nc.NewInbox()
			sub, err := r.nc.SubscribeSync(inbox)
			if err != nil {
				return 0, 0, 0, 0, err
			}
			sub.SetPendingLimits(-1, -1)
			if err := r.nc.PublishRequest(r.subject, inbox, body); err != nil {
				sub.Unsubscribe()
				return 0, 0, 0, 0, err
			}
			queue, reqs = append(queue, inflight{reqs[0], sub}), reqs[1:]
			sent++
		}
		q := queue[0]
		queue = queue[1:]
		status, n, err := answer(ctx, q.sub)
		q.sub.Unsubscribe()
		if err != nil {
			return 0, 0, 0, 0, err
		}
		entries += n
		switch status {
		case "204", "404":
		case "413":
			refused++
			if len(q.req.MultiLast) < 2 {
				return 0, 0, 0, 0, errors.New("a single scope holds more than 1,024 keys")
			}
			mid := len(q.req.MultiLast) / 2
			reqs = append(reqs, multiLastBody{q.req.MultiLast[:mid], q.req.UpToSeq}, multiLastBody{q.req.MultiLast[mid:], q.req.UpToSeq})
		default:
			return 0, 0, 0, 0, fmt.Errorf("direct get answered %s", status)
		}
	}
	return entries, sent, refused, time.Since(start), nil
}

// answer reads one answer: its status and the number of entries in it.
func answer(ctx context.Context, sub *nats.Subscription) (status string, entries int, err error) {
	for {
		msg, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return "", 0, err
		}
		if status := msg.Header.Get("Status"); status != "" {
			return status, entries, nil
		}
		entries++
	}
}
