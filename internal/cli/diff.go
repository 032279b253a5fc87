package cli

import (
	"bytes"
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines shown around a change, as
// diff -u and git show them.
const diffContext = 3

// diffOp is one line of an edit script: kept (' '), deleted ('-') or
// inserted ('+'). line keeps its "\n", if it has one.
type diffOp struct {
	kind byte
	line string
}

// unifiedDiff returns the unified diff that turns old into new, with the
// labels in its --- and +++ lines, or "" when they are equal. A last line
// without "\n" is marked as diff does ("\ No newline at end of file").
func unifiedDiff(oldLabel, newLabel string, old, new []byte) string {
	if bytes.Equal(old, new) {
		return ""
	}
	ops := diffLines(splitLines(string(old)), splitLines(string(new)))
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", oldLabel, newLabel)
	// oldLine and newLine are the 1-based numbers of ops[i]'s lines.
	oldLine, newLine := make([]int, len(ops)+1), make([]int, len(ops)+1)
	oldLine[0], newLine[0] = 1, 1
	for i, op := range ops {
		oldLine[i+1], newLine[i+1] = oldLine[i], newLine[i]
		if op.kind != '+' {
			oldLine[i+1]++
		}
		if op.kind != '-' {
			newLine[i+1]++
		}
	}
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from diffContext lines before its first change to
		// diffContext lines after its last, taking in every change fewer
		// than 2*diffContext+1 unchanged lines after the previous one.
		start, end := max(0, i-diffContext), i
		for {
			for end < len(ops) && ops[end].kind != ' ' {
				end++
			}
			next := end
			for next < len(ops) && ops[next].kind == ' ' {
				next++
			}
			if next == len(ops) || next-end > 2*diffContext {
				end = min(len(ops), end+diffContext)
				break
			}
			end = next
		}
		writeHunk(&b, ops[start:end], oldLine[start], oldLine[end]-oldLine[start], newLine[start], newLine[end]-newLine[start])
		i = end
	}
	return b.String()
}

// writeHunk writes one hunk: its @@ line, then its lines.
func writeHunk(b *strings.Builder, ops []diffOp, oldStart, oldCount, newStart, newCount int) {
	fmt.Fprintf(b, "@@ -%s +%s @@\n", hunkRange(oldStart, oldCount), hunkRange(newStart, newCount))
	for _, op := range ops {
		b.WriteByte(op.kind)
		b.WriteString(op.line)
		if !strings.HasSuffix(op.line, "\n") {
			b.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange writes a hunk's range as diff -u does: "start,count", "start"
// for one line, and the line before the hunk for none.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", start-1)
	case 1:
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, count)
}

// splitLines splits s after each "\n"; a last line without one is kept.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffLines returns a shortest edit script that turns a into b: Myers'
// O(ND) algorithm in its linear-space form (the middle snake, then each
// half), so that two files of thousands of lines that differ everywhere
// take memory in proportion to their length, not its square. Lines found
// in only one of a and b are set aside first (they are deleted or
// inserted in every shortest script, as diff does), so that a file that
// changed on most of its lines is diffed in about the time of the lines
// they still share.
func diffLines(a, b []string) []diffOp {
	// Lines are compared as numbers: their index in lines.
	ids := map[string]int{}
	var inA, inB []bool
	number := func(lines []string, in *[]bool) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			n, ok := ids[l]
			if !ok {
				n = len(ids)
				ids[l] = n
				inA, inB = append(inA, false), append(inB, false)
			}
			(*in)[n] = true
			out[i] = n
		}
		return out
	}
	x, y := number(a, &inA), number(b, &inB)
	// The lines that can match, and where they are in a and b.
	var d differ
	for i, n := range x {
		if inB[n] {
			d.x, d.xAt = append(d.x, n), append(d.xAt, i)
		}
	}
	for j, n := range y {
		if inA[n] {
			d.y, d.yAt = append(d.y, n), append(d.yAt, j)
		}
	}
	d.match(0, len(d.x), 0, len(d.y))

	ops := make([]diffOp, 0, len(a)+len(b)-len(d.matches))
	i, j := 0, 0
	for _, m := range append(d.matches, [2]int{len(a), len(b)}) {
		for ; i < m[0]; i++ {
			ops = append(ops, diffOp{'-', a[i]})
		}
		for ; j < m[1]; j++ {
			ops = append(ops, diffOp{'+', b[j]})
		}
		if i < len(a) {
			ops = append(ops, diffOp{' ', a[i]})
			i, j = i+1, j+1
		}
	}
	return ops
}

// differ finds a longest common subsequence of x and y, whose elements
// are at xAt and yAt in the lines diffed.
type differ struct {
	x, y     []int
	xAt, yAt []int
	matches  [][2]int // the pairs of matching line indexes, in order
	// v1 and v2 are the furthest reaching paths, forwards and backwards,
	// reused from one call of middle to the next.
	v1, v2 []int
}

// match appends the matches of x[x0:x1] against y[y0:y1].
func (d *differ) match(x0, x1, y0, y1 int) {
	for x0 < x1 && y0 < y1 && d.x[x0] == d.y[y0] {
		d.matches = append(d.matches, [2]int{d.xAt[x0], d.yAt[y0]})
		x0, y0 = x0+1, y0+1
	}
	end := x1
	for x1 > x0 && y1 > y0 && d.x[x1-1] == d.y[y1-1] {
		x1, y1 = x1-1, y1-1
	}
	if x0 < x1 && y0 < y1 {
		if xm, ym, ok := d.middle(x0, x1, y0, y1); ok {
			d.match(x0, xm, y0, ym)
			d.match(xm, x1, ym, y1)
		}
	}
	for i := range end - x1 {
		d.matches = append(d.matches, [2]int{d.xAt[x1+i], d.yAt[y1+i]})
	}
}

// middle returns a point (xm, ym) on a shortest edit path from (x0, y0)
// to (x1, y1) where the furthest reaching paths from both ends meet (the
// end of the middle snake), or ok false when the ranges have no line in
// common. Both ranges are non-empty, and their first and last lines
// differ, so that both halves are smaller than the whole. This is the
// bisection of diff-match-patch (Fraser), after Myers (1986), 4b.
func (d *differ) middle(x0, x1, y0, y1 int) (xm, ym int, ok bool) {
	n, m := x1-x0, y1-y0
	maxD := (n + m + 1) / 2
	off, size := maxD, 2*maxD+2
	if cap(d.v1) < size {
		d.v1, d.v2 = make([]int, size), make([]int, size)
	}
	// v1[off+k] is the furthest x reached on diagonal k (x-y) from the
	// start; v2[off+k] the furthest reached from the end, counted back
	// from it.
	v1, v2 := d.v1[:size], d.v2[:size]
	for i := range v1 {
		v1[i], v2[i] = -1, -1
	}
	v1[off+1], v2[off+1] = 0, 0
	delta := n - m
	// With an odd delta the forward path meets the reverse one.
	front := delta%2 != 0
	// Diagonals that ran off the grid are not walked again.
	k1start, k1end, k2start, k2end := 0, 0, 0, 0
	for e := range maxD {
		for k := -e + k1start; k <= e-k1end; k += 2 {
			var x int
			if k == -e || (k != e && v1[off+k-1] < v1[off+k+1]) {
				x = v1[off+k+1]
			} else {
				x = v1[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && d.x[x0+x] == d.y[y0+y] {
				x, y = x+1, y+1
			}
			v1[off+k] = x
			switch {
			case x > n:
				k1end += 2
			case y > m:
				k1start += 2
			case front:
				if c := off + delta - k; c >= 0 && c < size && v2[c] != -1 && x >= n-v2[c] {
					return x0 + x, y0 + y, true
				}
			}
		}
		for k := -e + k2start; k <= e-k2end; k += 2 {
			var x int
			if k == -e || (k != e && v2[off+k-1] < v2[off+k+1]) {
				x = v2[off+k+1]
			} else {
				x = v2[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && d.x[x1-1-x] == d.y[y1-1-y] {
				x, y = x+1, y+1
			}
			v2[off+k] = x
			switch {
			case x > n:
				k2end += 2
			case y > m:
				k2start += 2
			case !front:
				if c := off + delta - k; c >= 0 && c < size && v1[c] != -1 && v1[c] >= n-x {
					x1 := v1[c]
					return x0 + x1, y0 + x1 - (c - off), true
				}
			}
		}
	}
	return 0, 0, false
}
