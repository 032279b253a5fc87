package cli

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	for _, c := range []struct {
		name, old, new, want string
	}{
		{name: "equal", old: "a\nb\n", new: "a\nb\n", want: ""},
		{name: "both empty", old: "", new: "", want: ""},
		{name: "change in the middle", old: "1\n2\n3\n4\n5\n6\n7\n8\n9\n", new: "1\n2\n3\n4\nfive\n6\n7\n8\n9\n", want: "" +
			"@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{name: "insert at the start", old: "a\nb\n", new: "x\na\nb\n", want: "@@ -1,2 +1,3 @@\n+x\n a\n b\n"},
		{name: "delete at the end", old: "a\nb\nc\n", new: "a\nb\n", want: "@@ -1,3 +1,2 @@\n a\n b\n-c\n"},
		{name: "from empty", old: "", new: "a\nb\n", want: "@@ -0,0 +1,2 @@\n+a\n+b\n"},
		{name: "to empty", old: "a\n", new: "", want: "@@ -1 +0,0 @@\n-a\n"},
		{name: "one line each", old: "a\n", new: "b\n", want: "@@ -1 +1 @@\n-a\n+b\n"},
		{name: "no newline at the end, old", old: "a\nb", new: "a\nb\n", want: "" +
			"@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{name: "no newline at the end, both", old: "a\nb", new: "a\nc", want: "" +
			"@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{name: "two hunks", old: lines(1, 20), new: strings.Replace(strings.Replace(lines(1, 20), "2\n", "two\n", 1), "19\n", "nineteen\n", 1), want: "" +
			"@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n 4\n 5\n" +
			"@@ -16,5 +16,5 @@\n 16\n 17\n 18\n-19\n+nineteen\n 20\n"},
		{name: "changes 6 lines apart share a hunk", old: lines(1, 12), new: strings.Replace(strings.Replace(lines(1, 12), "3\n", "x\n", 1), "10\n", "y\n", 1), want: "" +
			"@@ -1,12 +1,12 @@\n 1\n 2\n-3\n+x\n 4\n 5\n 6\n 7\n 8\n 9\n-10\n+y\n 11\n 12\n"},
		{name: "changes 7 lines apart do not", old: lines(1, 13), new: strings.Replace(strings.Replace(lines(1, 13), "3\n", "x\n", 1), "11\n", "y\n", 1), want: "" +
			"@@ -1,6 +1,6 @@\n 1\n 2\n-3\n+x\n 4\n 5\n 6\n" +
			"@@ -8,6 +8,6 @@\n 8\n 9\n 10\n-11\n+y\n 12\n 13\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := unifiedDiff("old", "new", []byte(c.old), []byte(c.new))
			want := c.want
			if want != "" {
				want = "--- old\n+++ new\n" + want
			}
			if got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// lines returns the numbers from to to, one a line.
func lines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

// The edit script turns a into b and is as short as an edit script can be
// (checked against the longest common subsequence by dynamic programming).
func TestDiffLinesIsMinimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		letters := 2 + r.IntN(4)
		a, b := randomLines(r, r.IntN(30), letters), randomLines(r, r.IntN(30), letters)
		ops := diffLines(a, b)
		var gotA, gotB []string
		edits := 0
		for _, op := range ops {
			switch op.kind {
			case ' ':
				gotA, gotB = append(gotA, op.line), append(gotB, op.line)
			case '-':
				gotA = append(gotA, op.line)
				edits++
			case '+':
				gotB = append(gotB, op.line)
				edits++
			default:
				t.Fatalf("op kind %q", op.kind)
			}
		}
		if strings.Join(gotA, "|") != strings.Join(a, "|") || strings.Join(gotB, "|") != strings.Join(b, "|") {
			t.Fatalf("case %d: %q -> %q: script %v does not turn one into the other", i, a, b, ops)
		}
		if want := len(a) + len(b) - 2*lcsLen(a, b); edits != want {
			t.Fatalf("case %d: %q -> %q: %d edits, want %d", i, a, b, edits, want)
		}
	}
}

// randomLines returns n lines drawn from the first letters of the
// alphabet.
func randomLines(r *rand.Rand, n, letters int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('a' + r.IntN(letters)))
	}
	return out
}

func lcsLen(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}

// Files of generated-code size that differ everywhere are diffed in
// linear space, and quickly: lines only one side has are set aside, and
// lines both have in another order take O(ND).
func TestDiffLinesLarge(t *testing.T) {
	a, b := make([]string, 20000), make([]string, 20000)
	for i := range a {
		a[i], b[i] = fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
	}
	if ops := diffLines(a, b); len(ops) != 40000 {
		t.Fatalf("%d ops, want 40000", len(ops))
	}
	for i := range b {
		if i%100 == 0 {
			b[i] = a[i]
		}
	}
	ops := diffLines(a, b)
	same := 0
	for _, op := range ops {
		if op.kind == ' ' {
			same++
		}
	}
	if same != 200 {
		t.Fatalf("%d common lines, want 200", same)
	}
}

func TestDiffLinesReordered(t *testing.T) {
	const n = 5000
	a, b := make([]string, n), make([]string, n)
	for i := range a {
		a[i], b[n-1-i] = fmt.Sprint(i), fmt.Sprint(i)
	}
	edits := 0
	for _, op := range diffLines(a, b) {
		if op.kind != ' ' {
			edits++
		}
	}
	if edits != 2*(n-1) {
		t.Fatalf("%d edits, want %d", edits, 2*(n-1))
	}
}
