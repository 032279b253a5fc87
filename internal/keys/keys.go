// Package keys is the grammar of NATS KV keys and key templates, shared by
// the schema loader and the runtime so that what one accepts the other
// does: the token charset, parameter names, the canonical decimal form of
// typed parameters, and when a scope's prefix is a prefix of a template.
//
// A key is tokens separated by '.'; a template's tokens are literals or
// parameters written {name} or {name:type}.
package keys

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Charset is the key charset of one token, as messages name it.
const Charset = "[-/_=A-Za-z0-9]"

// IsTokenByte reports whether b may appear inside one token: the key
// charset [-/_=.A-Za-z0-9] without the token separator '.'.
func IsTokenByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	case b == '-', b == '/', b == '_', b == '=':
		return true
	}
	return false
}

// IsToken is ValidToken without the reason: it does not allocate.
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !IsTokenByte(s[i]) {
			return false
		}
	}
	return true
}

// ValidToken reports why s cannot be one token of a key, or nil when it
// can: non-empty and of the charset only. The reasons are specific because
// a token that is not rejected becomes part of a subject filter: "*" and
// ">" would widen a scoped watch to other tenants' keys, and "." would
// shift every token after it.
func ValidToken(s string) error {
	if s == "" {
		return ErrEmptyToken
	}
	for i := 0; i < len(s); {
		b := s[i]
		if IsTokenByte(b) {
			i++
			continue
		}
		r, _ := utf8.DecodeRuneInString(s[i:])
		switch {
		case b == '.':
			return fmt.Errorf("contains %q at byte %d: a value is one token and cannot contain the token separator", '.', i)
		case b == '*' || b == '>':
			return fmt.Errorf("contains the subject wildcard %q at byte %d", rune(b), i)
		case unicode.IsSpace(r):
			return fmt.Errorf("contains whitespace %q at byte %d", r, i)
		default:
			return fmt.Errorf("contains %q at byte %d, outside the key charset %s", r, i, Charset)
		}
	}
	return nil
}

// ErrEmptyToken is ValidToken's reason for an empty token.
var ErrEmptyToken = errors.New("is empty")

// IsParamName reports whether s names a template parameter: a letter or
// '_', then letters, digits and '_' (it becomes a Go field name).
func IsParamName(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		switch {
		case b == '_', 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z':
		case '0' <= b && b <= '9' && i > 0:
		default:
			return false
		}
	}
	return s != ""
}

// Typed parameters are written in canonical decimal: no '+', no leading
// zeros, no "-0". Parsing accepts only that form, so that a key and its
// typed struct map one to one.

// ParseInt parses a canonical decimal int64 token.
func ParseInt(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an int64: %w", s, errors.Unwrap(err))
	}
	if !canonical(s, true) {
		return 0, fmt.Errorf("%q is not in canonical form (want %q)", s, strconv.FormatInt(v, 10))
	}
	return v, nil
}

// ParseUint parses a canonical decimal uint64 token.
func ParseUint(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a uint64: %w", s, errors.Unwrap(err))
	}
	if !canonical(s, false) {
		return 0, fmt.Errorf("%q is not in canonical form (want %q)", s, strconv.FormatUint(v, 10))
	}
	return v, nil
}

// canonical reports whether s, which strconv parsed, is written as
// FormatInt/FormatUint would write it: no '+', no leading zero, no "-0".
// It does not allocate (formatting the number back would).
func canonical(s string, signed bool) bool {
	if signed && len(s) > 1 && s[0] == '-' {
		s = s[1:]
		if s == "0" {
			return false
		}
	}
	return s != "" && s[0] != '+' && (s[0] != '0' || len(s) == 1)
}

// Token is one token of a template: a literal, or a parameter (Param set,
// with its Type as written after ':', "" when none).
type Token struct {
	Literal     string
	Param, Type string
}

// IsParam reports whether t is a parameter.
func (t Token) IsParam() bool { return t.Param != "" }

// SplitTemplate cuts a template into its tokens: "{name}" and
// "{name:type}" are parameters, anything else a literal. It checks
// nothing: the schema reports each problem where it is, the runtime with
// CheckTemplate.
func SplitTemplate(raw string) []Token {
	var out []Token
	start := 0
	for i := 0; i <= len(raw); i++ {
		if i < len(raw) && raw[i] != '.' {
			continue
		}
		tok := raw[start:i]
		start = i + 1
		if len(tok) >= 2 && tok[0] == '{' && tok[len(tok)-1] == '}' {
			name, typ := tok[1:len(tok)-1], ""
			for j := 0; j < len(name); j++ {
				if name[j] == ':' {
					name, typ = name[:j], name[j+1:]
					break
				}
			}
			out = append(out, Token{Param: name, Type: typ})
			continue
		}
		out = append(out, Token{Literal: tok})
	}
	return out
}

// CheckTemplate reports the first problem of a template's tokens, or nil:
// each literal a valid token, each parameter a valid name.
func CheckTemplate(tokens []Token) error {
	for i, t := range tokens {
		switch {
		case t.IsParam() && !IsParamName(t.Param):
			return fmt.Errorf("token %d: parameter name %q is not a letter or '_' then letters, digits and '_'", i+1, t.Param)
		case t.Param == "" && t.Type != "":
			return fmt.Errorf("token %d: empty parameter name", i+1)
		case !t.IsParam():
			if err := ValidToken(t.Literal); err != nil {
				return fmt.Errorf("token %d %q %w", i+1, t.Literal, err)
			}
		}
	}
	return nil
}

// IsPrefix reports whether prefix's tokens are the first tokens of
// template: equal literals, and parameters of the same name where the
// template has parameters (a scope names the parameters it shares with
// the templates it narrows).
func IsPrefix(prefix, template []Token) bool {
	if len(prefix) > len(template) {
		return false
	}
	for i, p := range prefix {
		t := template[i]
		if p.IsParam() != t.IsParam() || p.Literal != t.Literal || p.Param != t.Param {
			return false
		}
	}
	return true
}
