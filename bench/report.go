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
	// Note qualifies a figure ("did not finish in 20s: rate so far").
	Note string `json:"note,omitempty"`
}

// reporter collects figures and prints them as they come: aligned text
// for people, or one JSON object per line with -json.
type reporter struct {
	out     io.Writer
	json    bool
	figures []figure
}

func (r *reporter) add(f figure) {
	r.figures = append(r.figures, f)
	if r.json {
		line, _ := json.Marshal(f)
		fmt.Fprintf(r.out, "%s\n", line)
		return
	}
	note := ""
	if f.Note != "" {
		note = "  (" + f.Note + ")"
	}
	fmt.Fprintf(r.out, "  %-44s %14s %-10s%s\n", f.Name, formatValue(f.Value), f.Unit, note)
}

// say prints a line of context in text mode only.
func (r *reporter) say(format string, args ...any) {
	if !r.json {
		fmt.Fprintf(r.out, format+"\n", args...)
	}
}

// value returns the figure named name, or NaN.
func (r *reporter) value(name string) float64 {
	for _, f := range r.figures {
		if f.Name == name {
			return f.Value
		}
	}
	return math.NaN()
}

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
