package schema

import (
	"cmp"
	"go/token"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Fields of a type declaration.
var typeFields = []string{"doc", "fields"}

// typeDecls reads the "types" mapping: name -> {doc, fields}. Types are
// declared first so that fields and kinds can refer to any of them; the
// result is sorted by name. A declaration with a bad or duplicate name is
// checked all the same but left out; references to a badly named type are
// not reported again.
func (l *loader) typeDecls(n *yaml.Node) []*Type {
	l.types = map[string]*Type{}
	l.brokenTypes = map[string]bool{}
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		l.add(pos(n), "types must be a mapping of type name to declaration, not %s", describe(n))
		return nil
	}
	type decl struct {
		t     *Type
		body  *yaml.Node
		valid bool
	}
	var decls []decl
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolveAlias(n.Content[i+1])
		name := k.Value
		t := &Type{Name: name, Pos: pos(k)}
		switch {
		case !isExported(name):
			l.add(pos(k), "type name %q must be an exported Go identifier (start with an upper-case letter)", name)
			l.brokenTypes[name] = true
			decls = append(decls, decl{t, v, false})
		case l.types[name] != nil:
			l.add(pos(k), "type %q is declared twice (first at line %d)", name, l.types[name].Pos.Line)
			decls = append(decls, decl{t, v, false})
		default:
			l.types[name] = t
			decls = append(decls, decl{t, v, true})
		}
	}
	for _, d := range decls {
		f := l.fields(d.body, "type "+d.t.Name, typeFields, "fields")
		if f == nil {
			continue
		}
		d.t.Doc = l.optionalString(f["doc"], "doc")
		if fields := f["fields"]; fields != nil {
			d.t.Fields = l.structFields(d.t, fields)
		}
	}
	out := make([]*Type, 0, len(decls))
	for _, d := range decls {
		if d.valid {
			out = append(out, d.t)
		}
	}
	l.checkTypeCycles(out)
	markNeedsClone(out)
	slices.SortFunc(out, func(a, b *Type) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// markNeedsClone sets Type.NeedsClone, visiting each type once: a chain of
// types each holding the next twice is linear, not exponential, to walk.
// It terminates on types that contain themselves by value (reported by
// checkTypeCycles), with an answer that does not matter.
func markNeedsClone(types []*Type) {
	visited := map[*Type]bool{}
	var visit func(t *Type) bool
	visit = func(t *Type) bool {
		if visited[t] {
			return t.NeedsClone
		}
		visited[t] = true
		for _, f := range t.Fields {
			needs := f.Type.NeedsClone() // builtins, slices, maps, external types
			if f.Type.Kind == TypeNamed {
				needs = visit(f.Type.Named)
			}
			if needs {
				t.NeedsClone = true
				break
			}
		}
		return t.NeedsClone
	}
	for _, t := range types {
		visit(t)
	}
}

// structFields reads the ordered mapping of JSON field name -> type.
func (l *loader) structFields(t *Type, n *yaml.Node) []*Field {
	if n.Kind != yaml.MappingNode {
		l.add(pos(n), "fields of type %s must be a mapping of JSON name to type, not %s", t.Name, describe(n))
		return nil
	}
	var out []*Field
	byGoName := map[string]*Field{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolveAlias(n.Content[i+1])
		f := &Field{JSONName: k.Value, GoName: camelCase(k.Value), Pos: pos(k)}
		prev := byGoName[f.GoName]
		switch {
		case prev != nil && prev.JSONName == f.JSONName:
			l.add(pos(k), "type %s: field %q appears twice (first at line %d)", t.Name, k.Value, prev.Pos.Line)
			continue
		case k.Value == "" || strings.ContainsAny(k.Value, `",`+"`"):
			l.add(pos(k), "type %s: field name %q cannot be a JSON field name here (empty, or has a quote or comma)", t.Name, k.Value)
			continue
		case !isExported(f.GoName):
			l.add(pos(k), "type %s: field %q does not make a Go field name (%q); start it with a letter", t.Name, k.Value, f.GoName)
			continue
		case prev != nil:
			l.add(pos(k), "type %s: fields %q and %q (line %d) both become the Go field %s; rename one", t.Name, k.Value, prev.JSONName, prev.Pos.Line, f.GoName)
			continue
		}
		expr, ok := l.scalar(v, "the type of field "+k.Value)
		if !ok {
			continue
		}
		if f.Type = l.typeExpr(expr, pos(v)); f.Type == nil {
			continue
		}
		byGoName[f.GoName] = f
		out = append(out, f)
	}
	return out
}

// typeExpr resolves a type expression: a builtin, []T, map[string]T, a
// type of the schema, or an external "import/path.Type".
func (l *loader) typeExpr(expr string, p Pos) *TypeRef {
	switch {
	case strings.HasPrefix(expr, "[]"):
		elem := l.typeExpr(expr[2:], p)
		if elem == nil {
			return nil
		}
		return &TypeRef{Kind: TypeSlice, Elem: elem}
	case strings.HasPrefix(expr, "map["):
		key, elem, ok := strings.Cut(expr[len("map["):], "]")
		if !ok {
			l.add(p, "type %q: missing ']' after the map key type", expr)
			return nil
		}
		if key != "string" {
			l.add(p, "type %q: map keys must be string (JSON object keys are strings)", expr)
			return nil
		}
		e := l.typeExpr(elem, p)
		if e == nil {
			return nil
		}
		return &TypeRef{Kind: TypeMap, Elem: e}
	case l.brokenTypes[expr]:
		return nil // its declaration was reported
	case slices.Contains(Builtins, expr):
		return &TypeRef{Kind: TypeBuiltin, Builtin: expr}
	case l.types[expr] != nil:
		return &TypeRef{Kind: TypeNamed, Named: l.types[expr]}
	case strings.Contains(expr, "."):
		return l.externalType(expr, p)
	}
	candidates := slices.Clone(Builtins)
	for name := range l.types {
		candidates = append(candidates, name)
	}
	slices.Sort(candidates) // deterministic suggestion when two are equally close
	if best := closest(expr, candidates); best != "" {
		l.add(p, "unknown type %q%s", expr, suggest(best))
		return nil
	}
	l.add(p, "unknown type %q: use a builtin (%s), []T, map[string]T, a type declared under types, or \"import/path.Type\"",
		expr, strings.Join(Builtins, ", "))
	return nil
}

// externalType resolves "import/path.Type".
func (l *loader) externalType(expr string, p Pos) *TypeRef {
	dot := strings.LastIndexByte(expr, '.')
	path, name := expr[:dot], expr[dot+1:]
	switch {
	case !isExported(name):
		l.add(p, "type %q: %q is not an exported Go type name; external types are written \"import/path.Type\"", expr, name)
		return nil
	case !validImportPath(path):
		l.add(p, "type %q: %q is not a valid Go import path", expr, path)
		return nil
	}
	return &TypeRef{Kind: TypeExternal, ImportPath: path, Name: name}
}

// validImportPath is a conservative check of an import path: non-empty
// elements of letters, digits and "-._~", without a leading dot.
func validImportPath(path string) bool {
	if path == "" {
		return false
	}
	for _, elem := range strings.Split(path, "/") {
		if elem == "" || elem[0] == '.' {
			return false
		}
		for _, r := range elem {
			if !(r == '-' || r == '.' || r == '_' || r == '~' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z')) {
				return false
			}
		}
	}
	return !token.IsKeyword(path)
}

// checkTypeCycles reports struct types that contain themselves by value,
// directly or through other types: Go cannot lay them out. A slice or a
// map on the way breaks the cycle.
func (l *loader) checkTypeCycles(types []*Type) {
	for _, t := range types {
		if path := valuePath(t, t, nil, map[*Type]bool{}); path != nil {
			l.add(t.Pos, "type %s contains itself by value (%s): make one of these fields a []T or map[string]T",
				t.Name, strings.Join(path, " -> "))
		}
	}
}

// valuePath returns the fields that lead by value from `from` to target,
// or nil when none do.
func valuePath(target, from *Type, path []string, seen map[*Type]bool) []string {
	for _, f := range from.Fields {
		if f.Type.Kind != TypeNamed {
			continue
		}
		p := append(slices.Clip(path), from.Name+"."+f.JSONName)
		next := f.Type.Named
		if next == target {
			return p
		}
		if !seen[next] {
			seen[next] = true
			if found := valuePath(target, next, p, seen); found != nil {
				return found
			}
		}
	}
	return nil
}
