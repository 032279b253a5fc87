package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
)

// figure is one measured number.
type figure struct {
	Scenario string  `json:"scenario"`
	Name     string  `json:"name"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	// Note qualifies a figure ("did not finish in 15s: 41200 entries").
	Note string `json:"note,omitempty"`
}

// reporter prints figures as they come: aligned text for people, or one
// JSON object per line with -json.
type reporter struct {
	out  io.Writer
	json bool
}

// add prints f.
func (r *reporter) add(f figure) {
	if r.json {
		line, _ := json.Marshal(f)
		fmt.Fprintf(r.out, "%s\n", line)
		return
	}
	note := ""
	if f.Note != "" {
		note = "  (" + f.Note + ")"
	}
	fmt.Fprintf(r.out, "  %-52s %14s %-10s%s\n", f.Name, formatValue(f.Value), f.Unit, note)
}

// say prints a line of context in text mode only.
func (r *reporter) say(format string, args ...any) {
	if !r.json {
		fmt.Fprintf(r.out, format+"\n", args...)
	}
}

// formatValue writes v for people: "-" for NaN; whole numbers, and any
// number from 100 up, rounded and grouped in thousands; others with 2
// decimals (3 below 1).
func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return groupThousands(fmt.Sprintf("%.0f", v))
	case math.Abs(v) >= 100:
		return groupThousands(fmt.Sprintf("%.0f", v))
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// groupThousands writes 1234567 as 1,234,567.
func groupThousands(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
