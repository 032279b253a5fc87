package kvwatchimpl

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
)

// This file is the tail's feed of its consumer's messages: pull requests
// answered on one subscription, whose messages the event goroutine takes
// one by one. nats.go's iterator over a pull consumer (MessagesContext)
// does the same, but arms a new timer for every message it hands out (its
// check for missed heartbeats) and wraps each in a message of its own,
// which showed in the client's cost per entry of a consumer's delivery
// (BENCHMARKS.md, Design decisions: "pull.go: the tail's own pulls").
// Here one timer, reset only when it fires, checks the time of the last
// message, and the messages are nats.go's as they arrive.

// pullBatch is how many messages the feed keeps asked for: a consumer's
// initial delivery of a state went faster with 1,000 than with nats.go's
// default 500, and the client then holds at most one pull beyond what it
// has handled (BENCHMARKS.md, Design decisions: "pull.go: 1,000 messages
// a pull"). A new pull asks for what was received once half of it was.
const pullBatch = 1000

// A state read on the whole bucket (catchUpPlan.readFilter) asks for more
// at once, bounded by bytes too: the server spends less per message on
// fewer, larger pulls (BENCHMARKS.md, Design decisions: "pull.go: larger
// pulls for a state"). stateMaxBytes is what one pull may bring; never
// less than twice the largest message the server takes, which a pull
// whose bytes do not cover it could never deliver. A pull that the next
// message would take past its bytes ends with a status saying what it
// did not deliver (release); one that reaches them exactly ends silently,
// and what it did not deliver stays counted as asked: rare (a sum of
// sizes that hits the bound to the byte), and at worst the feed asks for
// less until the heartbeats it then misses recreate the consumer.
const (
	stateBatch    = 16000
	stateMaxBytes = 4 << 20
)

// pullExpires is how long a pull request waits for messages on the
// server; one that ends (408) is sent again.
const pullExpires = 30 * time.Second

// errFeedStopped is what next returns once the feed was stopped.
var errFeedStopped = errors.New("kvwatch: the consumer's feed was stopped")

// errNoResponders is a pull nothing answered: the consumer's server is
// gone, or its stream has no leader.
var errNoResponders = errors.New("kvwatch: no responders for the consumer's pull")

// pullFeed feeds a consumer's messages to the event goroutine, which calls
// next and close; stop may be called from any goroutine.
type pullFeed struct {
	nc      *nats.Conn
	subject string // the consumer's next-message API subject
	inbox   string
	sub     *nats.Subscription
	// msgs holds what came and was not taken yet: at most what was asked
	// for, and the statuses (a message nats.go cannot queue is lost, and
	// the gap shows in the consumer's sequence).
	msgs chan *nats.Msg
	// batch is how many messages the feed keeps asked for, maxBytes what
	// a pull may bring (0: no bound).
	batch, maxBytes int
	// asked is the number of messages asked for, not received yet and not
	// released by a status (a pull that expired, a leader change).
	asked int
	// Heartbeats: two heartbeats without a message (a heartbeat, a status
	// or a message of the stream) are jetstream.ErrNoHeartbeat, as for
	// nats.go's iterator. last is when the last one came; the timer is
	// set for two heartbeats after it when it fires.
	heartbeat time.Duration
	hb        *time.Timer
	last      time.Time
	wait      *time.Timer // next's wait, reused
	stopped   chan struct{}
	stopOnce  sync.Once
}

// newPullFeed subscribes to the consumer's messages and sends its first
// pull; heartbeat is the idle heartbeat asked of the server. A feed of a
// state asks for stateBatch messages at once, pullBatch otherwise.
func newPullFeed(js jetstream.JetStream, stream, consumer string, heartbeat time.Duration, state bool) (*pullFeed, error) {
	nc := js.Conn()
	f := &pullFeed{
		nc:        nc,
		subject:   directget.APIPrefix(js) + "CONSUMER.MSG.NEXT." + stream + "." + consumer,
		inbox:     nc.NewInbox(),
		batch:     pullBatch,
		heartbeat: heartbeat,
		stopped:   make(chan struct{}),
	}
	if state {
		f.batch, f.maxBytes = stateBatch, max(stateMaxBytes, 2*int(nc.MaxPayload()))
	}
	f.msgs = make(chan *nats.Msg, 2*f.batch)
	sub, err := nc.ChanSubscribe(f.inbox, f.msgs)
	if err != nil {
		return nil, fmt.Errorf("subscribing to the consumer's messages: %w", err)
	}
	f.sub = sub
	f.hb, f.last = time.NewTimer(2*heartbeat), time.Now()
	f.wait = time.NewTimer(time.Hour)
	f.wait.Stop()
	if err := f.pull(f.batch); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// pull asks for n more messages.
func (f *pullFeed) pull(n int) error {
	body := `{"batch":` + strconv.Itoa(n) + `,"expires":` + strconv.FormatInt(int64(pullExpires), 10) +
		`,"idle_heartbeat":` + strconv.FormatInt(int64(f.heartbeat), 10)
	if f.maxBytes > 0 {
		body += `,"max_bytes":` + strconv.Itoa(f.maxBytes)
	}
	body += `}`
	if err := f.nc.PublishRequest(f.subject, f.inbox, []byte(body)); err != nil {
		return fmt.Errorf("pulling the consumer's messages: %w", err)
	}
	f.asked += n
	return nil
}

// next returns the next message of the stream, waiting at most wait (0:
// until stopped); a wait that ends is nats.ErrTimeout. It pulls more
// once half of what was asked for came, handles the server's statuses,
// and watches the heartbeats.
func (f *pullFeed) next(wait time.Duration) (*nats.Msg, error) {
	var expired <-chan time.Time
	if wait > 0 {
		f.wait.Reset(wait)
		defer f.wait.Stop()
		expired = f.wait.C
	}
	for {
		if f.asked <= f.batch/2 {
			if err := f.pull(f.batch - f.asked); err != nil {
				return nil, err
			}
		}
		// While messages wait, take the next at once (a select of one
		// case and a default costs a fraction of the full one below);
		// a stop still ends the feed between two messages.
		select {
		case <-f.stopped:
			return nil, errFeedStopped
		default:
		}
		select {
		case msg := <-f.msgs:
			if msg, err := f.took(msg); msg != nil || err != nil {
				return msg, err
			}
			continue
		default:
		}
		select {
		case msg := <-f.msgs:
			if msg, err := f.took(msg); msg != nil || err != nil {
				return msg, err
			}
		case <-f.hb.C:
			// What came while the event goroutine was away (a slow
			// handler holds it) counts, taken or not.
			left := 2*f.heartbeat - time.Since(f.last)
			if len(f.msgs) > 0 {
				left = 2 * f.heartbeat
			}
			if left <= 0 {
				return nil, jetstream.ErrNoHeartbeat
			}
			f.hb.Reset(left)
		case <-f.stopped:
			return nil, errFeedStopped
		case <-expired:
			return nil, nats.ErrTimeout
		}
	}
}

// took handles a message taken from the subscription: a message of the
// stream is returned, a status handled (an error when the feed cannot go
// on; nil, nil otherwise). The time of the last message is read only when
// no other waits: the heartbeat check counts waiting messages as arrived
// now, so only the last of a run needs it, and reading the clock for
// every message showed in the client's cost per entry.
func (f *pullFeed) took(msg *nats.Msg) (*nats.Msg, error) {
	if len(f.msgs) == 0 {
		f.last = time.Now()
	}
	if msg.Reply != "" {
		f.asked--
		return msg, nil
	}
	return nil, f.status(msg)
}

// status handles a message without a reply subject: the server's status
// of a pull (a heartbeat, a pull that ended or was cut, the consumer
// deleted), returned as an error when the feed cannot go on.
func (f *pullFeed) status(msg *nats.Msg) error {
	status, description := msg.Header.Get("Status"), msg.Header.Get("Description")
	switch status {
	case "100": // idle heartbeat
		return nil
	case "408", "404": // a pull expired, or found nothing: what it had not delivered is free again
		f.release(msg)
		return nil
	case "409":
		switch description {
		case "Consumer Deleted":
			return jetstream.ErrConsumerDeleted
		case "Leadership Change", "Server Shutdown":
			f.asked = 0 // every pull is gone with the old leader
		default:
			f.release(msg)
		}
		return nil
	case "503":
		return errNoResponders
	}
	return fmt.Errorf("pulling the consumer's messages: the server answered %s %s", status, description)
}

// release frees what a pull that ended had not delivered.
func (f *pullFeed) release(msg *nats.Msg) {
	left, err := strconv.Atoi(msg.Header.Get("Nats-Pending-Messages"))
	if err != nil {
		f.asked = 0 // not said: ask again for all
		return
	}
	f.asked = max(f.asked-left, 0)
}

// stop makes next return errFeedStopped, now or at once when called next;
// from any goroutine.
func (f *pullFeed) stop() { f.stopOnce.Do(func() { close(f.stopped) }) }

// close stops the feed and drops its subscription; on the event goroutine.
func (f *pullFeed) close() {
	f.stop()
	f.hb.Stop()
	f.wait.Stop()
	f.sub.Unsubscribe()
}
