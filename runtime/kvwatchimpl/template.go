package kvwatchimpl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/internal/keys"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// Template is a compiled key template such as "vpc.{vpc}.route.{route_id}":
// tokens separated by '.', each a literal or a parameter, in the grammar of
// internal/keys, which the schema follows too. Generated code compiles each
// kind's template once, into a package variable its key parser and its Kind
// share; the runtime classifies keys and builds subject filters with it
// without knowing the schema.
//
// A Template is immutable and safe for concurrent use.
type Template struct {
	raw    string
	tokens []keys.Token
	// index maps each token to its parameter's index in params, -1 for a
	// literal.
	index  []int
	params []string // parameter names in key order
}

// CompileTemplate parses a key template. A parameter is written {name} or
// {name:type}; matching is on token structure only, so the type is
// accepted and ignored here (generated key parsers check it).
func CompileTemplate(raw string) (*Template, error) {
	if raw == "" {
		return nil, fmt.Errorf("kvwatch: empty key template")
	}
	t := &Template{raw: raw, tokens: keys.SplitTemplate(raw)}
	if err := keys.CheckTemplate(t.tokens); err != nil {
		return nil, fmt.Errorf("kvwatch: template %q: %w", raw, err)
	}
	for _, tok := range t.tokens {
		if tok.IsParam() {
			t.index = append(t.index, len(t.params))
			t.params = append(t.params, tok.Param)
			continue
		}
		t.index = append(t.index, -1)
	}
	return t, nil
}

// MustTemplate compiles a template known to be valid, such as those the
// generator validated before emitting them. It panics on an invalid
// template.
func MustTemplate(raw string) *Template {
	t, err := CompileTemplate(raw)
	if err != nil {
		panic(err)
	}
	return t
}

// String returns the template as written.
func (t *Template) String() string { return t.raw }

// Params returns the parameter names in key order. The slice is shared:
// callers must not modify it.
func (t *Template) Params() []string { return t.params }

// Len returns the number of tokens.
func (t *Template) Len() int { return len(t.tokens) }

// IsPrefixOf reports whether t's tokens are the first tokens of u: equal
// literals, and parameters of the same name where u has parameters, as the
// schema requires of a scope and the templates it narrows (keys.IsPrefix).
func (t *Template) IsPrefixOf(u *Template) bool { return keys.IsPrefix(t.tokens, u.tokens) }

// Format returns the key with params, in key order, in place of the
// parameters. It checks nothing: the caller has checked each value.
func (t *Template) Format(params []string) string {
	var b strings.Builder
	for i, tok := range t.tokens {
		if i > 0 {
			b.WriteByte('.')
		}
		if tok.IsParam() {
			b.WriteString(params[t.index[i]])
		} else {
			b.WriteString(tok.Literal)
		}
	}
	return b.String()
}

// Match reports whether key has the template's shape: the same number of
// tokens, equal literals, and a valid token wherever the template has a
// parameter. It does not allocate.
func (t *Template) Match(key string) bool {
	return t.split(key, nil, false) == nil
}

// Split matches key against the template and stores parameter values, in
// key order, into params, which must have room for len(t.Params()) values.
// The values are substrings of key. The error, a *KeyMismatchError, says why
// a key does not match.
func (t *Template) Split(key string, params []string) error {
	if len(params) < len(t.params) {
		return fmt.Errorf("kvwatch: template %q needs %d parameters, got room for %d", t.raw, len(t.params), len(params))
	}
	return t.split(key, params, true)
}

// errNoMatch is returned by split when the caller did not ask for a reason,
// so that classifying a key against several templates does not allocate.
var errNoMatch = errors.New("kvwatch: key does not match template")

// split walks key and the template token by token. With explain false it
// returns errNoMatch on a mismatch; with explain true a *KeyMismatchError.
func (t *Template) split(key string, params []string, explain bool) error {
	fail := func(reason func() string) error {
		if !explain {
			return errNoMatch
		}
		return &kvwatch.KeyMismatchError{Key: key, Template: t.raw, Reason: reason()}
	}
	rest, more := key, true
	for i, tok := range t.tokens {
		if !more {
			return fail(func() string { return fmt.Sprintf("has %d tokens, want %d", i, len(t.tokens)) })
		}
		var part string
		part, rest, more = strings.Cut(rest, ".")
		if !tok.IsParam() {
			if part != tok.Literal {
				return fail(func() string { return fmt.Sprintf("token %d is %q, want %q", i+1, part, tok.Literal) })
			}
			continue
		}
		if !keys.IsToken(part) {
			return fail(func() string {
				return fmt.Sprintf("token %d (parameter %s) %v", i+1, tok.Param, keys.ValidToken(part))
			})
		}
		if params != nil {
			params[t.index[i]] = part
		}
	}
	if more {
		return fail(func() string { return fmt.Sprintf("has more than %d tokens", len(t.tokens)) })
	}
	return nil
}
