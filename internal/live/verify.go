package live

import (
	"context"
	"fmt"

	"github.com/kvwatchgen/kvwatchgen/internal/live/interp"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is kvwatchgen verify: every current entry of each bucket (or
// of the -scope flags' keys) checked through the schema. Problems are
// written as they are found, one line each; a summary per bucket follows.

// The kinds of problem verify reports.
const (
	problemUnknownKey = "unknown key" // a key that matches no template
	problemBadKey     = "bad key"     // a key of a kind's shape whose typed parameter does not parse
	problemBadValue   = "bad value"   // a value that does not decode
)

// problem is one entry that does not fit the schema (a JSON line of
// -json, "type": "problem").
type problem struct {
	Type     string `json:"type"`
	Bucket   string `json:"bucket"`
	Key      string `json:"key"`
	Revision uint64 `json:"revision"`
	Kind     string `json:"kind,omitempty"` // "" for an unknown key
	Problem  string `json:"problem"`
	Error    string `json:"error"`
}

// kindCount is one row of a bucket's summary.
type kindCount struct {
	Kind     string `json:"kind"` // "" for keys that match no template
	Template string `json:"template,omitempty"`
	Entries  int    `json:"entries"`
	Problems int    `json:"problems"`
	// Checked is how completely values were checked (interp.Coverage):
	// full, json-only or unchecked; Unchecked names the types that were
	// not (fully) checked.
	Checked   string   `json:"checked,omitempty"`
	Unchecked []string `json:"unchecked_types,omitempty"`
}

// summary is verify's result for one bucket ("type": "summary").
type summary struct {
	Type     string      `json:"type"`
	Bucket   string      `json:"bucket"`
	Live     string      `json:"live_bucket"`
	Revision uint64      `json:"revision"` // the read is exact as of it
	Scope    string      `json:"scope"`
	Entries  int         `json:"entries"`
	Problems int         `json:"problems"`
	Kinds    []kindCount `json:"kinds"`
}

func runVerify(ctx context.Context, o *options) int {
	sets := make([]scopeSet, len(o.buckets))
	for i, t := range o.buckets {
		var err error
		if sets[i], err = parseScopes(t, o.scopes); err != nil {
			return o.fail(ExitUsage, err)
		}
	}
	s, err := connect(o, "verify")
	if err != nil {
		return o.fail(ExitUsage, err)
	}
	defer s.close()
	bad := false
	for i, t := range o.buckets {
		sum, err := verifyBucket(ctx, s, o, t, sets[i])
		if err != nil {
			return o.fail(ExitUsage, err)
		}
		writeSummary(o, sum)
		bad = bad || sum.Problems > 0
	}
	if bad {
		return ExitError
	}
	return ExitOK
}

// verifyBucket checks the entries of t within set, writing each problem.
func verifyBucket(ctx context.Context, s *session, o *options, t *target, set scopeSet) (*summary, error) {
	b, err := s.openBucket(ctx, t.live)
	if err != nil {
		return nil, err
	}
	sum := &summary{Type: "summary", Bucket: t.Schema.Name, Live: t.live, Scope: set.describe()}
	counts := map[*interp.Kind]*kindCount{}
	for _, k := range t.Kinds {
		c := &kindCount{Kind: k.Name(), Template: k.Template.String(), Checked: k.Coverage().String(), Unchecked: k.Unknown()}
		counts[k] = c
		sum.Kinds = append(sum.Kinds, *c)
	}
	unknown := &kindCount{}
	prog := newProgress(o.env, "verify "+t.live)
	defer prog.clear()
	report := func(e entry, kind *interp.Kind, what string, err error) {
		prog.clear()
		p := problem{Type: "problem", Bucket: t.live, Key: e.Key, Revision: e.Revision, Problem: what, Error: err.Error()}
		if kind != nil {
			p.Kind = kind.Name()
		}
		writeProblem(o, p)
	}
	sum.Revision, err = s.readState(ctx, b, set.filters(b), prog.update, func(e entry) error {
		if e.Op != kvwatch.OpPut {
			return nil // a deleted key is no entry
		}
		sum.Entries++
		kind, _, err := t.Classify(e.Key)
		switch {
		case kind == nil:
			unknown.Entries++
			unknown.Problems++
			report(e, nil, problemUnknownKey, fmt.Errorf("matches no key template of bucket %s", t.Schema.Name))
			return nil
		case err != nil:
			counts[kind].Problems++
			report(e, kind, problemBadKey, err)
		default:
			if _, err := kind.Decode(e.Data); err != nil {
				counts[kind].Problems++
				report(e, kind, problemBadValue, err)
			}
		}
		counts[kind].Entries++
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, k := range t.Kinds {
		sum.Kinds[i] = *counts[k]
		sum.Problems += counts[k].Problems
	}
	if unknown.Entries > 0 {
		sum.Kinds = append(sum.Kinds, *unknown)
		sum.Problems += unknown.Problems
	}
	return sum, nil
}

func writeProblem(o *options, p problem) {
	if o.json {
		writeJSONLine(o.env.Stdout, p)
		return
	}
	kind := p.Kind
	if kind == "" {
		kind = "(no kind)"
	}
	fmt.Fprintf(o.env.Stdout, "%s %s rev %d %s: %s: %s\n", p.Bucket, p.Key, p.Revision, kind, p.Problem, p.Error)
}

func writeSummary(o *options, sum *summary) {
	if o.json {
		writeJSONLine(o.env.Stdout, sum)
		return
	}
	w := o.env.Stdout
	fmt.Fprintf(w, "bucket %s", sum.Bucket)
	if sum.Live != sum.Bucket {
		fmt.Fprintf(w, " (live bucket %s)", sum.Live)
	}
	fmt.Fprintf(w, ", %s, as of revision %d: %s, %s\n", sum.Scope, sum.Revision, plural(sum.Entries, "entry", "entries"), plural(sum.Problems, "problem", "problems"))
	tw := newTable(w)
	fmt.Fprintln(tw, "  KIND\tENTRIES\tPROBLEMS\tCHECKED")
	for _, k := range sum.Kinds {
		name, checked := k.Kind, k.Checked
		if name == "" {
			name, checked = "(no kind)", "-"
		}
		if len(k.Unchecked) > 0 {
			checked += fmt.Sprintf(" (not checked: %v)", k.Unchecked)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%s\n", name, k.Entries, k.Problems, checked)
	}
	tw.Flush()
}
