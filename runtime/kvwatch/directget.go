package kvwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// This file reads entries without a consumer, with the batched direct get
// API: a request {"multi_last": filters, "up_to_seq": S} to
// <api>DIRECT.GET.<stream> is answered by one message per subject (its
// newest message at or below S) and a final "204 EOB" status carrying
// Nats-Num-Pending (what a byte limit left unsent), Nats-Last-Sequence and
// Nats-UpTo-Sequence. "404" means nothing matched; "413" that more than
// 1,024 subjects matched. nats.go has no API for it, so it is a plain
// request here.

// maxMultiLastSubjects is the server's cap on subjects in one multi_last
// answer (nats-server getDirectMulti, maxAllowedResponses).
const maxMultiLastSubjects = 1024

// answerMaxBytes caps each answer: the server stops after the message that
// reaches it (so an answer holds at most this plus one message), and the
// watcher continues from there. Without it the server's max_pending (64
// MiB by default) applies, and a few answers in flight (readWindow) could
// exceed what a subscription buffers by default, dropping replies.
const answerMaxBytes = 8 << 20

var (
	errTooManyResults = errors.New("more than 1024 subjects match")
	errNoResults      = errors.New("no subject matches")
	errNoDirectGet    = errors.New("batched direct get is not available on the stream")
)

// multiLastRequest is the body of a batched direct get.
type multiLastRequest struct {
	MultiLast []string `json:"multi_last"`
	UpToSeq   uint64   `json:"up_to_seq,omitempty"`
	// Seq skips messages below it: how a request resumes after a byte
	// limit cut its answer short.
	Seq uint64 `json:"seq,omitempty"`
	// MaxBytes is the byte limit (answerMaxBytes).
	MaxBytes int `json:"max_bytes,omitempty"`
}

// batchEnd is what the EOB status of an answer reports.
type batchEnd struct {
	upTo    uint64 // the revision the answer is as of
	pending uint64 // messages left unsent (byte limit)
	lastSeq uint64 // sequence of the last message sent
}

// directGetter sends batched direct gets for one stream.
type directGetter struct {
	nc      *nats.Conn
	subject string
	timeout time.Duration // per request, and per reply within it
}

func newDirectGetter(js jetstream.JetStream, stream string, timeout time.Duration) *directGetter {
	return &directGetter{nc: js.Conn(), subject: apiPrefix(js) + "DIRECT.GET." + stream, timeout: timeout}
}

// apiPrefix returns the JetStream API prefix js sends requests to.
func apiPrefix(js jetstream.JetStream) string {
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

// pendingRead is a request sent and not yet read: its replies collect in
// sub.
type pendingRead struct {
	req    multiLastRequest
	sub    *nats.Subscription
	cancel func() // stop watching the context and drop the subscription
}

// send publishes req with a fresh inbox for its replies. The caller reads
// them with receive, or drops them with cancel.
func (d *directGetter) send(ctx context.Context, req multiLastRequest) (*pendingRead, error) {
	req.MaxBytes = answerMaxBytes
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	inbox := d.nc.NewInbox()
	sub, err := d.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("direct get: subscribe: %w", err)
	}
	// The answer is bounded by MaxBytes; the default limits (64 MiB) must
	// not drop part of it when a large message tops it.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("direct get: subscribe: %w", err)
	}
	// A cancelled context ends a wait for replies by closing the
	// subscription (cheaper than a context per reply).
	stop := context.AfterFunc(ctx, func() { sub.Unsubscribe() })
	p := &pendingRead{req: req, sub: sub, cancel: func() { stop(); sub.Unsubscribe() }}
	if err := d.nc.PublishRequest(d.subject, inbox, body); err != nil {
		p.cancel()
		return nil, fmt.Errorf("direct get: publish: %w", err)
	}
	return p, nil
}

// receive reads the answer to p, calling fn for every message in the order
// received, and returns the EOB report, errNoResults (404),
// errTooManyResults (413), errNoDirectGet (no responders), or another
// error. It drops the subscription when done.
func (d *directGetter) receive(p *pendingRead, fn func(*nats.Msg)) (batchEnd, error) {
	defer p.cancel()
	received := 0
	for {
		msg, err := p.sub.NextMsg(d.timeout)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			return batchEnd{}, errNoDirectGet // nobody serves direct gets
		case err != nil:
			return batchEnd{}, fmt.Errorf("direct get: waiting for reply: %w", err)
		}
		status, description := msg.Header.Get("Status"), msg.Header.Get("Description")
		switch {
		case status == "" && len(msg.Header) > 0:
			received++
			fn(msg)
		case status == "204":
			return batchEnd{
				upTo:    headerUint(msg, "Nats-UpTo-Sequence"),
				pending: headerUint(msg, "Nats-Num-Pending"),
				lastSeq: headerUint(msg, "Nats-Last-Sequence"),
			}, nil
		case status == "404" && description == "No Results" && received == 0:
			return batchEnd{}, errNoResults
		case status == "404":
			// A message the server had resolved failed to load: the answer
			// is incomplete. Not "nothing matched": retry.
			return batchEnd{}, fmt.Errorf("direct get: answer cut short after %d entries: %s %s", received, status, description)
		case status == "413":
			return batchEnd{}, errTooManyResults
		case status == "408" && received == 0:
			// A server that does not know batched direct get (before 2.11)
			// takes the request for an empty one.
			return batchEnd{}, errNoDirectGet
		default:
			return batchEnd{}, fmt.Errorf("direct get: server answered %s %s", status, description)
		}
	}
}

// read sends req and receives its answer.
func (d *directGetter) read(ctx context.Context, req multiLastRequest, fn func(*nats.Msg)) (batchEnd, error) {
	p, err := d.send(ctx, req)
	if err != nil {
		return batchEnd{}, err
	}
	return d.receive(p, fn)
}

// headerUint parses a numeric header, 0 when absent or malformed.
func headerUint(msg *nats.Msg, name string) uint64 {
	return parseUint(msg.Header.Get(name))
}
