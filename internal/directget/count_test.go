package directget

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
)

func TestCount(t *testing.T) {
	s := &stream{}
	s.keys("a", 10)
	s.keys("b", 1500)
	s.keys("a", 3) // a.k0000..a.k0002 again: 10 keys, 13 messages
	for _, tt := range []struct {
		filters []string
		n       uint64
		more    bool
	}{
		{[]string{"a.>"}, 10, false},
		{[]string{"a.k0001", "a.k0009"}, 2, false},
		{[]string{"z.>"}, 0, false},
		{[]string{"b.>"}, MaxMultiLastSubjects + 1, true}, // refused: more than a request counts
		{[]string{"a.>", "b.>"}, MaxMultiLastSubjects + 1, true},
	} {
		n, more, err := countLatest(s, tt.filters)
		if err != nil || n != tt.n || more != tt.more {
			t.Errorf("CountLatest(%v) = %d, %v, %v; want %d, %v", tt.filters, n, more, err, tt.n, tt.more)
		}
	}
	for subject, want := range map[string]uint64{"a.>": 13, "b.>": 1500, "a.k0000": 2, "z.>": 0} {
		if n, err := countMessages(s, subject); err != nil || n != want {
			t.Errorf("CountMessages(%s) = %d, %v; want %d", subject, n, err, want)
		}
	}
	// Each count is one request of a single message.
	for _, req := range s.sent {
		if req.Batch != 1 {
			t.Errorf("request %+v: batch %d, want 1", req, req.Batch)
		}
	}
	s.fail = map[int]error{len(s.sent) + 1: ErrNoDirectGet}
	if _, _, err := countLatest(s, []string{"a.>"}); !errors.Is(err, ErrNoDirectGet) {
		t.Errorf("a failed count: error %v, want ErrNoDirectGet", err)
	}
}

func TestSample(t *testing.T) {
	filters := make([]string, 100)
	for i := range filters {
		filters[i] = fmt.Sprintf("f%03d", i)
	}
	for _, tt := range []struct {
		filters []string
		n       int
		want    []int // indexes into filters
	}{
		{filters[:3], 5, []int{0, 1, 2}},
		{filters, 2, []int{0, 1}},
		{filters, 4, []int{0, 1, 2, 3}},
		{filters, 6, []int{0, 1, 2, 3, 50, 51}},
		{filters, 16, []int{0, 1, 2, 3, 25, 26, 27, 28, 50, 51, 52, 53, 75, 76, 77, 78}},
		{filters[:17], 16, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
		{filters[:7], 6, []int{0, 1, 2, 3, 4, 5}},
	} {
		var want []string
		for _, i := range tt.want {
			want = append(want, filters[i])
		}
		if got := Sample(tt.filters, tt.n); !slices.Equal(got, want) {
			t.Errorf("Sample(%d filters, %d) = %v, want %v", len(tt.filters), tt.n, got, want)
		}
	}
}

// A read whose first request is refused asks TooLarge before anything
// else is sent: when told not to go on, it returns Declined having applied
// nothing; when told to go on, it reads as without it.
func TestLatestReadTooLarge(t *testing.T) {
	for _, goOn := range []bool{false, true} {
		s := &stream{}
		s.keys("a", 700)
		s.keys("b", 700)
		asked, applied := 0, 0
		r := &LatestRead{Filters: []string{"a.>", "b.>"}, UpTo: s.last,
			Apply:    func(entries []*nats.Msg) error { applied += len(entries); return nil },
			TooLarge: func() (bool, error) { asked++; return goOn, nil }}
		res, err := r.read(s, s.list)
		switch {
		case err != nil:
			t.Fatal(err)
		case asked != 1:
			t.Errorf("goOn %v: TooLarge asked %d times, want once", goOn, asked)
		case !goOn && (!res.Declined || applied != 0 || len(s.sent) != 1):
			t.Errorf("declined: result %+v, %d applied, %d requests; want Declined, nothing applied, 1 request", res, applied, len(s.sent))
		case goOn && (res.Declined || applied != 1400):
			t.Errorf("went on: result %+v, %d applied; want the whole read", res, applied)
		}
	}
	// A read that fits one answer never asks.
	s := &stream{}
	s.keys("a", 10)
	r := &LatestRead{Filters: []string{"a.>"}, UpTo: s.last, Apply: func([]*nats.Msg) error { return nil },
		TooLarge: func() (bool, error) { t.Error("TooLarge asked of a read that fits"); return true, nil }}
	if _, err := r.read(s, s.list); err != nil {
		t.Fatal(err)
	}
}
