package compat

import (
	"math"
	"strconv"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/internal/keys"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file compares key templates the way the runtime reads keys, in two
// steps: a watcher gives a key to the kind whose template has its shape
// (as many tokens, each literal equal; a parameter takes any token), and
// that kind's parser then reads each parameter: a string any token, an int
// or uint only a canonical decimal that fits (no '+', no leading zero, no
// "-0"), the form writers write. A key of no kind's shape is an unknown
// key (UnknownKeyError); a key of a kind's shape whose parameter does not
// parse is that kind's data error (DataError).

// tokenReads reports whether a parser expecting r reads every token a
// writer of w writes.
func tokenReads(w, r schema.Token) bool {
	switch {
	case r.Param == nil:
		return w.Param == nil && w.Literal == r.Literal
	case w.Param == nil:
		return paramReads(r.Param.Type, w.Literal)
	case r.Param.Type == schema.ParamString:
		return true
	}
	return w.Param.Type == r.Param.Type
}

// paramReads reports whether a parameter of type t reads the literal lit.
func paramReads(t schema.ParamType, lit string) bool {
	var err error
	switch t {
	case schema.ParamInt:
		_, err = keys.ParseInt(lit)
	case schema.ParamUint:
		_, err = keys.ParseUint(lit)
	}
	return err == nil
}

// tokensMeet reports whether some token is written by a and read by b
// alike.
func tokensMeet(a, b schema.Token) bool {
	switch {
	case a.Param == nil && b.Param == nil:
		return a.Literal == b.Literal
	case a.Param == nil:
		return paramReads(b.Param.Type, a.Literal)
	case b.Param == nil:
		return paramReads(a.Param.Type, b.Literal)
	}
	return true // any two parameter types share "1"
}

// templateReads reports whether a parser of template r reads every key a
// writer of template w writes.
func templateReads(w, r *schema.Template) bool {
	if len(w.Tokens) != len(r.Tokens) {
		return false
	}
	for i := range w.Tokens {
		if !tokenReads(w.Tokens[i], r.Tokens[i]) {
			return false
		}
	}
	return true
}

// shapeReads reports whether the runtime gives every key a writer of w
// writes to a reader's kind of template r: each literal of r is the same
// literal of w.
func shapeReads(w, r *schema.Template) bool {
	if len(w.Tokens) != len(r.Tokens) {
		return false
	}
	for i, t := range r.Tokens {
		if t.Param == nil && (w.Tokens[i].Param != nil || w.Tokens[i].Literal != t.Literal) {
			return false
		}
	}
	return true
}

// shapesMeet reports whether some key has the shape of both templates:
// the runtime of one version gives a key of the other's kind to it.
func shapesMeet(a, b *schema.Template) bool {
	if len(a.Tokens) != len(b.Tokens) {
		return false
	}
	for i, t := range a.Tokens {
		if u := b.Tokens[i]; t.Param == nil && u.Param == nil && t.Literal != u.Literal {
			return false
		}
	}
	return true
}

// templatesMeet reports whether some key matches both templates.
func templatesMeet(a, b *schema.Template) bool {
	if len(a.Tokens) != len(b.Tokens) {
		return false
	}
	for i := range a.Tokens {
		if !tokensMeet(a.Tokens[i], b.Tokens[i]) {
			return false
		}
	}
	return true
}

// unreadKey is a key a writer of w writes that a parser of r does not
// read (w does not read into r), for messages: each parameter of w takes
// a value r's token at its place refuses where there is one.
func unreadKey(w, r *schema.Template) string {
	parts := make([]string, len(w.Tokens))
	for i, t := range w.Tokens {
		if t.Param == nil {
			parts[i] = t.Literal
			continue
		}
		var rt *schema.Token
		if len(r.Tokens) == len(w.Tokens) {
			rt = &r.Tokens[i]
		}
		parts[i] = sampleToken(t.Param.Type, rt)
	}
	return strings.Join(parts, ".")
}

// sampleToken is a value of a parameter of type t that r refuses, if
// there is one, else a plain one.
func sampleToken(t schema.ParamType, r *schema.Token) string {
	var candidates []string
	switch t {
	case schema.ParamString:
		candidates = []string{"a"}
	case schema.ParamInt:
		candidates = []string{"-1", "7"}
	case schema.ParamUint:
		candidates = []string{strconv.FormatUint(math.MaxUint64, 10), "7"}
	}
	if r != nil {
		for _, c := range candidates {
			if !tokenReads(schema.Token{Literal: c}, *r) {
				return c
			}
		}
		if r.Param == nil && (t == schema.ParamString || paramReads(t, "x")) {
			return "x" + r.Literal // any value but the literal
		}
	}
	return candidates[len(candidates)-1]
}

// sharedKey is a key both templates match (they meet), for messages.
func sharedKey(a, b *schema.Template) string {
	parts := make([]string, len(a.Tokens))
	for i, t := range a.Tokens {
		switch o := b.Tokens[i]; {
		case t.Param == nil:
			parts[i] = t.Literal
		case o.Param == nil:
			parts[i] = o.Literal
		case t.Param.Type == schema.ParamString && o.Param.Type == schema.ParamString:
			parts[i] = "a"
		default:
			parts[i] = "7"
		}
	}
	return strings.Join(parts, ".")
}

// keyFields are the key struct's fields a template generates, as "Name
// type" in key order, for the Go API check.
func keyFields(t *schema.Template) string {
	var parts []string
	for _, p := range t.Params {
		parts = append(parts, p.GoName+" "+goParamType(p.Type))
	}
	return "{" + strings.Join(parts, "; ") + "}"
}

// lostKeyFields are the fields of o's key struct that n's lacks or types
// otherwise: what breaks code using the key struct (a field added breaks
// only unkeyed literals, which Go's compatibility rules leave out).
func lostKeyFields(o, n *schema.Template) []string {
	var lost []string
	for _, op := range o.Params {
		found := false
		for _, np := range n.Params {
			found = found || np.GoName == op.GoName && np.Type == op.Type
		}
		if !found {
			lost = append(lost, op.GoName+" "+goParamType(op.Type))
		}
	}
	return lost
}

func goParamType(t schema.ParamType) string {
	switch t {
	case schema.ParamInt:
		return "int64"
	case schema.ParamUint:
		return "uint64"
	}
	return "string"
}
