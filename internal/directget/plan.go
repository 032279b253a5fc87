package directget

import "slices"

// This file decides how a read that does not fit in one batched direct
// get answer is cut into requests. The server answers at most 1,024 keys
// per request and refuses more with a 413, which is not free (the server
// matches every key of the request to count them): splitting blindly in
// halves until requests fit has nearly one request refused for each one
// answered, and reads slower than one request per scope (BENCHMARKS.md,
// Design decisions: "directget/plan.go: measuring before splitting"; the
// withdrawn halving: docs/design.md).
//
// So the plan measures instead of guessing. It first asks for the keys of
// one filter alone (the probe; while probes find nothing, the next takes
// twice as many filters), then sizes each request from the keys per
// filter of the last few answers, aiming at targetKeys keys. It takes
// the densest of those answers: neighbouring filters (sorted, so of the
// same kind and similar scopes) tend to hold alike, but a generated scope
// is often a dense filter next to an empty one, and an average (over
// everything so far, or over the last answer alone when it was an empty
// filter) then sizes the next request far too large. A refused request
// counts as an answer as dense as the refusal proves (more than 1,024 keys
// over its filters), and its filters go back to be cut again; a single
// filter refused is listed instead (latest.go).

// targetKeys is the number of keys a request is sized to return: half
// the server's cap. Chunks are whole filters, so a request can hold more
// than the density predicts (a generated scope is often a dense filter
// next to a nearly empty one).
const targetKeys = MaxMultiLastSubjects / 2

// Plan hands out the requests of one read. Requests for filters of
// rest are not pinned: each is answered as of the stream's last revision
// when the server reads it, which the server finds from each key's last
// block; a request pinned below the last revision makes it walk back
// through the blocks, every key of every block, which costs the more the
// more is written during the read (BENCHMARKS.md, Design decisions:
// "directget/plan.go: requests not pinned"). The revision of each answer is
// recorded (readMarks). Continuations of an answer are pinned at its
// revision, and the keys of a listed filter at upTo. It is used from one
// goroutine.
type Plan struct {
	// upTo is the revision listed keys are read as of: one known before
	// the listing, so that a key created after it has a newer revision.
	upTo uint64
	// rest holds the filters to request, in order.
	rest []string
	// again holds requests formed already: continuations of answers cut
	// short, chunks of listed keys.
	again []Request
	// recent holds the keys per filter of the last answers and refusals,
	// written round-robin (seen counts them); the densest sizes the next
	// request. Nothing is recorded before an answer holds a key or a
	// request is refused: until then, probes.
	recent [4]float64
	seen   int
	// probing is set while a probe is unanswered: nothing more is taken
	// from rest until its answer. probeSize is the next probe's.
	probing   bool
	probeSize int
}

// NewPlan plans the read of filters; listed keys are read as of upTo.
func NewPlan(filters []string, upTo uint64) *Plan {
	return &Plan{upTo: upTo, rest: filters, probeSize: 1}
}

// Resume plans the rest of an answer to req that the byte limit cut
// short, pinned at the revision the answer is as of.
func (p *Plan) Resume(req Request, end BatchEnd) {
	req.Seq, req.UpToSeq = end.LastSeq+1, end.UpTo
	p.again = append(p.again, req)
}

// Add plans requests formed elsewhere (chunks of listed keys).
func (p *Plan) Add(reqs ...Request) {
	p.again = append(p.again, reqs...)
}

// Next returns the next request to send, or false when none is ready:
// either everything was handed out, or a probe is still unanswered.
func (p *Plan) Next() (Request, bool) {
	if len(p.again) > 0 {
		req := p.again[0]
		p.again = p.again[1:]
		return req, true
	}
	if len(p.rest) == 0 || p.probing {
		return Request{}, false
	}
	var n int
	if p.seen > 0 {
		n = int(targetKeys / p.density())
	} else {
		n, p.probing = p.probeSize, true
		p.probeSize *= 2
	}
	n = min(max(n, 1), len(p.rest))
	req := Request{MultiLast: p.rest[:n:n]}
	p.rest = p.rest[n:]
	return req, true
}

// Answered records that req was answered with keys keys in all (those
// sent and those a byte limit left for later).
func (p *Plan) Answered(req Request, keys int) {
	if req.UpToSeq != 0 {
		// Pinned: a continuation (its request was measured when answered
		// first) or a chunk of listed keys (a key per subject, which says
		// nothing of the filters still to cut, and must not end a probe).
		return
	}
	p.probing = false
	if keys > 0 || p.seen > 0 {
		// An empty answer counts as one key: a run of empty filters is
		// then read in growing chunks, not one filter at a time.
		p.record(float64(max(keys, 1)) / float64(len(req.MultiLast)))
	}
}

// record adds the keys per filter of an answer or a refusal.
func (p *Plan) record(density float64) {
	p.recent[p.seen%len(p.recent)] = density
	p.seen++
}

// density is the densest of the recent answers.
func (p *Plan) density() float64 {
	return slices.Max(p.recent[:min(p.seen, len(p.recent))])
}

// Refused records that req matched more than 1,024 keys: the density is
// at least that over its filters, which go back to be requested again. It
// reports false when req has a single filter: the caller lists its keys
// instead (the density still counts: its neighbours are likely as dense).
func (p *Plan) Refused(req Request) bool {
	p.probing = false
	p.record(float64(MaxMultiLastSubjects+1) / float64(len(req.MultiLast)))
	if len(req.MultiLast) < 2 {
		return false
	}
	p.rest = append(req.MultiLast[:len(req.MultiLast):len(req.MultiLast)], p.rest...)
	return true
}

// UpTo is the revision listed keys are read as of.
func (p *Plan) UpTo() uint64 { return p.upTo }

// Request adds filters to request, after those already planned.
func (p *Plan) Request(filters []string) { p.rest = append(p.rest, filters...) }
