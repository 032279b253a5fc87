package schema

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvwatchgen/kvwatchgen/internal/keys"
)

// The grammar's rules (charset, parameter names, canonical decimals) are
// internal/keys', which the runtime follows too; this file adds where
// each problem is and what to do about it.
var paramTypes = []string{string(ParamString), string(ParamInt), string(ParamUint)}

// template parses the key template (or scope prefix) in scalar node n.
// Errors point at the offending character when the scalar is on one line.
// It returns nil when the template is invalid.
func (l *loader) template(n *yaml.Node, what string) *Template {
	raw, ok := l.scalar(n, what)
	if !ok {
		return nil
	}
	at := func(offset int) Pos { return charPos(n, offset) }
	before := len(l.list)
	switch {
	case raw == "":
		l.add(pos(n), "%s is empty", what)
		return nil
	case strings.HasPrefix(raw, "."):
		l.add(at(0), "%s %q starts with '.'", what, raw)
	case strings.HasSuffix(raw, "."):
		l.add(at(len(raw)-1), "%s %q ends with '.'", what, raw)
	}
	t := &Template{Raw: raw, Pos: pos(n)}
	seen := map[string]bool{}
	offset := 0
	for i, tok := range strings.Split(raw, ".") {
		p := at(offset)
		offset += len(tok) + 1
		if tok == "" {
			if i > 0 && offset-1 < len(raw) { // leading/trailing dots were reported above
				l.add(p, "%s %q has an empty token (\"..\")", what, raw)
			}
			continue
		}
		if strings.HasPrefix(tok, "{") && strings.HasSuffix(tok, "}") {
			param := l.param(tok[1:len(tok)-1], fmt.Sprintf("%s %q", what, raw), p)
			if param == nil {
				continue
			}
			if seen[param.Name] {
				l.add(p, "%s %q uses parameter {%s} twice", what, raw, param.Name)
				continue
			}
			seen[param.Name] = true
			t.Tokens = append(t.Tokens, Token{Param: param})
			t.Params = append(t.Params, param)
			continue
		}
		switch {
		case strings.ContainsAny(tok, "*>"):
			l.add(p, "%s %q: token %q has a wildcard: '*' and '>' are subject wildcards, not key characters; a template names its variable parts {like_this}", what, raw, tok)
		case strings.ContainsAny(tok, "{}"):
			l.add(p, "%s %q: token %q: a parameter must be a whole token, written {name} or {name:type}", what, raw, tok)
		case !keys.IsToken(tok):
			l.add(p, "%s %q: token %q has characters outside the key charset %s", what, raw, tok, keys.Charset)
		default:
			t.Tokens = append(t.Tokens, Token{Literal: tok})
		}
	}
	if len(l.list) > before {
		return nil
	}
	return t
}

// param parses the inside of a {...} token.
func (l *loader) param(inner, what string, p Pos) *Param {
	name, typ, typed := strings.Cut(inner, ":")
	if !keys.IsParamName(name) {
		l.add(p, "%s: parameter name %q must be a letter or '_' followed by letters, digits or '_'", what, name)
		return nil
	}
	param := &Param{Name: name, GoName: camelCase(name), Type: ParamString}
	if typed {
		if !contains(paramTypes, typ) {
			l.add(p, "%s: parameter {%s} has unknown type %q: use string, int (int64) or uint (uint64)%s", what, inner, typ, suggest(closest(typ, paramTypes)))
			return nil
		}
		param.Type = ParamType(typ)
		param.explicitType = true
	}
	if !isExported(param.GoName) {
		l.add(p, "%s: parameter {%s} does not make a Go field name (%q); start it with a letter", what, name, param.GoName)
		return nil
	}
	return param
}

// charPos returns the position of the byte at offset inside scalar n, when
// it can be known: n on one line, plain or quoted (quotes shift by one).
func charPos(n *yaml.Node, offset int) Pos {
	p := pos(n)
	switch n.Style {
	case 0:
		p.Col += offset
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		if !strings.ContainsAny(n.Value, "\\'\"\n") {
			p.Col += offset + 1
		}
	}
	return p
}

// tokensCanBeEqual reports whether some key token is matched by both a and
// b: equal literals; a literal and a parameter whose type accepts it; or
// two parameters (every pair of parameter types shares a value: "0").
func tokensCanBeEqual(a, b Token) bool {
	switch {
	case a.Param == nil && b.Param == nil:
		return a.Literal == b.Literal
	case a.Param == nil:
		return paramAccepts(b.Param.Type, a.Literal)
	case b.Param == nil:
		return paramAccepts(a.Param.Type, b.Literal)
	}
	return true
}

// exampleToken returns a token matched by both a and b (tokensCanBeEqual).
func exampleToken(a, b Token) string {
	switch {
	case a.Param == nil:
		return a.Literal
	case b.Param == nil:
		return b.Literal
	case a.Param.Type != ParamString || b.Param.Type != ParamString:
		return "1"
	}
	return "x"
}

// paramAccepts reports whether a parameter of type t parses lit. Numbers
// are canonical decimal (no sign on uint, no '+', no leading zeros), the
// form generated String methods write, so that keys round-trip.
func paramAccepts(t ParamType, lit string) bool {
	switch t {
	case ParamInt:
		return canonicalInt(lit, true)
	case ParamUint:
		return canonicalInt(lit, false)
	}
	return true
}

// canonicalInt reports whether s is a canonical decimal integer that fits
// in 64 bits (signed when signed is set): what the runtime's parsers accept.
func canonicalInt(s string, signed bool) bool {
	if signed {
		_, err := keys.ParseInt(s)
		return err == nil
	}
	_, err := keys.ParseUint(s)
	return err == nil
}
