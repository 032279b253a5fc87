package live

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/internal/keys"
	"github.com/kvwatchgen/kvwatchgen/internal/live/interp"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// scopeSet is what -scope flags select of a bucket: the runtime's scopes
// (watch) and the key prefixes they cover (verify).
type scopeSet struct {
	all      bool
	values   kvwatchimpl.Scopes
	prefixes []string // keys equal to one, or under it
	text     []string // as given, for messages
}

// parseScopes reads -scope flags ("Name=v1,v2", a value of a scope with
// several parameters written a:b) for bucket t; none selects the whole
// bucket. Values are checked as the runtime checks them, so that no scope
// widens to other keys.
func parseScopes(t *target, flags []string) (scopeSet, error) {
	if len(flags) == 0 {
		return scopeSet{all: true, values: kvwatchimpl.Scopes{All: true}}, nil
	}
	scopes, err := t.Scopes()
	if err != nil {
		return scopeSet{}, err
	}
	var set scopeSet
	for _, f := range flags {
		name, list, _ := strings.Cut(f, "=")
		i := slices.IndexFunc(scopes, func(s interp.Scope) bool { return s.Schema.GoName == name })
		if i < 0 {
			return scopeSet{}, fmt.Errorf("-scope %q: bucket %s has no scope %s (its scopes: %s)", f, t.Schema.Name, name, t.ScopeNames())
		}
		s := scopes[i]
		params := s.Prefix.Params()
		if len(params) == 0 {
			set.values.Values = append(set.values.Values, kvwatchimpl.ScopeValue{Scope: i})
			set.prefixes = append(set.prefixes, s.Prefix.Format(nil))
			set.text = append(set.text, f)
			continue
		}
		if list == "" {
			return scopeSet{}, fmt.Errorf("-scope %q: want %s=v1,v2 (values of %s)", f, name, strings.Join(params, ":"))
		}
		for _, v := range strings.Split(list, ",") {
			parts := strings.Split(v, ":")
			if len(parts) != len(params) {
				return scopeSet{}, fmt.Errorf("-scope %s: value %q has %d parts, want %d (%s, joined by ':')", name, v, len(parts), len(params), strings.Join(params, ", "))
			}
			for j, p := range parts {
				if err := keys.ValidToken(p); err != nil {
					return scopeSet{}, fmt.Errorf("-scope %s: %s %q: %w", name, params[j], p, err)
				}
			}
			set.values.Values = append(set.values.Values, kvwatchimpl.ScopeValue{Scope: i, Params: parts})
			set.prefixes = append(set.prefixes, s.Prefix.Format(parts))
		}
		set.text = append(set.text, f)
	}
	return set, nil
}

// filters returns the subject filters of the set's keys in b.
func (set scopeSet) filters(b *liveBucket) []string {
	if set.all {
		return []string{b.prefix + ">"}
	}
	var out []string
	for _, p := range set.prefixes {
		out = append(out, b.prefix+p, b.prefix+p+".>")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// describe writes the set for messages.
func (set scopeSet) describe() string {
	if set.all {
		return "whole bucket"
	}
	return "scopes " + strings.Join(set.text, " ")
}
