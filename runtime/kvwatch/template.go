package kvwatch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/internal/keys"
)

// For generated code. Template is a compiled key template such as "vpc.{vpc}.route.{route_id}":
// tokens separated by '.', each a literal or a parameter, in the grammar of
// internal/keys, which the schema follows too. The generator has validated
// the templates it emits; the runtime compiles them again so that it can
// classify keys and build subject filters without knowing the schema.
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

// compileTemplate parses a key template. A parameter is written {name} or
// {name:type}; the runtime matches on token structure only, so the type is
// accepted and ignored here (generated key parsers check it).
func compileTemplate(raw string) (*Template, error) {
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

// For generated code. MustTemplate compiles a template known to be valid, such as those in
// generated code. It panics on an invalid template.
func MustTemplate(raw string) *Template {
	t, err := compileTemplate(raw)
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
		return &KeyMismatchError{Key: key, Template: t.raw, Reason: reason()}
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

// KeyMismatchError says why a key does not match a key template.
type KeyMismatchError struct {
	Key      string // the key as given
	Template string // the template it was matched against
	Reason   string // what differs
}

func (e *KeyMismatchError) Error() string {
	return fmt.Sprintf("key %q does not match template %q: %s", e.Key, e.Template, e.Reason)
}
