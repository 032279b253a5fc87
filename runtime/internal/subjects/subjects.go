// Package subjects is the subject algebra of the runtime's filters:
// subsumption, intersection and generalization of NATS subjects, the
// normalization of a watcher's filter set into one a consumer accepts, a
// matcher of literal subjects against a filter set, and the one subject
// covering a filter set that a direct get can ask for. It knows nothing of
// buckets or watchers, and needs no server to test.
package subjects

import (
	"slices"
	"strings"
)

// Subjects are
// token sequences where "*" matches exactly one token and a final ">" matches
// one or more tokens (so "a.>" does not match "a").

// Subsumes reports whether every subject matched by b is also matched
// by a.
func Subsumes(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i, tok := range at {
		if tok == ">" {
			// a matches one or more further tokens; b must have at least one.
			return i < len(bt)
		}
		if i >= len(bt) {
			return false
		}
		switch {
		case bt[i] == ">":
			return false // b matches arbitrarily long subjects, a does not
		case tok == "*":
			continue // any single token of b, including "*"
		case tok != bt[i]:
			return false // a literal only covers the same literal
		}
	}
	return len(at) == len(bt)
}

// Intersect reports whether some subject is matched by both a and b.
func Intersect(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; ; i++ {
		switch {
		case i == len(at) || i == len(bt):
			return len(at) == len(bt)
		case at[i] == ">" || bt[i] == ">":
			return true // the other side has a token here and may go on
		case at[i] != bt[i] && at[i] != "*" && bt[i] != "*":
			return false // two different literals
		}
	}
}

// Generalize returns the narrowest subject of the form this algebra
// can express that matches everything a and b match: equal tokens are kept,
// differing ones become "*", and from the first ">" (or length difference)
// on, ">". It is only used for intersecting pairs, whose lengths can differ
// only under a ">".
func Generalize(a, b string) string {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	out := make([]string, 0, max(len(at), len(bt)))
	for i := 0; i < len(at) && i < len(bt); i++ {
		switch {
		case at[i] == ">" || bt[i] == ">":
			return strings.Join(append(out, ">"), ".")
		case at[i] == bt[i]:
			out = append(out, at[i])
		default:
			out = append(out, "*")
		}
	}
	if len(at) != len(bt) {
		out = append(out, ">")
	}
	return strings.Join(out, ".")
}

// Normalize returns a filter set that every server version accepts
// for one multi-filter consumer and that matches at least everything the
// input matches: no duplicates, no filter subsumed by another, no two
// filters that intersect (servers 2.10.14 to 2.12.4 reject any
// intersection), sorted. The input is not modified.
//
// Duplicates and subsumed filters are dropped without changing what is
// matched. An intersecting pair where neither covers the other (such as
// "a.*.c" and "a.b.*") cannot be split into disjoint filters, so it is
// replaced by the narrowest filter covering both ("a.*.*"); widened reports
// that this happened, and then the set matches more than the input, so the
// caller must filter what it receives. Filters built from scope prefixes
// (literal tokens with an optional trailing ">") never need widening: two
// such filters intersect only when one covers the other.
//
// Cost: O(n log n) for filters without "*", plus O(n) pairwise work for each
// filter that has one.
func Normalize(filters []string) (normalized []string, widened bool) {
	set := slices.Clone(filters)
	for {
		set = dropCovered(set)
		i, j, found := findIntersecting(set)
		if !found {
			return set, widened
		}
		merged := Generalize(set[i], set[j])
		set = slices.Delete(set, j, j+1) // j > i: delete j first
		set[i] = merged
		widened = true
	}
}

// isSimpleFilter reports whether f is literal tokens with at most a trailing
// ">", the shape scope prefixes produce.
func isSimpleFilter(f string) bool {
	body := strings.TrimSuffix(f, ".>")
	if f == ">" {
		return true
	}
	return !strings.ContainsAny(body, "*>")
}

// dropCovered sorts set, removes duplicates and removes every filter
// subsumed by another one.
//
// Simple filters are covered only by a "p.>" filter whose p is a proper
// token prefix of theirs, which a map lookup of each prefix (a substring, no
// allocation) decides; filters with "*" are compared pairwise.
func dropCovered(set []string) []string {
	slices.Sort(set)
	set = slices.Compact(set)
	tails := make(map[string]struct{}) // p for every "p.>" in set
	var wild []string
	for _, f := range set {
		switch {
		case f == ">":
			return []string{">"}
		case !isSimpleFilter(f):
			wild = append(wild, f)
		case strings.HasSuffix(f, ".>"):
			tails[strings.TrimSuffix(f, ".>")] = struct{}{}
		}
	}
	kept := set[:0:0]
	for _, f := range set {
		if !coveredByTail(f, tails) && !coveredByWild(f, wild) {
			kept = append(kept, f)
		}
	}
	return kept
}

// coveredByTail reports whether some "p.>" (p in tails) covers f, which is
// any filter: p must be a proper token prefix of f made of literals.
func coveredByTail(f string, tails map[string]struct{}) bool {
	// For f = "q.>" the last prefix tried would be q itself: stop before.
	end := len(f)
	if strings.HasSuffix(f, ".>") {
		end -= 2
	}
	for i := 0; i < end; i++ {
		if f[i] != '.' {
			continue
		}
		prefix := f[:i]
		if strings.ContainsAny(prefix, "*>") {
			return false // p is literal, so no longer prefix can match either
		}
		if _, ok := tails[prefix]; ok {
			return true
		}
	}
	return false
}

// coveredByWild reports whether a filter with "*" other than f covers f.
func coveredByWild(f string, wild []string) bool {
	for _, g := range wild {
		if g != f && Subsumes(g, f) {
			return true
		}
	}
	return false
}

// findIntersecting returns a pair (i < j) of intersecting filters. Only
// pairs involving a filter with "*" can intersect once covered filters are
// gone (see Normalize), so only those are compared.
func findIntersecting(set []string) (i, j int, found bool) {
	for w, f := range set {
		if isSimpleFilter(f) {
			continue
		}
		for k, g := range set {
			if k != w && Intersect(f, g) {
				return min(w, k), max(w, k), true
			}
		}
	}
	return 0, 0, false
}

// Matcher matches literal subjects against a filter set: a map
// lookup per token prefix for the simple filters, pairwise only for
// filters with "*".
type Matcher struct {
	all   bool // a ">" filter: everything matches
	exact map[string]bool
	tails map[string]struct{} // p for every "p.>"
	wild  []string
}

// NewMatcher returns a Matcher of filters.
func NewMatcher(filters []string) *Matcher {
	m := &Matcher{exact: make(map[string]bool), tails: make(map[string]struct{})}
	for _, f := range filters {
		m.exact[f] = true
		switch {
		case f == ">":
			m.all = true
		case !isSimpleFilter(f):
			m.wild = append(m.wild, f)
		case strings.HasSuffix(f, ".>"):
			m.tails[strings.TrimSuffix(f, ".>")] = struct{}{}
		}
	}
	return m
}

// Matches reports whether some filter matches the literal subject s, or,
// for s a filter, equals or covers it.
func (m *Matcher) Matches(s string) bool {
	return m.all || m.exact[s] || coveredByTail(s, m.tails) || coveredByWild(s, m.wild)
}

// Covering returns one subject covering every filter: the filter
// itself when there is one, else the filters' common literal tokens and
// ">", one token shorter when a filter ends there (">" needs a token to
// match), and never shorter than the bucket's prefix.
func Covering(prefix string, filters []string) string {
	if len(filters) == 1 {
		return filters[0]
	}
	common := strings.Split(filters[0], ".")
	for _, f := range filters {
		tokens := strings.Split(f, ".")
		n := 0
		for n < len(common) && n < len(tokens) && common[n] == tokens[n] && tokens[n] != "*" && tokens[n] != ">" {
			n++
		}
		if n == len(tokens) {
			n-- // f is the common part itself
		}
		common = common[:n]
	}
	covering := strings.Join(common, ".") + "."
	if len(covering) < len(prefix) {
		return prefix + ">"
	}
	return covering + ">"
}
