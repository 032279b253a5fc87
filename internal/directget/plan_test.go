package directget

import (
	"fmt"
	"testing"
)

// serveReadPlan plays a server against plan: keysOf gives the keys each
// filter matches; requests are answered in order, window at a time. A
// single filter refused is listed, as a LatestRead does: its keys are
// planned as pinned chunks of explicit subjects. It returns the number of
// requests sent and refused, and checks that every filter was answered (or
// listed) exactly once.
func serveReadPlan(t *testing.T, filters []string, keysOf func(string) int, window int) (sent, refused int) {
	t.Helper()
	plan := NewPlan(filters, 100)
	answered := map[string]int{}
	var inflight []Request
	for {
		for len(inflight) < window {
			req, ok := plan.Next()
			if !ok {
				break
			}
			if req.UpToSeq != 0 && req.UpToSeq != 100 {
				t.Fatalf("request pinned at %d: only listed keys are read pinned, at the plan's revision", req.UpToSeq)
			}
			inflight = append(inflight, req)
			sent++
		}
		if len(inflight) == 0 {
			break
		}
		req := inflight[0]
		inflight = inflight[1:]
		if req.UpToSeq != 0 { // a chunk of listed keys
			plan.Answered(req, len(req.MultiLast))
			continue
		}
		keys := 0
		for _, f := range req.MultiLast {
			keys += keysOf(f)
		}
		if keys > MaxMultiLastSubjects {
			refused++
			if !plan.Refused(req) {
				answered[req.MultiLast[0]]++
				for n := keys; n > 0; n -= MaxMultiLastSubjects {
					plan.Add(Request{MultiLast: make([]string, min(n, MaxMultiLastSubjects)), UpToSeq: 100})
				}
			}
			continue
		}
		for _, f := range req.MultiLast {
			answered[f]++
		}
		plan.Answered(req, keys)
	}
	for _, f := range filters {
		if answered[f] != 1 {
			t.Fatalf("filter %s answered %d times", f, answered[f])
		}
	}
	return sent, refused
}

func numbered(n int) []string {
	filters := make([]string, n)
	for i := range filters {
		filters[i] = fmt.Sprintf("f%04d", i)
	}
	return filters
}

func TestReadPlanSizesRequestsFromTheProbe(t *testing.T) {
	// 100 filters of 1,000 keys (the initial-sync benchmark): the probe,
	// then one filter a request, none refused.
	sent, refused := serveReadPlan(t, numbered(100), func(string) int { return 1000 }, Window)
	if sent != 100 || refused != 0 {
		t.Errorf("sent %d, refused %d; want 100 and 0", sent, refused)
	}
	// 2,000 filters of one key: chunks of 512.
	sent, refused = serveReadPlan(t, numbered(2000), func(string) int { return 1 }, Window)
	if sent != 5 || refused != 0 {
		t.Errorf("sent %d, refused %d; want 5 and 0", sent, refused)
	}
}

func TestReadPlanProbesPastEmptyFilters(t *testing.T) {
	// The first 30 filters are empty, the rest hold 300 keys each: probes
	// of 1, 2, 4 and 8 filters find nothing, the probe of 16 finds one
	// dense filter among empty ones and sizes the next request too large;
	// refusals bring it down to one or two filters a request (measured: 3
	// refused of 36 requests, against 13 more refused for splitting in halves).
	filters := numbered(60)
	keysOf := func(f string) int {
		if f < "f0030" {
			return 0
		}
		return 300
	}
	sent, refused := serveReadPlan(t, filters, keysOf, Window)
	if refused > 4 || sent > 45 {
		t.Errorf("sent %d, refused %d; want at most 45 and 4", sent, refused)
	}
}

func TestReadPlanSplitsADenseRequest(t *testing.T) {
	// One filter in 100 holds 1,000 keys, the others one: a chunk that
	// takes the dense filter among the sparse ones is refused and split,
	// and every filter is still read once (serveReadPlan checks).
	keysOf := func(f string) int {
		if f == "f0050" {
			return 1000
		}
		return 1
	}
	if _, refused := serveReadPlan(t, numbered(100), keysOf, 1); refused == 0 {
		t.Errorf("no request refused: the dense filter was never in a chunk with others")
	}
}

func TestReadPlanListsDenseFiltersWithoutLosingTheDensity(t *testing.T) {
	// 100 filters of 1,500 keys: each is refused alone once and listed.
	// The chunks of listed keys must not count as answers of one key a
	// filter: the next request would take 512 filters and be refused
	// (207 refusals measured when they did).
	sent, refused := serveReadPlan(t, numbered(100), func(string) int { return 1500 }, Window)
	if refused != 100 {
		t.Errorf("sent %d, refused %d; want 100 refused (one per filter, then listed)", sent, refused)
	}
}
