package schema

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	bucketFields = []string{"bucket", "name", "doc", "keys", "scopes"}
	keyFields    = []string{"name", "key", "value", "codec", "doc"}
	scopeFields  = []string{"name", "prefix"}
	codecs       = []string{string(CodecJSON), string(CodecString), string(CodecBytes), string(CodecText), string(CodecBinary)}
	bucketName   = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// buckets reads the "buckets" list.
func (l *loader) buckets(n *yaml.Node) []*Bucket {
	items := l.sequence(n, "buckets")
	if items == nil {
		return nil
	}
	if len(items) == 0 {
		l.add(pos(n), "buckets is empty: declare at least one bucket")
	}
	var out []*Bucket
	byName := map[string]*Bucket{}
	for _, item := range items {
		b := l.bucket(item)
		if b == nil {
			continue
		}
		if prev := byName[b.Name]; prev != nil {
			l.add(b.Pos, "bucket %q is declared twice (first at line %d)", b.Name, prev.Pos.Line)
			continue
		}
		byName[b.Name] = b
		out = append(out, b)
	}
	return out
}

func (l *loader) bucket(n *yaml.Node) *Bucket {
	f := l.fields(n, "a bucket", bucketFields, "bucket", "keys")
	if f == nil || f["bucket"] == nil {
		return nil
	}
	name, ok := l.scalar(f["bucket"], "bucket")
	if !ok {
		return nil
	}
	b := &Bucket{Name: name, Pos: pos(f["bucket"]), Doc: l.optionalString(f["doc"], "doc")}
	if !bucketName.MatchString(name) {
		l.add(b.Pos, "bucket name %q is not a valid NATS KV bucket name: use letters, digits, '_' and '-'", name)
	}
	if n := f["name"]; n != nil {
		if v, ok := l.scalar(n, "name"); ok {
			if !isExported(v) {
				l.add(pos(n), "bucket name %q must be an exported Go identifier", v)
			}
			b.GoName = v
		}
	} else {
		b.GoName = camelCase(name)
		if !isExported(b.GoName) {
			l.add(b.Pos, "bucket %q does not make a Go name (%q): add name: with an exported Go identifier", name, b.GoName)
		}
	}
	if n := f["keys"]; n != nil {
		b.Kinds = l.kinds(b, n)
	}
	l.checkOverlaps(b)
	if n := f["scopes"]; n != nil {
		b.Scopes = l.scopes(b, n)
	}
	return b
}

// kinds reads the "keys" list of a bucket.
func (l *loader) kinds(b *Bucket, n *yaml.Node) []*Kind {
	items := l.sequence(n, "keys")
	if items != nil && len(items) == 0 {
		l.add(pos(n), "bucket %s: keys is empty: declare at least one kind of entry", b.Name)
	}
	var out []*Kind
	byName := map[string]*Kind{}
	for _, item := range items {
		f := l.fields(item, "a key", keyFields, "name", "key", "value")
		if f == nil {
			continue
		}
		k := &Kind{Pos: pos(item), Doc: l.optionalString(f["doc"], "doc"), Codec: CodecJSON}
		valid := f["name"] != nil && f["key"] != nil && f["value"] != nil
		if n := f["name"]; n != nil {
			k.GoName, _ = l.scalar(n, "name")
			k.Pos = pos(n)
			switch {
			case !isExported(k.GoName):
				l.add(pos(n), "key name %q must be an exported Go identifier (it names the kind: %sKey, %sEvent)", k.GoName, k.GoName, k.GoName)
				valid = false
			case byName[k.GoName] != nil:
				l.add(pos(n), "bucket %s: key name %q is used twice (first at line %d)", b.Name, k.GoName, byName[k.GoName].Pos.Line)
				valid = false
			}
		}
		if n := f["key"]; n != nil {
			k.Template = l.template(n, "key template")
			valid = valid && k.Template != nil
		}
		if n := f["codec"]; n != nil {
			if c, ok := l.scalar(n, "codec"); ok {
				if !contains(codecs, c) {
					l.add(pos(n), "unknown codec %q: use json, string, bytes, text or binary%s", c, didYouMean(c, codecs))
					valid = false
				}
				k.Codec = Codec(c)
			}
		}
		if n := f["value"]; n != nil {
			if expr, ok := l.scalar(n, "value"); ok {
				k.Value = l.typeExpr(expr, pos(n))
			}
			if k.Value != nil {
				l.checkCodec(k, pos(n))
			}
			valid = valid && k.Value != nil
		}
		if valid {
			byName[k.GoName] = k
			out = append(out, k)
		}
	}
	return out
}

// checkCodec reports a codec that cannot store the kind's value type.
func (l *loader) checkCodec(k *Kind, p Pos) {
	v := k.Value
	builtin := func(name string) bool { return v.Kind == TypeBuiltin && v.Builtin == name }
	switch k.Codec {
	case CodecString:
		if !builtin("string") {
			l.add(p, "codec string stores the value as raw text: the value type must be string, not %s", typeString(v))
		}
	case CodecBytes:
		if !builtin("bytes") {
			l.add(p, "codec bytes stores the value as raw bytes: the value type must be bytes, not %s", typeString(v))
		}
	case CodecText, CodecBinary:
		// time.Time implements both encodings; external types are checked by
		// the Go compiler against the runtime's constraint.
		if !builtin("time") && v.Kind != TypeExternal {
			what := map[Codec]string{CodecText: "encoding.TextMarshaler and TextUnmarshaler", CodecBinary: "encoding.BinaryMarshaler and BinaryUnmarshaler"}[k.Codec]
			l.add(p, "codec %s needs a value type implementing %s: time or an external \"import/path.Type\", not %s", k.Codec, what, typeString(v))
		}
	}
}

// typeString writes a TypeRef as a schema type expression.
func typeString(t *TypeRef) string {
	switch t.Kind {
	case TypeBuiltin:
		return t.Builtin
	case TypeSlice:
		return "[]" + typeString(t.Elem)
	case TypeMap:
		return "map[string]" + typeString(t.Elem)
	case TypeNamed:
		return t.Named.Name
	case TypeExternal:
		return t.ImportPath + "." + t.Name
	}
	return "?"
}

// checkOverlaps reports pairs of key templates of one bucket that can match
// the same key: a key must belong to exactly one kind.
func (l *loader) checkOverlaps(b *Bucket) {
	for i, a := range b.Kinds {
		for _, c := range b.Kinds[i+1:] {
			if example, ok := overlap(a.Template, c.Template); ok {
				l.add(c.Template.Pos, "key template %q of %s can match the same keys as %q of %s (%d:%d), e.g. %q: make a literal token differ",
					c.Template.Raw, c.GoName, a.Template.Raw, a.GoName, a.Template.Pos.Line, a.Template.Pos.Col, example)
			}
		}
	}
}

// overlap reports whether some key matches both templates, with one such
// key.
func overlap(a, b *Template) (string, bool) {
	if len(a.Tokens) != len(b.Tokens) {
		return "", false
	}
	example := make([]string, len(a.Tokens))
	for i := range a.Tokens {
		if !tokensCanBeEqual(a.Tokens[i], b.Tokens[i]) {
			return "", false
		}
		example[i] = exampleToken(a.Tokens[i], b.Tokens[i])
	}
	return strings.Join(example, "."), true
}

// scopes reads the "scopes" list of a bucket.
func (l *loader) scopes(b *Bucket, n *yaml.Node) []*Scope {
	var out []*Scope
	byName := map[string]*Scope{}
	byPrefix := map[string]*Scope{}
	for _, item := range l.sequence(n, "scopes") {
		f := l.fields(item, "a scope", scopeFields, "name", "prefix")
		if f == nil || f["name"] == nil || f["prefix"] == nil {
			continue
		}
		name, ok := l.scalar(f["name"], "name")
		if !ok {
			continue
		}
		s := &Scope{GoName: name, Pos: pos(f["name"])}
		switch {
		case !isExported(name):
			l.add(s.Pos, "scope name %q must be an exported Go identifier", name)
			continue
		case byName[name] != nil:
			l.add(s.Pos, "bucket %s: scope name %q is used twice (first at line %d)", b.Name, name, byName[name].Pos.Line)
			continue
		}
		byName[name] = s
		if s.Prefix = l.template(f["prefix"], "scope prefix"); s.Prefix == nil {
			continue
		}
		if !l.resolveScope(b, s) {
			continue
		}
		key := prefixShape(s.Prefix)
		if prev := byPrefix[key]; prev != nil {
			l.add(s.Prefix.Pos, "scopes %s and %s (line %d) have the same prefix %q", name, prev.GoName, prev.Pos.Line, s.Prefix.Raw)
			continue
		}
		byPrefix[key] = s
		out = append(out, s)
	}
	return out
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
func (l *loader) resolveScope(b *Bucket, s *Scope) bool {
	typeFrom := map[string]*Kind{} // parameter name -> kind that typed it
	for _, k := range b.Kinds {
		if !isPrefix(s.Prefix, k.Template) {
			continue
		}
		if len(k.Template.Tokens) == len(s.Prefix.Tokens) {
			s.Exact = true
		} else {
			s.Deeper = true
		}
		for i, tok := range s.Prefix.Tokens {
			if tok.Param == nil {
				continue
			}
			want := k.Template.Tokens[i].Param.Type
			if prev, ok := typeFrom[tok.Param.Name]; ok {
				if tok.Param.Type != want {
					l.add(s.Prefix.Pos, "scope %s: parameter {%s} is %s in %s but %s in %s; a scope parameter needs one type",
						s.GoName, tok.Param.Name, tok.Param.Type, prev.GoName, want, k.GoName)
					return false
				}
				continue
			}
			if tok.Param.explicitType && tok.Param.Type != want {
				l.add(s.Prefix.Pos, "scope %s: parameter {%s:%s} disagrees with key template %q of %s, where it is %s",
					s.GoName, tok.Param.Name, tok.Param.Type, k.Template.Raw, k.GoName, want)
				return false
			}
			tok.Param.Type = want
			typeFrom[tok.Param.Name] = k
		}
	}
	if !s.Exact && !s.Deeper {
		l.add(s.Prefix.Pos, "scope %s: prefix %q is not a whole-token prefix of any key template of bucket %s%s",
			s.GoName, s.Prefix.Raw, b.Name, prefixHint(b, s.Prefix))
		return false
	}
	return true
}

// isPrefix reports whether p's tokens are the first tokens of t: equal
// literals, and parameters of the same name where t has parameters.
func isPrefix(p, t *Template) bool {
	if len(p.Tokens) > len(t.Tokens) {
		return false
	}
	for i, pt := range p.Tokens {
		tt := t.Tokens[i]
		switch {
		case (pt.Param == nil) != (tt.Param == nil):
			return false
		case pt.Param == nil && pt.Literal != tt.Literal:
			return false
		case pt.Param != nil && pt.Param.Name != tt.Param.Name:
			return false
		}
	}
	return true
}

// prefixHint explains a near miss: a template with the same shape whose
// parameter is named differently.
func prefixHint(b *Bucket, p *Template) string {
	for _, k := range b.Kinds {
		t := k.Template
		if len(p.Tokens) > len(t.Tokens) {
			continue
		}
		for i, pt := range p.Tokens {
			tt := t.Tokens[i]
			if pt.Param != nil && tt.Param != nil && pt.Param.Name != tt.Param.Name {
				return fmt.Sprintf(" (token %d is {%s} there, in %q of %s)", i+1, tt.Param.Name, t.Raw, k.GoName)
			}
			if (pt.Param == nil) != (tt.Param == nil) || (pt.Param == nil && pt.Literal != tt.Literal) {
				break
			}
		}
	}
	var raws []string
	for _, k := range b.Kinds {
		raws = append(raws, fmt.Sprintf("%q", k.Template.Raw))
	}
	return " (its templates: " + strings.Join(raws, ", ") + ")"
}
