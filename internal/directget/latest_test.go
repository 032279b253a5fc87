package directget

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
)

// stream is a stream played as a server of batched direct gets: the
// sequences of each subject's messages, oldest first, and its last
// sequence. Every answer can move last on by a write to no subject read
// (tick), so that unpinned answers are as of different revisions.
type stream struct {
	seqs      map[string][]uint64
	last      uint64
	tick      bool
	perAnswer int           // the byte limit, in entries; 0: none
	fail      map[int]error // the nth request received (from 1) fails so
	listErr   error

	sent   []Request
	listed []string
}

// keys writes n subjects prefix.k0000 ... one message each.
func (s *stream) keys(prefix string, n int) {
	if s.seqs == nil {
		s.seqs = map[string][]uint64{}
	}
	for i := range n {
		s.last++
		subj := fmt.Sprintf("%s.k%04d", prefix, i)
		s.seqs[subj] = append(s.seqs[subj], s.last)
	}
}

func (s *stream) Send(req Request) (*Pending, error) {
	s.sent = append(s.sent, req)
	return &Pending{Req: req}, nil
}

type hit struct {
	subject string
	seq     uint64
}

func (s *stream) Receive(p *Pending, fn func(*nats.Msg)) (BatchEnd, error) {
	if err := s.fail[len(s.sent)]; err != nil {
		return BatchEnd{}, err
	}
	defer func() {
		if s.tick {
			s.last++
		}
	}()
	if p.Req.NextBySubj != "" {
		return s.next(p.Req, fn)
	}
	upTo := cmpOr(p.Req.UpToSeq, s.last)
	var hits []hit
	for subj, seqs := range s.seqs {
		i, _ := slices.BinarySearch(seqs, upTo+1)
		if i > 0 && slices.ContainsFunc(p.Req.MultiLast, func(f string) bool { return matches(f, subj) }) {
			hits = append(hits, hit{subj, seqs[i-1]})
		}
	}
	if len(hits) > MaxMultiLastSubjects {
		return BatchEnd{}, ErrTooManyResults
	}
	hits = slices.DeleteFunc(hits, func(h hit) bool { return h.seq < p.Req.Seq })
	slices.SortFunc(hits, func(a, b hit) int { return int(a.seq) - int(b.seq) })
	if len(hits) == 0 {
		return BatchEnd{}, ErrNoResults
	}
	n := len(hits)
	if s.perAnswer > 0 {
		n = min(n, s.perAnswer)
	}
	if p.Req.Batch > 0 {
		n = min(n, p.Req.Batch)
	}
	for _, h := range hits[:n] {
		fn(&nats.Msg{Header: nats.Header{"Nats-Subject": {h.subject}, "Nats-Sequence": {strconv.FormatUint(h.seq, 10)}}})
	}
	return BatchEnd{UpTo: upTo, Pending: uint64(len(hits) - n), LastSeq: hits[n-1].seq, Received: n}, nil
}

// next answers a request for the messages from req.Seq on whose subjects
// match req.NextBySubj (every message, in order), req.Batch of them.
func (s *stream) next(req Request, fn func(*nats.Msg)) (BatchEnd, error) {
	var hits []hit
	for subj, seqs := range s.seqs {
		if matches(req.NextBySubj, subj) {
			for _, seq := range seqs {
				if seq >= req.Seq {
					hits = append(hits, hit{subj, seq})
				}
			}
		}
	}
	if len(hits) == 0 {
		return BatchEnd{}, ErrNoResults
	}
	slices.SortFunc(hits, func(a, b hit) int { return int(a.seq) - int(b.seq) })
	n := min(len(hits), max(req.Batch, 1))
	for _, h := range hits[:n] {
		fn(&nats.Msg{Header: nats.Header{"Nats-Subject": {h.subject}, "Nats-Sequence": {strconv.FormatUint(h.seq, 10)}}})
	}
	return BatchEnd{UpTo: s.last, Pending: uint64(len(hits) - n), LastSeq: hits[n-1].seq, Received: n}, nil
}

func (s *stream) list(filter string) ([]string, error) {
	s.listed = append(s.listed, filter)
	if s.listErr != nil {
		return nil, s.listErr
	}
	var out []string
	for subj := range s.seqs {
		if matches(filter, subj) {
			out = append(out, subj)
		}
	}
	slices.Sort(out)
	return out, nil
}

func cmpOr(a, b uint64) uint64 {
	if a != 0 {
		return a
	}
	return b
}

// matches reports whether subject matches filter ('*' a token, '>' the
// rest).
func matches(filter, subject string) bool {
	if !strings.ContainsAny(filter, "*>") {
		return filter == subject
	}
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		switch {
		case tok == ">":
			return len(s) > i
		case i >= len(s) || tok != "*" && tok != s[i]:
			return false
		}
	}
	return len(f) == len(s)
}

// want is the newest entry at or below upTo of each subject matching
// filters.
func (s *stream) want(filters []string, upTo uint64) map[string]uint64 {
	out := map[string]uint64{}
	for subj, seqs := range s.seqs {
		i, _ := slices.BinarySearch(seqs, upTo+1)
		if i > 0 && slices.ContainsFunc(filters, func(f string) bool { return matches(f, subj) }) {
			out[subj] = seqs[i-1]
		}
	}
	return out
}

func TestLatestReadSplitsRequests(t *testing.T) {
	tests := []struct {
		name    string
		load    func(*stream)
		filters []string
		pin     bool
		upTo    uint64 // 0: the stream's last sequence before the read
		// want
		atomic   bool
		requests int // 0: not checked
		listed   []string
		// marked lists the filters marked, in revision order; checked
		// unless nil
		marked [][]string
	}{
		{name: "everything in one answer", load: func(s *stream) { s.keys("a", 10); s.keys("b", 10) },
			filters: []string{"a.>", "b.>"}, atomic: true, requests: 1},
		{name: "pinned, in one answer", load: func(s *stream) { s.keys("a", 10); s.keys("b", 10) },
			filters: []string{"a.>", "b.>"}, pin: true, upTo: 15, atomic: true, requests: 1},
		{name: "nothing matches", load: func(s *stream) { s.keys("a", 10) },
			filters: []string{"z.>"}, atomic: true, requests: 1},
		{name: "first answer cut short", load: func(s *stream) { s.perAnswer = 8; s.keys("a", 20) },
			filters: []string{"a.>"}, requests: 3, marked: [][]string{{"a.>"}}},
		{name: "pinned, cut short", load: func(s *stream) { s.perAnswer = 8; s.keys("a", 20) },
			filters: []string{"a.>"}, pin: true, requests: 3},
		{name: "one filter past the cap: listed", load: func(s *stream) { s.keys("a", 1500) },
			filters: []string{"a.>"}, requests: 3, listed: []string{"a.>"}, marked: [][]string{{"a.>"}}},
		{name: "several filters past the cap: planned", load: func(s *stream) { s.keys("a", 600); s.keys("b", 600); s.keys("c", 600) },
			filters: []string{"a.>", "b.>", "c.>"}, requests: 4, marked: [][]string{{"a.>"}, {"b.>"}, {"c.>"}}},
		{name: "a filter past the cap among others: it alone listed", load: func(s *stream) { s.keys("a", 1500); s.keys("b", 10) },
			filters: []string{"a.>", "b.>"}, listed: []string{"a.>"}},
		{name: "pinned past the cap", load: func(s *stream) { s.keys("a", 1500); s.keys("b", 600); s.keys("c", 600) },
			filters: []string{"a.>", "b.>", "c.>"}, pin: true, upTo: 2000, listed: []string{"a.>"}},
		// The empty filter is marked as of UpTo, older than the answers.
		{name: "empty filters among others", load: func(s *stream) { s.keys("a", 700); s.keys("c", 700) },
			filters: []string{"a.>", "b.>", "c.>"}, marked: [][]string{{"b.>"}, {"a.>"}, {"c.>"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{tick: true}
			tt.load(s)
			upTo := cmpOr(tt.upTo, s.last)
			got := map[string]uint64{}
			r := &LatestRead{Filters: tt.filters, UpTo: upTo, Pin: tt.pin, Apply: func(entries []*nats.Msg) error {
				for _, m := range entries {
					subj := m.Header.Get("Nats-Subject")
					if _, dup := got[subj]; dup {
						t.Errorf("%s delivered twice", subj)
					}
					got[subj] = HeaderUint(m, "Nats-Sequence")
				}
				return nil
			}}
			res, err := r.read(s, s.list)
			if err != nil {
				t.Fatal(err)
			}
			// What is read: the newest entry of every key as of UpTo
			// (pinned), or as of now (nothing in scope is written during
			// the read).
			if want := s.want(tt.filters, cmpOr(upTo*b2u(tt.pin), s.last)); !maps.Equal(got, want) {
				t.Errorf("read %d entries, want %d", len(got), len(want))
			}
			if res.Atomic != tt.atomic {
				t.Errorf("Atomic = %v, want %v", res.Atomic, tt.atomic)
			}
			if tt.atomic && tt.pin && res.UpTo != upTo {
				t.Errorf("UpTo = %d, want %d", res.UpTo, upTo)
			}
			if tt.requests != 0 && len(s.sent) != tt.requests {
				t.Errorf("%d requests, want %d: %v", len(s.sent), tt.requests, s.sent)
			}
			if !slices.Equal(s.listed, tt.listed) {
				t.Errorf("listed %v, want %v", s.listed, tt.listed)
			}
			for i, req := range s.sent {
				switch {
				case tt.pin && req.UpToSeq != upTo:
					t.Errorf("request %d pinned at %d, want every request at %d", i, req.UpToSeq, upTo)
				case !tt.pin && req.Seq != 0 && req.UpToSeq == 0:
					t.Errorf("request %d continues an answer unpinned", i)
				case !tt.pin && len(req.MultiLast) > 0 && !strings.HasSuffix(req.MultiLast[0], ">") && req.UpToSeq != upTo:
					t.Errorf("request %d for listed subjects pinned at %d, want %d", i, req.UpToSeq, upTo)
				}
			}
			checkMarks(t, res, tt.pin || tt.atomic, tt.marked)
		})
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// checkMarks checks that a pinned or atomic read marks nothing, and that
// the filters marked are want, by revision.
func checkMarks(t *testing.T, res LatestResult, none bool, want [][]string) {
	t.Helper()
	if none {
		if res.Marks != nil {
			t.Errorf("Marks = %v, want none", res.Marks)
		}
		return
	}
	if want == nil {
		return
	}
	var got [][]string
	for _, rev := range slices.Sorted(maps.Keys(res.Marks)) {
		got = append(got, res.Marks[rev])
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("marked %v (%v), want %v", got, res.Marks, want)
	}
}

func TestLatestReadErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name     string
		load     func(*stream)
		apply    error
		want     error
		applied  int // entries handed to Apply before the error
		requests int
	}{
		{name: "Apply's error ends the read", load: func(s *stream) { s.keys("a", 10) },
			apply: boom, want: boom, requests: 1},
		{name: "a reconnect: the getter's error as is, nothing of the answer applied",
			load: func(s *stream) {
				s.perAnswer = 4
				s.keys("a", 10)
				s.fail = map[int]error{2: ErrReconnected}
			},
			want: ErrReconnected, applied: 4},
		{name: "no direct get", load: func(s *stream) { s.fail = map[int]error{1: ErrNoDirectGet} },
			want: ErrNoDirectGet, requests: 1},
		{name: "a listing fails", load: func(s *stream) { s.keys("a", 1500); s.listErr = boom },
			want: &ListingError{Filter: "a.>", Err: boom}, requests: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stream{}
			tt.load(s)
			applied := 0
			r := &LatestRead{Filters: []string{"a.>"}, UpTo: s.last, Apply: func(entries []*nats.Msg) error {
				if tt.apply != nil {
					return tt.apply
				}
				applied += len(entries)
				return nil
			}}
			_, err := r.read(s, s.list)
			var le *ListingError
			if want, ok := tt.want.(*ListingError); ok {
				if !errors.As(err, &le) || le.Filter != want.Filter || !errors.Is(err, want.Err) {
					t.Errorf("error = %v, want %v", err, want)
				}
			} else if !errors.Is(err, tt.want) || errors.As(err, &le) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
			if applied != tt.applied {
				t.Errorf("%d entries applied, want %d", applied, tt.applied)
			}
			if tt.requests != 0 && len(s.sent) != tt.requests {
				t.Errorf("%d requests, want %d", len(s.sent), tt.requests)
			}
		})
	}
}

func TestListedRequests(t *testing.T) {
	tests := []struct {
		subjects int
		want     []int // subjects per request
	}{
		{0, nil},
		{1, []int{1}},
		{MaxMultiLastSubjects, []int{MaxMultiLastSubjects}},
		{MaxMultiLastSubjects + 1, []int{MaxMultiLastSubjects, 1}},
		{2*MaxMultiLastSubjects + 5, []int{MaxMultiLastSubjects, MaxMultiLastSubjects, 5}},
	}
	for _, tt := range tests {
		subjects := make([]string, tt.subjects)
		for i := range subjects {
			subjects[i] = fmt.Sprintf("s%05d", i)
		}
		reqs := listedRequests(subjects, 42)
		var sizes []int
		var all []string
		for _, r := range reqs {
			sizes = append(sizes, len(r.MultiLast))
			all = append(all, r.MultiLast...)
			if r.UpToSeq != 42 || r.Seq != 0 {
				t.Errorf("%d subjects: request pinned at %d from %d, want at 42 from the start", tt.subjects, r.UpToSeq, r.Seq)
			}
		}
		if !slices.Equal(sizes, tt.want) || !slices.Equal(all, subjects) {
			t.Errorf("%d subjects: requests of %v, want %v, every subject once in order", tt.subjects, sizes, tt.want)
		}
	}
}
