package compat

import (
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file compares what the generated Go API declares for the value
// types and scopes: code that compiles against the old package and not
// against the new one. Additions are safe; removals and changed types
// break builds (buf's FILE category). Kinds and buckets are compared in
// kinds.go.

// types compares the struct types declared under types:, by name.
func (c *comparison) types() {
	for _, ot := range c.old.Types {
		nt := findType(c.new, ot.Name)
		if nt == nil {
			c.add(c.inOld(ot.Pos), GoAPI, Breaking, "type-removed", ot.Name, "type %s removed: code using it no longer compiles", ot.Name)
			continue
		}
		for _, of := range ot.Fields {
			nf := findGoField(nt, of.GoName)
			switch {
			case nf == nil:
				c.add(c.inOld(of.Pos), GoAPI, Breaking, "field-removed", nt.Name+"."+of.JSONName,
					"field %s.%s removed: code using it no longer compiles", ot.Name, of.GoName)
			case goType(of.Type) != goType(nf.Type):
				c.add(c.inNew(nf.Pos), GoAPI, Breaking, "field-type", nt.Name+"."+nf.JSONName,
					"field %s.%s changed from %s to %s: code using it no longer compiles", nt.Name, nf.GoName, goType(of.Type), goType(nf.Type))
			}
		}
	}
	for _, nt := range c.new.Types {
		if findType(c.old, nt.Name) == nil {
			c.add(c.inNew(nt.Pos), GoAPI, Safe, "type-added", nt.Name, "type %s added", nt.Name)
		}
	}
}

func findType(s *schema.Schema, name string) *schema.Type {
	for _, t := range s.Types {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func findGoField(t *schema.Type, goName string) *schema.Field {
	for _, f := range t.Fields {
		if f.GoName == goName {
			return f
		}
	}
	return nil
}

// goType is the Go type the generator writes for t.
func goType(t *schema.TypeRef) string {
	switch t.Kind {
	case schema.TypeSlice:
		return "[]" + goType(t.Elem)
	case schema.TypeMap:
		return "map[string]" + goType(t.Elem)
	case schema.TypeNamed:
		return t.Named.Name
	case schema.TypeExternal:
		return t.ImportPath + "." + t.Name
	}
	switch t.Builtin {
	case "bytes":
		return "[]byte"
	case "time":
		return "time.Time"
	case "duration":
		return "time.Duration"
	case "json":
		return "json.RawMessage"
	}
	return t.Builtin
}

// scopes compares a bucket's scopes, by Go name: what the Scopes struct
// declares, and what a scope value covers.
func (c *comparison) scopes(ob, nb *schema.Bucket) {
	for _, os := range ob.Scopes {
		ns := findScope(nb, os.GoName)
		subject := nb.GoName + "." + os.GoName
		switch {
		case ns == nil:
			c.add(c.inOld(os.Pos), GoAPI, Breaking, "scope-removed", subject,
				"scope %s removed: code setting %s.%s no longer compiles", os.GoName, ob.Names.Scopes, os.Field)
		case keyFields(os.Prefix) != keyFields(ns.Prefix):
			c.add(c.inNew(ns.Pos), GoAPI, Breaking, "scope-params", subject,
				"scope %s's parameters changed from %s to %s: code setting %s.%s no longer compiles", os.GoName, keyFields(os.Prefix), keyFields(ns.Prefix), nb.Names.Scopes, ns.Field)
		case !templateReads(os.Prefix, ns.Prefix) || !templateReads(ns.Prefix, os.Prefix):
			// The code compiles as it did: what breaks is what a watcher
			// narrowed by the scope reads of the bucket.
			c.add(c.inNew(ns.Pos), NewReaders, Breaking, "scope-prefix", subject,
				"scope %s's prefix changed from %s to %s: new watchers narrowed by a value of it watch other keys than old watchers narrowed by the same value (code using %s.%s compiles unchanged)",
				os.GoName, os.Prefix.Raw, ns.Prefix.Raw, nb.Names.Scopes, ns.Field)
		}
	}
	for _, ns := range nb.Scopes {
		if findScope(ob, ns.GoName) == nil {
			c.add(c.inNew(ns.Pos), GoAPI, Safe, "scope-added", nb.GoName+"."+ns.GoName, "scope %s added", ns.GoName)
		}
	}
}

func findScope(b *schema.Bucket, name string) *schema.Scope {
	for _, s := range b.Scopes {
		if s.GoName == name {
			return s
		}
	}
	return nil
}
