package subjects

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
		if got := Subsumes(c.a, c.b); got != c.want {
			t.Errorf("Subsumes(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
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
		if got := Intersect(c.a, c.b); got != c.want {
			t.Errorf("Intersect(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Intersect(c.b, c.a); got != c.want {
			t.Errorf("Intersect(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}

func TestNormalize(t *testing.T) {
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
		got, widened := Normalize(c.in)
		if !slices.Equal(got, c.want) || widened != c.widened {
			t.Errorf("Normalize(%q) = %q, %v; want %q, %v", c.in, got, widened, c.want, c.widened)
		}
		if !slices.Equal(in, c.in) {
			t.Errorf("Normalize modified its input: %q", c.in)
		}
	}
}

// TestNormalizeProperties checks, on random filter sets, the
// contract every server relies on: sorted, no duplicates, no pair where one
// covers or intersects the other, and every subject matched by an input
// filter is matched by the output.
func TestNormalizeProperties(t *testing.T) {
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
		out, _ := Normalize(in)
		msg := fmt.Sprintf("round %d: %q -> %q", round, in, out)
		if !slices.IsSorted(out) {
			t.Fatalf("%s: not sorted", msg)
		}
		for i := range out {
			for j := range out {
				if i != j && (Subsumes(out[i], out[j]) || Intersect(out[i], out[j])) {
					t.Fatalf("%s: %q and %q overlap", msg, out[i], out[j])
				}
			}
		}
		for _, s := range subjects {
			inMatch := slices.ContainsFunc(in, func(f string) bool { return Subsumes(f, s) })
			outMatch := slices.ContainsFunc(out, func(f string) bool { return Subsumes(f, s) })
			if inMatch && !outMatch {
				t.Fatalf("%s: %q matched by the input, not the output", msg, s)
			}
		}
	}
}

func TestNormalizeScale(t *testing.T) {
	// 5,000 scopes of two filters each must normalize quickly (this is a
	// correctness check of the result; speed is for the benchmarks).
	var in []string
	for i := range 5000 {
		in = append(in, fmt.Sprintf("$KV.b.vpc.v%d", i), fmt.Sprintf("$KV.b.vpc.v%d.>", i))
	}
	in = append(in, "$KV.b.vpc.v7.route.x") // covered by v7.>
	out, widened := Normalize(in)
	if len(out) != 10000 || widened {
		t.Fatalf("got %d filters (widened %v), want 10000", len(out), widened)
	}
}

// The scan completing a read asks for one subject covering every filter,
// as narrow as one subject can be.
func TestCovering(t *testing.T) {
	const prefix = "$KV.b."
	for _, c := range []struct {
		filters []string
		want    string
	}{
		{[]string{"$KV.b.p.1.>"}, "$KV.b.p.1.>"},
		{[]string{"$KV.b.vpc.a"}, "$KV.b.vpc.a"},
		{[]string{"$KV.b.vpc.a", "$KV.b.vpc.a.>"}, "$KV.b.vpc.>"},
		{[]string{"$KV.b.p.1.>", "$KV.b.p.2.>"}, "$KV.b.p.>"},
		{[]string{"$KV.b.t.x.a.>", "$KV.b.t.x.b.>"}, "$KV.b.t.x.>"},
		{[]string{"$KV.b.p.1.>", "$KV.b.q.2.>"}, "$KV.b.>"},
		{[]string{"$KV.b.p", "$KV.b.q"}, "$KV.b.>"},
		{[]string{"$KV.b.*.x.>", "$KV.b.*.y.>"}, "$KV.b.>"},
	} {
		if got := Covering(prefix, c.filters); got != c.want {
			t.Errorf("Covering(%q) = %q, want %q", c.filters, got, c.want)
		}
	}
}

func BenchmarkNormalize1000Scopes(b *testing.B) {
	var in []string
	for i := range 1000 {
		in = append(in, fmt.Sprintf("$KV.b.vpc.v%d", i), fmt.Sprintf("$KV.b.vpc.v%d.>", i))
	}
	b.ReportAllocs()
	for b.Loop() {
		Normalize(in)
	}
}
