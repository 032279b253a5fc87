package schema

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	bucketFields = []string{"bucket", "name", "doc", "keys", "scopes", "config"}
	keyFields    = []string{"name", "key", "value", "codec", "indexes", "doc"}
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
		b, valid := l.bucket(item)
		if b == nil || b.Name == "" {
			continue
		}
		if prev := byName[b.Name]; prev != nil {
			l.add(b.Pos, "bucket %q is declared twice (first at line %d)", b.Name, prev.Pos.Line)
			continue
		}
		byName[b.Name] = b
		if valid {
			out = append(out, b)
		}
	}
	return out
}

// bucket reads one bucket. Its keys and scopes are checked even when its
// name is missing or bad; the bucket is then not valid, and left out of the
// model. It returns nil when n is not a mapping; Name is "" when the name
// is missing or not a single value.
func (l *loader) bucket(n *yaml.Node) (b *Bucket, valid bool) {
	f := l.fields(n, "a bucket", bucketFields, "bucket", "keys")
	if f == nil {
		return nil, false
	}
	b = &Bucket{Pos: pos(n), Doc: l.optionalString(f["doc"], "doc")}
	valid = f["bucket"] != nil // a missing one was reported by fields
	if n := f["bucket"]; n != nil {
		b.Pos = pos(n)
		name, ok := l.scalar(n, "bucket")
		b.Name = name
		switch {
		case !ok:
			valid = false
		case !bucketName.MatchString(name):
			l.add(b.Pos, "bucket name %q is not a valid NATS KV bucket name: use letters, digits, '_' and '-'", name)
			valid = false
		}
	}
	if n := f["name"]; n != nil {
		if v, ok := l.scalar(n, "name"); ok {
			if !isExported(v) {
				l.add(pos(n), "bucket name %q must be an exported Go identifier", v)
				valid = false
			}
			b.GoName = v
		} else {
			valid = false
		}
	} else if valid {
		// The Go name of a bad bucket name would only repeat its error.
		b.GoName = camelCase(b.Name)
		if !isExported(b.GoName) {
			l.add(b.Pos, "bucket %q does not make a Go name (%q): add name: with an exported Go identifier", b.Name, b.GoName)
			valid = false
		}
	}
	var keyed keyTemplates
	if n := f["keys"]; n != nil {
		b.Kinds, keyed = l.kinds(b, n)
	} else {
		keyed.partial = true
	}
	l.checkOverlaps(keyed.kinds)
	if n := f["scopes"]; n != nil {
		b.Scopes = l.scopes(b, keyed, n)
	}
	if n := f["config"]; n != nil {
		b.Config = l.bucketConfig(b, n)
	}
	return b, valid
}

// label names a bucket in messages: by its name, or by its line when it
// has none.
func (b *Bucket) label() string {
	if b.Name == "" {
		return fmt.Sprintf("at line %d", b.Pos.Line)
	}
	return b.Name
}

// keyTemplates are the kinds of a bucket whose key template is valid,
// whatever else is wrong with them: a kind with a bad value type still has
// a template that scopes can be a prefix of and other templates can
// overlap. partial is set when some kind has no valid template (or the
// bucket no keys list): a scope that matches none of kinds may match that
// one, and is not reported.
type keyTemplates struct {
	kinds   []*Kind
	partial bool
}

// kinds reads the "keys" list of a bucket. It returns the valid kinds, and
// the kinds with a valid key template.
func (l *loader) kinds(b *Bucket, n *yaml.Node) (valid []*Kind, keyed keyTemplates) {
	items := l.sequence(n, "keys")
	keyed.partial = len(items) == 0
	if items != nil && len(items) == 0 {
		l.add(pos(n), "bucket %s: keys is empty: declare at least one kind of entry", b.label())
	}
	byName := map[string]*Kind{}
	for _, item := range items {
		f := l.fields(item, "a key", keyFields, "name", "key", "value")
		if f == nil {
			continue
		}
		k := &Kind{Pos: pos(item), Doc: l.optionalString(f["doc"], "doc"), Codec: CodecJSON}
		ok := f["name"] != nil && f["key"] != nil && f["value"] != nil
		if n := f["name"]; n != nil {
			name, isScalar := l.scalar(n, "name")
			k.GoName, k.Pos = name, pos(n)
			switch {
			case !isScalar:
				ok = false
			case !isExported(name):
				l.add(pos(n), "key name %q must be an exported Go identifier (it names the kind: %sKey, %sEvent)", name, name, name)
				ok = false
			case byName[name] != nil:
				l.add(pos(n), "bucket %s: key name %q is used twice (first at line %d)", b.label(), name, byName[name].Pos.Line)
				ok = false
			default:
				byName[name] = k
			}
		}
		if n := f["key"]; n != nil {
			k.Template = l.template(n, "key template")
			ok = ok && k.Template != nil
		}
		if n := f["codec"]; n != nil {
			if c, isScalar := l.scalar(n, "codec"); isScalar {
				if !contains(codecs, c) {
					l.add(pos(n), "unknown codec %q: use json, string, bytes, text or binary%s", c, suggest(closest(c, codecs)))
					ok = false
				}
				k.Codec = Codec(c)
			}
		}
		if n := f["value"]; n != nil {
			if expr, isScalar := l.scalar(n, "value"); isScalar {
				k.Value = l.typeExpr(expr, pos(n))
			}
			if k.Value != nil {
				l.checkCodec(k, pos(n))
			}
			ok = ok && k.Value != nil
		}
		if n := f["indexes"]; n != nil {
			k.Indexes = l.indexes(k, n)
		}
		if k.Template != nil {
			keyed.kinds = append(keyed.kinds, k)
		} else {
			keyed.partial = true
		}
		if ok {
			valid = append(valid, k)
		}
	}
	return valid, keyed
}

// label names a kind in messages: by its name, or by its line when it has
// none.
func (k *Kind) label() string {
	if k.GoName == "" {
		return fmt.Sprintf("the key at line %d", k.Pos.Line)
	}
	return k.GoName
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
func (l *loader) checkOverlaps(kinds []*Kind) {
	for i, a := range kinds {
		for _, c := range kinds[i+1:] {
			if example, ok := overlap(a.Template, c.Template); ok {
				l.add(c.Template.Pos, "key template %q of %s can match the same keys as %q of %s (%d:%d), e.g. %q: make a literal token differ",
					c.Template.Raw, c.label(), a.Template.Raw, a.label(), a.Template.Pos.Line, a.Template.Pos.Col, example)
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
