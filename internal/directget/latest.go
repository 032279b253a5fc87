package directget

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// This file reads the newest entry of every key within filters: a
// watcher's initial state (and the state of scopes it adds), a client's
// List and Keys. The first request asks for every filter at once; the
// server answers it in isolation from writes, so an answer that holds it
// all is exact as of the revision it reports. A read past what one answer
// holds goes on by the Plan (plan.go): answers cut short by the byte
// limit are continued, and a single filter matching more than
// MaxMultiLastSubjects keys is read by listing its subjects (the stream's
// info with a subject filter) and asking for them in chunks.

// LatestRead is one read of the newest entry of every subject matching
// Filters. Its fields are set before Read and not changed after.
type LatestRead struct {
	// Getter sends the requests: open, and used by nothing else during
	// the read.
	Getter *Getter
	// Stream lists the subjects of a filter matching more than
	// MaxMultiLastSubjects keys.
	Stream jetstream.Stream
	// Filters are the subject filters read.
	Filters []string
	// UpTo is the revision listed subjects are read as of: one known
	// before the read began (the stream's last sequence then), so that a
	// key created after it has a newer revision.
	UpTo uint64
	// Pin pins every request at UpTo, which must then not be 0 (a request
	// pinned at 0 is not pinned): the read is exact as of UpTo, however
	// many requests it takes. Without it, a continuation is pinned at the
	// revision of the answer it continues and listed subjects at UpTo;
	// every other request is answered as of the stream's last revision
	// when the server reads it (see Plan), and LatestResult says which
	// filters were read as of which revision.
	Pin bool
	// Apply is handed the entries of each answer, whole and in order, in
	// the order the requests were sent; an error ends the read with it.
	// An answer that fails hands nothing. The slice is reused once Apply
	// returns. It must be set.
	Apply func(entries []*nats.Msg) error
	// BeforeSend, when set, is called before each round of pipelined
	// requests (every request but the first): the caller's backpressure.
	BeforeSend func()
	// Listed, when set, is told of every filter listed and how many
	// subjects it matched, before they are requested.
	Listed func(filter string, subjects int)
	// TooLarge, when set, is asked whether to go on when the first
	// request is refused for matching more than MaxMultiLastSubjects
	// keys, before anything else is sent: the caller may read such a
	// state another way. When it says no, Read returns at once, having
	// applied nothing, with LatestResult.Declined set.
	TooLarge func() (goOn bool, err error)
}

// LatestResult is what a LatestRead learnt of the revisions its answers
// are as of.
type LatestResult struct {
	// Atomic is set when the first answer held the whole read, or found
	// nothing: the state of the filters is exact as of UpTo.
	Atomic bool
	// UpTo is the revision an atomic read is exact as of: the one its
	// answer reported, or the LatestRead's UpTo when nothing matched
	// (nothing matched then either: a key deleted since still has its
	// delete marker, which matches).
	UpTo uint64
	// Marks holds, for a read of several answers without Pin, the filters
	// read as of each revision: an answer's filters as of the revision
	// it reported, a listed filter's and those of a request nothing
	// matched as of the LatestRead's UpTo. Nil for an atomic or pinned
	// read.
	Marks map[uint64][]string
	// Declined is set when TooLarge said not to read the state: nothing
	// was read.
	Declined bool
}

// ListingError is a listing of the subjects of Filter that failed.
type ListingError struct {
	Filter string
	Err    error // the stream's info request's
}

func (e *ListingError) Error() string { return "listing " + e.Filter + ": " + e.Err.Error() }
func (e *ListingError) Unwrap() error { return e.Err }

// Read reads the entries, handing each answer to Apply, and reports the
// revisions they are as of. The first error ends it: Apply's, a
// *ListingError, or the Getter's as it returned it (ErrNoDirectGet,
// ErrReconnected, ...). ErrNoResults and ErrTooManyResults are answers,
// not errors: nothing matched, or the request is cut or its filter
// listed.
func (r *LatestRead) Read(ctx context.Context) (LatestResult, error) {
	return r.read(r.Getter, func(filter string) ([]string, error) {
		return listSubjects(ctx, r.Stream, filter)
	})
}

// answerer is what a read asks a Getter (a played server in tests).
type answerer interface {
	Send(Request) (*Pending, error)
	Receive(*Pending, func(*nats.Msg)) (BatchEnd, error)
}

// latest is the state of one Read.
type latest struct {
	*LatestRead
	g    answerer
	list func(filter string) ([]string, error)
	plan *Plan
	res  LatestResult
	// entries holds the answer being received, until it is whole.
	entries []*nats.Msg
}

// sent is a request in flight: as planned (what the Plan is told of),
// and as sent (Pin applied).
type sent struct {
	planned Request
	p       *Pending
}

func (r *LatestRead) read(g answerer, list func(string) ([]string, error)) (LatestResult, error) {
	l := &latest{LatestRead: r, g: g, list: list, plan: NewPlan(nil, r.UpTo)}
	first := Request{MultiLast: r.Filters}
	s, err := l.send(first)
	if err != nil {
		return LatestResult{}, err
	}
	end, err := l.receive(s)
	switch {
	case err == nil && end.Pending == 0:
		return LatestResult{Atomic: true, UpTo: end.UpTo}, nil
	case errors.Is(err, ErrNoResults):
		return LatestResult{Atomic: true, UpTo: r.UpTo}, nil
	case errors.Is(err, ErrTooManyResults):
		if r.TooLarge != nil {
			goOn, err := r.TooLarge()
			if err != nil || !goOn {
				return LatestResult{Declined: err == nil}, err
			}
		}
		if len(r.Filters) == 1 {
			if err := l.listing(r.Filters[0]); err != nil {
				return LatestResult{}, err
			}
			break
		}
		// Not recorded as a refusal: the Plan starts from a probe.
		l.plan.Request(r.Filters)
	case err != nil:
		return LatestResult{}, err
	default:
		// The byte limit cut the answer short: continue it from where it
		// stopped, pinned at the revision it reported.
		l.mark(first.MultiLast, end.UpTo)
		l.plan.Resume(first, end)
	}
	if err := l.rest(); err != nil {
		return LatestResult{}, err
	}
	return l.res, nil
}

// rest sends the requests of the plan, Window of them in flight, and
// tells the plan how each was answered: a request matching more than
// MaxMultiLastSubjects keys is cut again, and a single filter matching
// more is listed; an answer cut short by the byte limit is continued.
func (l *latest) rest() error {
	var inflight []sent
	for {
		if l.BeforeSend != nil {
			l.BeforeSend()
		}
		for len(inflight) < Window {
			req, ok := l.plan.Next()
			if !ok {
				break
			}
			s, err := l.send(req)
			if err != nil {
				return err
			}
			inflight = append(inflight, s)
		}
		if len(inflight) == 0 {
			return nil
		}
		s := inflight[0]
		inflight = inflight[1:]
		req := s.planned
		end, err := l.receive(s)
		switch {
		case errors.Is(err, ErrNoResults):
			if req.UpToSeq == 0 {
				// No key matched as of the answer, which says no
				// revision: the filters are read as of UpTo (nothing
				// matched then either). Left unmarked, a key created
				// after this answer but before the oldest marked one
				// would be neither read nor tailed.
				l.mark(req.MultiLast, l.UpTo)
			}
			l.plan.Answered(req, 0)
		case errors.Is(err, ErrTooManyResults):
			if !l.plan.Refused(req) {
				if err := l.listing(req.MultiLast[0]); err != nil {
					return err
				}
			}
		case err != nil:
			return err
		default:
			if req.UpToSeq == 0 {
				// Pinned requests (continuations, listed subjects) were
				// marked with the request or the filter they continue.
				l.mark(req.MultiLast, end.UpTo)
			}
			l.plan.Answered(req, end.Received+int(end.Pending))
			if end.Pending > 0 {
				l.plan.Resume(req, end)
			}
		}
	}
}

// send sends req as planned, pinned at UpTo with Pin.
func (l *latest) send(req Request) (sent, error) {
	out := req
	if l.Pin {
		out.UpToSeq = l.UpTo
	}
	p, err := l.g.Send(out)
	return sent{planned: req, p: p}, err
}

// receive receives the answer to s and hands it, whole, to Apply.
func (l *latest) receive(s sent) (BatchEnd, error) {
	end, err := l.g.Receive(s.p, func(msg *nats.Msg) { l.entries = append(l.entries, msg) })
	if err == nil {
		err = l.Apply(l.entries)
	}
	clear(l.entries)
	l.entries = l.entries[:0]
	return end, err
}

// listing plans the subjects of filter, listed, read as of UpTo, and
// marks the filter read as of it.
func (l *latest) listing(filter string) error {
	subjects, err := l.list(filter)
	if err != nil {
		return &ListingError{Filter: filter, Err: err}
	}
	if l.Listed != nil {
		l.Listed(filter, len(subjects))
	}
	l.mark([]string{filter}, l.UpTo)
	l.plan.Add(listedRequests(subjects, l.UpTo)...)
	return nil
}

// mark records that filters were read as of rev; nothing with Pin (all
// of it is as of UpTo).
func (l *latest) mark(filters []string, rev uint64) {
	if l.Pin {
		return
	}
	if l.res.Marks == nil {
		l.res.Marks = map[uint64][]string{}
	}
	l.res.Marks[rev] = append(l.res.Marks[rev], filters...)
}

// listSubjects lists the subjects matching filter (the stream's info with
// a subject filter), sorted.
func listSubjects(ctx context.Context, stream jetstream.Stream, filter string) ([]string, error) {
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Keys(info.State.Subjects)), nil
}

// listedRequests returns requests for subjects, in chunks of at most
// MaxMultiLastSubjects explicit subjects, pinned at upTo.
func listedRequests(subjects []string, upTo uint64) []Request {
	var reqs []Request
	for chunk := range slices.Chunk(subjects, MaxMultiLastSubjects) {
		reqs = append(reqs, Request{MultiLast: chunk, UpToSeq: upTo})
	}
	return reqs
}
