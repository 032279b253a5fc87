package schema

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// This file reads what a schema says about its own evolution: its revision
// (which version of the schema a bucket and a watcher were made from) and
// the breaking changes its author accepts on purpose (kvwatchgen -compat).
// The loader checks only their shape; which changes exist is the compat
// check's to say.

// Accept is one breaking change a schema's author accepts on purpose,
// written under compat: accept:, so that kvwatchgen -compat reports it as
// accepted instead of failing. The reason stays in the schema, beside the
// change, for the next reader.
type Accept struct {
	// Change is the change as -compat names it: a rule and what it is
	// about, such as "field-type Route.metric".
	Change string
	Reason string
	Pos    Pos
}

// maxRevision bounds revision: to what every platform's int holds, and far
// beyond any schema's life.
const maxRevision = 1<<31 - 1

// Fields of compat: and of one accepted change.
var (
	compatFields = []string{"accept"}
	acceptFields = []string{"change", "reason"}
)

// revision reads the top-level revision: a whole number, at least 1.
func (l *loader) revision(n *yaml.Node) int {
	v, ok := l.configInt(n, "revision", 1, maxRevision, "the schema's revision, raised with each change")
	if !ok {
		return 0
	}
	return int(v)
}

// compat reads the top-level compat: mapping.
func (l *loader) compat(n *yaml.Node) []*Accept {
	f := l.fields(n, "compat", compatFields)
	if f == nil || f["accept"] == nil {
		return nil
	}
	var out []*Accept
	for _, item := range l.sequence(f["accept"], "compat: accept") {
		af := l.fields(item, "an accepted change", acceptFields, "change", "reason")
		if af == nil {
			continue
		}
		a := &Accept{Pos: pos(item)}
		if c := af["change"]; c != nil {
			if v, ok := l.scalar(c, "change"); ok {
				a.Change = strings.Join(strings.Fields(v), " ")
				a.Pos = pos(c)
			}
		}
		if r := af["reason"]; r != nil {
			if v, ok := l.scalar(r, "reason"); ok {
				if strings.TrimSpace(v) == "" {
					l.add(pos(r), "reason is blank: say why the change is safe to accept")
				}
				a.Reason = strings.TrimSpace(v)
			}
		}
		if a.Change != "" && a.Reason != "" {
			out = append(out, a)
		}
	}
	return out
}
