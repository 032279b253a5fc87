// Package directget reads a stream's entries without a consumer, with the
// batched direct get API: the newest entry of every key within filters
// (latest.go), planning a read too large for one answer (plan.go), and
// counts of keys and messages without reading them (count.go). nats.go has
// no API for batched direct gets, so they are plain requests here. It
// knows nothing of watchers: the runtime and the live-bucket subcommands
// (internal/live) hand it a stream and filters and get messages back, in
// order.
package directget

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

// Requests:  batched direct get
// API: a request {"multi_last": filters, "up_to_seq": S} to
// <api>DIRECT.GET.<stream> is answered by one message per subject (its
// newest message at or below S) and a final "204 EOB" status carrying
// Nats-Num-Pending (what a byte limit left unsent), Nats-Last-Sequence and
// Nats-UpTo-Sequence. "404" means nothing matched; "413" that more than
// 1,024 subjects matched. nats.go has no API for it, so it is a plain
// request here.

// MaxMultiLastSubjects is the server's cap on subjects in one multi_last
// answer (nats-server getDirectMulti, maxAllowedResponses).
const MaxMultiLastSubjects = 1024

// Window is how many requests of one read are in flight at once: the
// server prepares the next answers while the reader decodes one, and 8
// bounds what answers in flight can buffer to 32 MiB (Window x
// AnswerMaxBytes). More in flight did not make the whole watcher faster
// (BENCHMARKS.md, Design decisions: "directget: Window").
const Window = 8

// AnswerMaxBytes caps each answer: the server stops after the message that
// reaches it (so an answer holds at most this plus one message), and the
// watcher continues from there. Without it the server's max_pending (64
// MiB by default) applies, and the answers in flight (Window) could
// hold far more than the watcher needs buffered: with this cap, at most
// Window x 4 MiB (plus a message each).
const AnswerMaxBytes = 4 << 20

var (
	ErrTooManyResults = errors.New("more than 1024 subjects match")
	ErrNoResults      = errors.New("no subject matches")
	ErrNoDirectGet    = errors.New("batched direct get is not available on the stream")
	// ErrReconnected: the connection reconnected while a request waited
	// for its answer, which the server that went away may never send (the
	// request goes again).
	ErrReconnected = errors.New("the connection reconnected while waiting for the answer")
)

// Request is the body of a batched direct get: of the newest
// message of each subject (MultiLast), or of the messages from Seq on
// (NextBySubj and Batch, for the seal).
type Request struct {
	MultiLast []string `json:"multi_last,omitempty"`
	UpToSeq   uint64   `json:"up_to_seq,omitempty"`
	// NextBySubj and Batch ask for up to Batch messages from Seq on whose
	// subjects match NextBySubj, in order of sequence.
	NextBySubj string `json:"next_by_subj,omitempty"`
	Batch      int    `json:"batch,omitempty"`
	// Seq skips messages below it: how a request resumes after a byte
	// limit cut its answer short.
	Seq uint64 `json:"seq,omitempty"`
	// MaxBytes is the byte limit (AnswerMaxBytes).
	MaxBytes int `json:"max_bytes,omitempty"`
}

// BatchEnd is what the EOB status of an answer reports.
type BatchEnd struct {
	UpTo    uint64 // the revision the answer is as of
	Pending uint64 // messages left unsent (byte limit)
	LastSeq uint64 // sequence of the last message sent
	// Received is the number of messages the answer held.
	Received int
}

// Getter sends the batched direct gets of one read of a stream and
// receives their answers on one subscription, not one per request: nats.go
// allocates and clears a 64k-slot channel for every subscription, a cost
// per request that showed in the client's CPU (BENCHMARKS.md, Design
// decisions: "directget/directget.go: one subscription per read"). Each request
// gets its own reply subject under the subscription's prefix; replies of
// a request other than the one being read are kept until it is read
// (answers of several requests may interleave when several servers
// answer). Open it with open, and close it when the read is over; it is
// used from one goroutine.
type Getter struct {
	nc      *nats.Conn
	subject string
	timeout time.Duration // per request, and per reply within it

	prefix string // reply subjects are prefix + a number
	sub    *nats.Subscription
	ctx    context.Context // Open's: its end closes sub
	stop   func() bool     // stops watching the context
	sent   int
	early  map[string][]*nats.Msg // replies to requests not being read yet
}

// New returns a Getter of stream's entries through js, each request and each
// reply within it bounded by timeout.
func New(js jetstream.JetStream, stream string, timeout time.Duration) *Getter {
	return &Getter{nc: js.Conn(), subject: APIPrefix(js) + "DIRECT.GET." + stream, timeout: timeout}
}

// Open subscribes to the read's reply subjects. A context that ends
// closes the subscription, which ends any wait for a reply.
func (d *Getter) Open(ctx context.Context) error {
	d.prefix = d.nc.NewInbox() + "."
	sub, err := d.nc.SubscribeSync(d.prefix + "*")
	if err != nil {
		return fmt.Errorf("direct get: subscribe: %w", err)
	}
	// Answers are bounded by MaxBytes and Window; the default limits
	// (64 MiB) must not drop part of them when large messages top them.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		sub.Unsubscribe()
		return fmt.Errorf("direct get: subscribe: %w", err)
	}
	d.sub, d.early, d.ctx = sub, map[string][]*nats.Msg{}, ctx
	d.stop = context.AfterFunc(ctx, func() { sub.Unsubscribe() })
	return nil
}

// Close drops the subscription and whatever it still holds.
func (d *Getter) Close() {
	if d.sub == nil {
		return
	}
	d.stop()
	d.sub.Unsubscribe()
	d.sub, d.early = nil, nil
}

// APIPrefix returns the JetStream API prefix js sends requests to.
func APIPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		if o.APIPrefix[len(o.APIPrefix)-1] != '.' {
			return o.APIPrefix + "."
		}
		return o.APIPrefix
	}
	return "$JS.API."
}

// Pending is a request sent and not yet read.
type Pending struct {
	Req   Request
	reply string
	// reconnects is the connection's reconnect count when it was sent.
	reconnects uint64
}

// Send publishes req; the caller reads its answer with Receive.
func (d *Getter) Send(req Request) (*Pending, error) {
	req.MaxBytes = AnswerMaxBytes
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	d.sent++
	p := &Pending{Req: req, reply: d.prefix + strconv.Itoa(d.sent), reconnects: d.nc.Stats().Reconnects}
	if err := d.nc.PublishRequest(d.subject, p.reply, body); err != nil {
		return nil, fmt.Errorf("direct get: publish: %w", err)
	}
	return p, nil
}

// reconnectCheck is how often a wait for a reply looks whether the
// connection reconnected meanwhile (ErrReconnected): a reply the server
// that went away never sent is otherwise waited for until the timeout.
const reconnectCheck = 100 * time.Millisecond

// nextReply returns the next reply to p, keeping replies to other
// requests for later. A "no responders" status is an error of NextMsg
// whichever request it answers; it is then reported for p, which is no
// worse: nobody serves direct gets on the stream for any request. Once
// the connection reconnected since p was sent, a wait of reconnectCheck
// with no reply ends it (ErrReconnected).
func (d *Getter) nextReply(p *Pending) (*nats.Msg, error) {
	if kept := d.early[p.reply]; len(kept) > 0 {
		d.early[p.reply] = kept[1:]
		return kept[0], nil
	}
	deadline := time.Now().Add(d.timeout)
	for {
		wait := min(time.Until(deadline), reconnectCheck)
		msg, err := d.sub.NextMsg(wait)
		switch {
		case err != nil && d.ctx.Err() != nil:
			// The context's end closed the subscription: say why, not
			// nats.go's "invalid subscription".
			return nil, context.Cause(d.ctx)
		case errors.Is(err, nats.ErrTimeout) && d.nc.Stats().Reconnects != p.reconnects:
			return nil, ErrReconnected
		case errors.Is(err, nats.ErrTimeout) && time.Now().Before(deadline):
			continue
		case err != nil || msg.Subject == p.reply:
			return msg, err
		}
		d.early[msg.Subject] = append(d.early[msg.Subject], msg)
	}
}

// Receive reads the answer to p, calling fn for every message in the order
// received, and returns the EOB report, ErrNoResults (404),
// ErrTooManyResults (413), ErrNoDirectGet (no responders), or another
// error.
func (d *Getter) Receive(p *Pending, fn func(*nats.Msg)) (BatchEnd, error) {
	defer delete(d.early, p.reply)
	received := 0
	for {
		msg, err := d.nextReply(p)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return BatchEnd{}, ErrNoDirectGet // nobody serves direct gets
		case err != nil:
			return BatchEnd{}, fmt.Errorf("direct get: waiting for reply: %w", err)
		}
		status, description := msg.Header.Get("Status"), msg.Header.Get("Description")
		switch {
		case status == "" && len(msg.Header) > 0:
			received++
			fn(msg)
		case status == "204":
			return BatchEnd{
				UpTo:     HeaderUint(msg, "Nats-UpTo-Sequence"),
				Pending:  HeaderUint(msg, "Nats-Num-Pending"),
				LastSeq:  HeaderUint(msg, "Nats-Last-Sequence"),
				Received: received,
			}, nil
		case status == "404" && description == "No Results" && received == 0:
			return BatchEnd{}, ErrNoResults
		case status == "404" && p.Req.NextBySubj != "" && received == 0:
			// A batch from Seq on: no message there yet.
			return BatchEnd{}, ErrNoResults
		case status == "404":
			// A message the server had resolved failed to load: the answer
			// is incomplete. Not "nothing matched": retry.
			return BatchEnd{}, fmt.Errorf("direct get: answer cut short after %d entries: %s %s", received, status, description)
		case status == "413":
			return BatchEnd{}, ErrTooManyResults
		case status == "408" && received == 0:
			// A server that does not know batched direct get (before 2.11)
			// takes the request for an empty one.
			return BatchEnd{}, ErrNoDirectGet
		default:
			return BatchEnd{}, fmt.Errorf("direct get: server answered %s %s", status, description)
		}
	}
}

// Read sends req and receives its answer.
func (d *Getter) Read(req Request, fn func(*nats.Msg)) (BatchEnd, error) {
	p, err := d.Send(req)
	if err != nil {
		return BatchEnd{}, err
	}
	return d.Receive(p, fn)
}

// HeaderUint parses a numeric header, 0 when absent or malformed.
func HeaderUint(msg *nats.Msg, name string) uint64 {
	v, _ := strconv.ParseUint(msg.Header.Get(name), 10, 64)
	return v
}
