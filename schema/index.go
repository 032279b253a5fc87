package schema

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// This file reads the indexes a kind declares on its cache (indexes:),
// each a lookup by one field of the kind's value:
//
//	indexes:
//	  - name: ByNextHop
//	    field: next_hop
//
// generates RouteCache().ByNextHop(hop), kept up to date with every change.

// Index is one index of a kind's cache.
type Index struct {
	Name  string // the lookup's Go name, e.g. "ByNextHop"
	Field *Field // the field of the kind's value type it indexes
	Pos   Pos
}

var indexFields = []string{"name", "field"}

// indexableBuiltins are the field types an index can hold: comparable
// scalars, equal when their JSON is.
var indexableBuiltins = []string{"string", "bool", "int", "int32", "int64", "uint", "uint32", "uint64"}

// indexes reads the indexes of kind k (its value type known, or nil when
// it did not parse).
func (l *loader) indexes(k *Kind, n *yaml.Node) []*Index {
	items := l.sequence(n, "indexes")
	var out []*Index
	byName := map[string]*Index{}
	for _, item := range items {
		f := l.fields(item, "an index", indexFields, "name", "field")
		if f == nil {
			continue
		}
		ix := &Index{Pos: pos(item)}
		ok := f["name"] != nil && f["field"] != nil
		if n := f["name"]; n != nil {
			name, isScalar := l.scalar(n, "name")
			ix.Name, ix.Pos = name, pos(n)
			switch {
			case !isScalar:
				ok = false
			case !isExported(name):
				l.add(pos(n), "index name %q must be an exported Go identifier (it names the cache's lookup, %sCache().%s)", name, k.GoName, name)
				ok = false
			case byName[name] != nil:
				l.add(pos(n), "kind %s: index name %q is used twice (first at line %d)", k.label(), name, byName[name].Pos.Line)
				ok = false
			default:
				byName[name] = ix
			}
		}
		if n := f["field"]; n != nil {
			field, isScalar := l.scalar(n, "field")
			ok = isScalar && ok
			if isScalar && k.Value != nil {
				ix.Field = l.indexField(k, field, pos(n))
				ok = ok && ix.Field != nil
			}
		}
		if ok {
			out = append(out, ix)
		}
	}
	return out
}

// indexField finds the field an index names in the kind's value type, and
// checks that an index can hold it.
func (l *loader) indexField(k *Kind, name string, p Pos) *Field {
	if k.Value.Kind != TypeNamed || k.Value.Named == nil {
		l.add(p, "kind %s: an index needs a value type declared under types (with fields), not %s", k.label(), typeString(k.Value))
		return nil
	}
	t := k.Value.Named
	var names []string
	for _, f := range t.Fields {
		names = append(names, f.JSONName)
		if f.JSONName != name {
			continue
		}
		if f.Type.Kind != TypeBuiltin || !contains(indexableBuiltins, f.Type.Builtin) {
			l.add(p, "kind %s: field %q of %s is %s: an index holds string, bool or integer fields", k.label(), name, t.Name, typeString(f.Type))
			return nil
		}
		return f
	}
	l.add(p, "kind %s: %s has no field %q%s", k.label(), t.Name, name, suggest(closest(name, names)))
	return nil
}

func (i *Index) String() string { return fmt.Sprintf("%s(%s)", i.Name, i.Field.JSONName) }
