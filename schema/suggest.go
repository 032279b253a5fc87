package schema

// closest returns the candidate closest to s, or "" when none is close.
// "Close" is an edit distance of at most a third
// of the longer word (at least 1), the usual threshold for typos: "prefx"
// finds "prefix", "strng" finds "string", "vpc" does not find "codec".
func closest(s string, candidates []string) string {
	best, bestDist := "", 0
	for _, c := range candidates {
		d := editDistance(s, c)
		limit := max(len(s), len(c)) / 3
		if d > max(limit, 1) || d == 0 {
			continue
		}
		if best == "" || d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// suggest formats a suggestion from closest: ` (did you mean "x"?)`, or ""
// for no suggestion.
func suggest(best string) string {
	if best == "" {
		return ""
	}
	return ` (did you mean "` + best + `"?)`
}

// editDistance is the optimal string alignment distance between a and b,
// in bytes: insertions, deletions, substitutions and transpositions of
// adjacent bytes each cost 1, so "valeu" is 1 away from "value".
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j]; three rows suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Closest returns the candidate closest to s by the rule above, or "":
// for the other stages that suggest a fix (kvwatchgen -compat's accepted
// changes).
func Closest(s string, candidates []string) string { return closest(s, candidates) }
