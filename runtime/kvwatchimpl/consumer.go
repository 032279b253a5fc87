package kvwatchimpl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// This file is the watcher's one consumer, kept in order by the runtime:
// an ephemeral pull consumer (no acks, one replica, memory storage)
// filtered on the watcher's filters, recreated from the last revision
// applied whenever its delivery breaks (a gap in its sequence, missed
// heartbeats, a reconnect, the server deleting it). nats.go's
// OrderedConsumer does the same, but waits a fixed 10 s for each creation
// request: when the node lost was also the meta leader, a request sent
// during the election is never answered, and recovery waits that out
// (withdrawn for the tail: docs/design.md). Here each request waits only
// as long as a creation can take (createTimeout) and is then sent again,
// under the same name, which the server treats as the same consumer: a
// request answered late creates nothing twice. On a replicated stream a
// name whose creation timed out twice is deleted and created again, under
// the same name: the meta leader places a consumer of one replica on a
// node of the stream at random, and keeps that placement for every
// request under the name, so one placed on a node cut off from the rest
// (which the meta leader takes for online until it misses its heartbeats
// for half a minute) would never be answered.

// tailConsumer is the watcher's consumer on the server; the event
// goroutine uses it.
type tailConsumer struct {
	w *Watcher
	// prefix names this watcher's consumers: prefix_1, prefix_2, ...
	// (one at a time), so that operators and tests can tell them apart.
	prefix string
	serial int
	// gone holds consumers replaced but not yet deleted from the server:
	// the next one is created only once they are (event goroutine only;
	// consumerdelete.go).
	gone []retiredConsumer
	// attempts is how many creation requests the last start took.
	attempts int
	// session is the connection's count of reconnects read before the
	// creation request the server answered: a reconnect counted up to it
	// came before the consumer existed.
	session uint64
	// name is the consumer on the server now, "" when none; guarded by
	// mu (Stats reads it).
	mu   sync.Mutex
	name string
}

func newTailConsumer(w *Watcher) *tailConsumer {
	// NewInbox is "_INBOX." and a unique token (nuid), which is all a
	// name needs.
	return &tailConsumer{w: w, prefix: "kvw_" + strings.TrimPrefix(nats.NewInbox(), nats.InboxPrefix)}
}

// current returns the name of the consumer on the server, or "".
func (c *tailConsumer) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name
}

// consumerStart is where a new consumer starts delivering.
type consumerStart struct {
	lastPerSubject bool   // the newest entry of every key, then changes
	after          uint64 // otherwise, every entry after this revision
}

// start replaces the current consumer, if any, by one with filters,
// starting where at says (asked again before each attempt: bridge may
// have moved it): the old one is deleted first, then the new one
// created, each request sent again until it is answered (see
// createTimeout), so that the watcher never holds two, even when the old
// one's server is gone and the meta leader with it (no deletion or
// creation is answered until a new one is elected, which after a crash
// takes several seconds). Between attempts bridge delivers what was
// written meanwhile without a consumer. It returns once the new consumer
// exists, the context ends, or on an error retrying cannot fix
// (terminal, or a permissions violation behind a timeout).
func (c *tailConsumer) start(ctx context.Context, filters []string, at func() consumerStart, bridge func()) (jetstream.Consumer, error) {
	c.retire()
	var name string
	var from consumerStart
	sent := false // a creation request for name went out
	timeouts := 0 // how many of them timed out
	for attempt := 0; ; attempt++ {
		if cur := at(); name == "" || cur != from {
			// A consumer starts where the watcher is: a new position is a
			// new consumer (the server refuses to move one), and the
			// name tried before is deleted in case a late answer made it.
			if sent {
				c.retireUnanswered(name, filters, from)
			}
			c.serial++
			name, from, sent, timeouts = c.prefix+"_"+strconv.Itoa(c.serial), cur, false, 0
		}
		timeout := createTimeout(len(filters), attempt)
		err := c.deleteGone(ctx, createTimeout(0, 0))
		if err == nil && c.w.replicated && timeouts >= replaceAfter {
			if err = c.unplace(ctx, name); err == nil {
				timeouts = 0
			}
		}
		var cons jetstream.Consumer
		session := c.w.js.Conn().Stats().Reconnects
		if err == nil {
			sent = true
			actx, cancel := context.WithTimeout(ctx, timeout)
			cons, err = c.w.js.CreateOrUpdateConsumer(actx, c.w.stream, c.config(name, filters, from))
			cancel()
			if timedOut(err) {
				timeouts++
			}
		}
		c.w.noteServerAnswer(err)
		if err == nil {
			c.mu.Lock()
			c.name = name
			c.mu.Unlock()
			c.attempts, c.session = attempt+1, session
			return cons, nil
		}
		if ctx.Err() != nil {
			if sent {
				c.retireUnanswered(name, filters, from) // a request in flight may still create it
			}
			return nil, ctx.Err()
		}
		err = c.w.consumerErr(err)
		if perr := c.w.permissionError(); perr != nil || terminal(err) {
			if sent {
				c.retireUnanswered(name, filters, from) // in case a late answer made it
			}
			if perr != nil {
				return nil, perr
			}
			return nil, err
		}
		// A request that timed out is sent again after a random pause of
		// up to half its wait: the server that should have answered it is
		// gone (an election), still working on it (the same name makes
		// the retry the same consumer), or dropped it (nats-server drops
		// its whole queue of JetStream API requests, unanswered, once
		// 10,000 wait), and a thousand watchers sending again at once
		// would meet the same. A refusal (the stream's leader moving,
		// JetStream not ready) waits a little longer.
		var wait time.Duration
		if !timedOut(err) {
			wait = min(50*time.Millisecond<<min(attempt, 5), time.Second)
		} else {
			c.w.leaveIfSilent() // or every request after it goes the same way (silent.go)
			wait = rand.N(timeout / 2)
		}
		c.w.stats.creationRetries.Add(1)
		c.w.logRetry("kvwatch: creating the consumer again",
			slog.String("consumer", name), slog.Int("attempt", attempt+1), slog.Duration("in", wait), slog.Any("error", err))
		bridge()
		if !sleep(ctx, wait) {
			if sent {
				c.retireUnanswered(name, filters, from)
			}
			return nil, ctx.Err()
		}
	}
}

// config is the configuration of the consumer name.
func (c *tailConsumer) config(name string, filters []string, at consumerStart) jetstream.ConsumerConfig {
	cfg := jetstream.ConsumerConfig{
		Name:              name,
		AckPolicy:         jetstream.AckNonePolicy,
		InactiveThreshold: c.w.cfg.InactiveThreshold,
		Replicas:          1,
		MemoryStorage:     true,
	}
	if len(filters) == 1 {
		cfg.FilterSubject = filters[0]
	} else {
		cfg.FilterSubjects = filters
	}
	switch {
	case at.lastPerSubject:
		cfg.DeliverPolicy = jetstream.DeliverLastPerSubjectPolicy
	case at.after == 0:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	default:
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = at.after + 1
	}
	return cfg
}

// createTimeout is how long attempt (0, 1, ...) of a consumer creation
// request may take before it is sent again. The server checks every pair
// of filters when it creates a consumer, estimated here at 55 ns a pair
// (from BenchmarkCreateConsumerFilters: BENCHMARKS.md, Design decisions:
// "consumer.go: creation cost O(F²) and createTimeout"), so the wait is
// that cost twice over, on top of half a second for the request itself in
// a busy cluster: a request that is not answered by then went to a server
// that is gone (an election), and waiting longer only delays the next.
// Each attempt after a timeout waits twice as long, up to ten times the
// filters' cost (at least a second): a server slower than estimated (a
// loaded machine, the race detector) gets its creation done, without the
// wait growing for ever when no meta leader answers at all.
func createTimeout(filters, attempt int) time.Duration {
	pairs := time.Duration(filters) * time.Duration(filters) * 55 * time.Nanosecond
	first := 500*time.Millisecond + 2*pairs
	ceiling := min(max(time.Second, 10*pairs), maxCreateTimeout)
	return max(min(first<<min(attempt, 6), ceiling), first)
}

// replaceAfter is how many creation requests under one name may time out
// before the watcher, on a replicated stream, deletes the name's
// placement and creates it anew: one timeout is what an election costs
// (the request went to a meta leader that is gone), a second one, sent to
// the new leader, is not. A stream of one replica places every consumer
// on its own node, so a new placement would only add a deletion to the
// load of a server slow to answer (thousands of watchers starting at
// once).
const replaceAfter = 2

// unplace deletes the consumer name, wherever the meta leader placed it,
// so that the next creation under that name is placed anew; nil once the
// server confirmed it gone. The name stays: a creation request of it
// still queued at the server (which answers none it dropped, and may
// still run those it queued) can only make that same consumer again,
// never a second one beside the next.
func (c *tailConsumer) unplace(ctx context.Context, name string) error {
	// As a consumer whose creation was answered: "not found" is proof.
	if err := c.deleteRetired(ctx, createTimeout(0, 0), &retiredConsumer{name: name}); err != nil {
		return fmt.Errorf("deleting %s to place it anew: %w", name, err)
	}
	return nil
}

// timedOut reports whether err says a request was not answered in time.
func timedOut(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// maxCreateTimeout bounds the wait for one creation request.
const maxCreateTimeout = 30 * time.Second

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// errConsumerBroken reports that the consumer's delivery broke and it must
// be recreated from the last revision applied.
type errConsumerBroken struct{ why string }

func (e *errConsumerBroken) Error() string { return "kvwatch: consumer reset: " + e.why }

// reconnects returns a channel that receives the connection's count of
// reconnects (nats.Statistics.Reconnects) after each reconnect of the
// watcher's connection, the latest only, until stop is called: the
// consumer of an R1 memory stream is gone after its server restarted, and
// waiting for two missed heartbeats to find out would cost two seconds.
// The count tells a reconnect that came before the consumer was created
// (tailConsumer.session), which the consumer outlived, from one after.
func (w *Watcher) reconnects() (events <-chan uint64, stop func()) {
	nc := w.js.Conn()
	status := nc.StatusChanged(nats.RECONNECTING, nats.CONNECTED)
	out := make(chan uint64, 1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		lost := false
		for {
			select {
			case s, ok := <-status:
				if !ok {
					return
				}
				switch {
				case s == nats.RECONNECTING:
					lost = true
				case s == nats.CONNECTED && lost:
					lost = false
					select { // only the latest counts
					case <-out:
					default:
					}
					out <- nc.Stats().Reconnects
				}
			case <-done:
				return
			}
		}
	})
	return out, func() {
		close(done)
		nc.RemoveStatusListener(status)
		wg.Wait()
	}
}
