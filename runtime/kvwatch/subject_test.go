package kvwatch

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestSubjectSubsumes(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"a.b", "a.b", true},
		{"a.>", "a.b", true},
		{"a.>", "a.b.c", true},
		{"a.>", "a", false}, // ">" needs one more token
		{"a.>", "a.>", true},
		{"a.>", "a.*", true},
		{"a.*", "a.>", false},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", false},
		{"a.b", "a.*", false},
		{">", "a", true},
		{"*.b", "a.b", true},
		{"a.b.>", "a.b", false},
		{"a", "a.b", false},
	} {
		if got := subjectSubsumes(c.a, c.b); got != c.want {
			t.Errorf("subjectSubsumes(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestSubjectsIntersect(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"a.*.c", "a.b.*", true},
		{"a.b", "a.c", false},
		{"a.>", "a", false},
		{"a.>", "*.b", true},
		{"a.b", "a.b.c", false},
		{"a.*", "a.b.>", false},
		{"a.*.>", "a.b", false},
		{"a.*.>", "a.b.c", true},
		{">", "x.y", true},
	} {
		if got := subjectsIntersect(c.a, c.b); got != c.want {
			t.Errorf("subjectsIntersect(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := subjectsIntersect(c.b, c.a); got != c.want {
			t.Errorf("subjectsIntersect(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func TestNormalizeFilters(t *testing.T) {
	for _, c := range []struct {
		in      []string
		want    []string
		widened bool
	}{
		{nil, nil, false},
		{[]string{"k.a", "k.a", "k.a.>"}, []string{"k.a", "k.a.>"}, false},
		{[]string{"k.a.>", "k.a.b", "k.a.b.>", "k.b"}, []string{"k.a.>", "k.b"}, false},
		{[]string{"k.b.>", "k.a.>"}, []string{"k.a.>", "k.b.>"}, false},
		{[]string{"k.>", "k.a", "k.a.>"}, []string{"k.>"}, false},
		{[]string{"k.*.c", "k.b.*"}, []string{"k.*.*"}, true},
		{[]string{"k.*", "k.a", "k.a.b"}, []string{"k.*", "k.a.b"}, false},
		{[]string{">", "k.a"}, []string{">"}, false},
	} {
		in := slices.Clone(c.in)
		got, widened := NormalizeFilters(c.in)
		if !slices.Equal(got, c.want) || widened != c.widened {
			t.Errorf("NormalizeFilters(%q) = %q, %v; want %q, %v", c.in, got, widened, c.want, c.widened)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("NormalizeFilters modified its input: %q", c.in)
		}
	}
}

// TestNormalizeFiltersProperties checks, on random filter sets, the
// contract every server relies on: sorted, no duplicates, no pair where one
// covers or intersects the other, and every subject matched by an input
// filter is matched by the output.
func TestNormalizeFiltersProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := []string{"a", "b", "c", "*"}
	randomFilter := func() string {
		n := 1 + rng.IntN(3)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = tokens[rng.IntN(len(tokens))]
		}
		if rng.IntN(3) == 0 {
			parts = append(parts, ">")
		}
		return strings.Join(parts, ".")
	}
	// Every literal subject of up to 4 tokens over a, b, c, d.
	var subjects []string
	var gen func(prefix []string)
	gen = func(prefix []string) {
		if len(prefix) > 0 {
			subjects = append(subjects, strings.Join(prefix, "."))
		}
		if len(prefix) == 4 {
			return
		}
		for _, tok := range []string{"a", "b", "c", "d"} {
			gen(append(slices.Clip(prefix), tok))
		}
	}
	gen(nil)
	for round := range 500 {
		in := make([]string, 1+rng.IntN(6))
		for i := range in {
			in[i] = randomFilter()
		}
		out, _ := NormalizeFilters(in)
		msg := fmt.Sprintf("round %d: %q -> %q", round, in, out)
		if !slices.IsSorted(out) {
			t.Fatalf("%s: not sorted", msg)
		}
		for i := range out {
			for j := range out {
				if i != j && (subjectSubsumes(out[i], out[j]) || subjectsIntersect(out[i], out[j])) {
					t.Fatalf("%s: %q and %q overlap", msg, out[i], out[j])
				}
			}
		}
		for _, s := range subjects {
			inMatch := slices.ContainsFunc(in, func(f string) bool { return subjectSubsumes(f, s) })
			outMatch := slices.ContainsFunc(out, func(f string) bool { return subjectSubsumes(f, s) })
			if inMatch && !outMatch {
				t.Fatalf("%s: %q matched by the input, not the output", msg, s)
			}
		}
	}
}

func TestNormalizeFiltersScale(t *testing.T) {
	// 5,000 scopes of two filters each must normalize quickly (this is a
	// correctness check of the result; speed is for the benchmarks).
	var in []string
	for i := range 5000 {
		in = append(in, fmt.Sprintf("$KV.b.vpc.v%d", i), fmt.Sprintf("$KV.b.vpc.v%d.>", i))
	}
	in = append(in, "$KV.b.vpc.v7.route.x") // covered by v7.>
	out, widened := NormalizeFilters(in)
	if len(out) != 10000 || widened {
		t.Fatalf("got %d filters (widened %v), want 10000", len(out), widened)
	}
}
