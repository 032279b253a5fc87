package compat

import (
	"strings"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file says which watchers of a bucket a key reaches at all: a
// watcher receives the keys under its scope values' prefixes (and a key
// equal to a prefix only where a kind's template equals that prefix),
// and a watcher of the whole bucket every key. What a watcher reports
// about a key it cannot read (UnknownKeyError, DataError) it reports only
// if the key reaches it; a watcher narrowed to a scope that no longer
// holds a kind's keys misses them without a report.

// scopeHolds reports whether a key of template w can be under a value of
// scope s of bucket b.
func scopeHolds(b *schema.Bucket, s *schema.Scope, w *schema.Template) bool {
	p := s.Prefix.Tokens
	if len(w.Tokens) < len(p) {
		return false
	}
	for i := range p {
		if !tokensMeet(w.Tokens[i], p[i]) {
			return false
		}
	}
	if len(w.Tokens) > len(p) {
		return true
	}
	for _, k := range b.Kinds {
		if k.Template.Raw == s.Prefix.Raw {
			return true // the key equal to the prefix is watched
		}
	}
	return false
}

// reach says which watchers of bucket b (readers, "old" or "new") see the
// keys of w that they cannot read, and which of those narrowed to the
// keys of was (the template the kind had for them) do not see them at
// all: "old watchers of the whole bucket or of scope VPC", and ""
// or "; old watchers narrowed by scope Routes do not see them at all, and
// report nothing".
func reach(readers string, b *schema.Bucket, w, was *schema.Template) (see, miss string) {
	var held, missed []string
	for _, s := range b.Scopes {
		switch {
		case scopeHolds(b, s, w):
			held = append(held, s.GoName)
		case scopeHolds(b, s, was):
			missed = append(missed, s.GoName)
		}
	}
	see = readers + " watchers of the whole bucket"
	if len(held) > 0 {
		see += " or of " + scopeList(held)
	}
	if len(missed) > 0 {
		miss = "; " + readers + " watchers narrowed by " + scopeList(missed) + " do not see them at all, and report nothing"
	}
	return see, miss
}

// scopeList is "scope A", "scope A or B", "scope A, B or C".
func scopeList(names []string) string {
	if len(names) == 1 {
		return "scope " + names[0]
	}
	return "scope " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
