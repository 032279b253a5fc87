package schema

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// scopes reads the "scopes" list of a bucket, checking prefixes against
// the bucket's key templates. A scope's name and prefix are checked independently:
// a scope with a missing or bad name still has its prefix checked, and is
// then left out.
func (l *loader) scopes(b *Bucket, keyed keyTemplates, n *yaml.Node) []*Scope {
	var out []*Scope
	byName := map[string]*Scope{}
	byPrefix := map[string]*Scope{}
	for _, item := range l.sequence(n, "scopes") {
		f := l.fields(item, "a scope", scopeFields, "name", "prefix")
		if f == nil {
			continue
		}
		s := &Scope{Pos: pos(item)}
		valid := f["name"] != nil && f["prefix"] != nil // missing ones were reported by fields
		if n := f["name"]; n != nil {
			name, ok := l.scalar(n, "name")
			s.GoName, s.Pos = name, pos(n)
			switch {
			case !ok:
				valid = false
			case !isExported(name):
				l.add(s.Pos, "scope name %q must be an exported Go identifier", name)
				valid = false
			case byName[name] != nil:
				l.add(s.Pos, "bucket %s: scope name %q is used twice (first at line %d)", b.label(), name, byName[name].Pos.Line)
				valid = false
			default:
				byName[name] = s
			}
		}
		if n := f["prefix"]; n != nil {
			s.Prefix = l.template(n, "scope prefix")
		}
		if s.Prefix == nil || !l.resolveScope(b, keyed, s) {
			continue
		}
		key := prefixShape(s.Prefix)
		if prev := byPrefix[key]; prev != nil {
			l.add(s.Prefix.Pos, "scopes %s and %s (line %d) have the same prefix %q", s.label(), prev.label(), prev.Pos.Line, s.Prefix.Raw)
			continue
		}
		byPrefix[key] = s
		if valid {
			out = append(out, s)
		}
	}
	return out
}

// label names a scope in messages: by its name, or by its line when it has
// none.
func (s *Scope) label() string {
	if s.GoName == "" {
		return fmt.Sprintf("at line %d", s.Pos.Line)
	}
	return s.GoName
}

// prefixShape is a prefix with parameter names and types erased.
func prefixShape(t *Template) string {
	parts := make([]string, len(t.Tokens))
	for i, tok := range t.Tokens {
		parts[i] = tok.Literal
		if tok.Param != nil {
			parts[i] = "{}"
		}
	}
	return strings.Join(parts, ".")
}

// resolveScope checks that the scope's prefix is a whole-token prefix of at
// least one key template, with the same parameter names there, and gives
// each scope parameter the type the templates give it.
func (l *loader) resolveScope(b *Bucket, keyed keyTemplates, s *Scope) bool {
	typeFrom := map[string]*Kind{} // parameter name -> kind that typed it
	matched := false
	for _, k := range keyed.kinds {
		if !isPrefix(s.Prefix, k.Template) {
			continue
		}
		matched = true
		for i, tok := range s.Prefix.Tokens {
			if tok.Param == nil {
				continue
			}
			want := k.Template.Tokens[i].Param.Type
			if prev, ok := typeFrom[tok.Param.Name]; ok {
				if tok.Param.Type != want {
					l.add(s.Prefix.Pos, "scope %s: parameter {%s} is %s in %s but %s in %s; a scope parameter needs one type",
						s.label(), tok.Param.Name, tok.Param.Type, prev.label(), want, k.label())
					return false
				}
				continue
			}
			if tok.Param.explicitType && tok.Param.Type != want {
				l.add(s.Prefix.Pos, "scope %s: parameter {%s:%s} disagrees with key template %q of %s, where it is %s",
					s.label(), tok.Param.Name, tok.Param.Type, k.Template.Raw, k.label(), want)
				return false
			}
			tok.Param.Type = want
			typeFrom[tok.Param.Name] = k
		}
	}
	if !matched {
		if keyed.partial {
			return false // it may be a prefix of a template that has an error
		}
		l.add(s.Prefix.Pos, "scope %s: prefix %q is not a whole-token prefix of any key template of bucket %s%s",
			s.label(), s.Prefix.Raw, b.label(), prefixHint(keyed.kinds, s.Prefix))
		return false
	}
	return true
}

// isPrefix reports whether p's tokens are the first tokens of t.
func isPrefix(p, t *Template) bool {
	if len(p.Tokens) > len(t.Tokens) {
		return false
	}
	for i, pt := range p.Tokens {
		if !tokenMatch(pt, t.Tokens[i]) {
			return false
		}
	}
	return true
}

// tokenMatch reports whether a prefix token stands for a template token:
// equal literals, or parameters of the same name.
func tokenMatch(pt, tt Token) bool {
	switch {
	case (pt.Param == nil) != (tt.Param == nil):
		return false
	case pt.Param == nil:
		return pt.Literal == tt.Literal
	}
	return pt.Param.Name == tt.Param.Name
}

// prefixHint explains a near miss: a template that matches the prefix up
// to a parameter named differently.
func prefixHint(kinds []*Kind, p *Template) string {
	for _, k := range kinds {
		t := k.Template
		if len(p.Tokens) > len(t.Tokens) {
			continue
		}
		for i, pt := range p.Tokens {
			tt := t.Tokens[i]
			if pt.Param != nil && tt.Param != nil && pt.Param.Name != tt.Param.Name {
				return fmt.Sprintf(" (token %d is {%s} there, in %q of %s)", i+1, tt.Param.Name, t.Raw, k.label())
			}
			if !tokenMatch(pt, tt) {
				break
			}
		}
	}
	var raws []string
	for _, k := range kinds {
		raws = append(raws, fmt.Sprintf("%q", k.Template.Raw))
	}
	return " (its templates: " + strings.Join(raws, ", ") + ")"
}
