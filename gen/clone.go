package gen

import (
	"github.com/dave/jennifer/jen"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// Caches hand out deep copies (a caller modifying what it read must not
// change the cache), so the generator writes a copy function for every
// schema type that holds a slice, a map or an external value, the way
// Kubernetes' deepcopy-gen does. Types of plain values need none: a Go
// assignment already copies them.

// cloneExpr returns an expression copying x of type t (t.NeedsClone()).
// External types inside structs are JSON-encoded with their struct, so a
// JSON round trip copies them faithfully.
func cloneExpr(t *schema.TypeRef, x jen.Code) jen.Code {
	switch t.Kind {
	case schema.TypeBuiltin: // bytes, json
		return jen.Qual("slices", "Clone").Call(x)
	case schema.TypeSlice:
		return rt("CloneSlice").Call(x, elemClone(t.Elem))
	case schema.TypeMap:
		return rt("CloneMap").Call(x, elemClone(t.Elem))
	case schema.TypeNamed:
		return jen.Id(t.Named.Names.Clone).Call(x)
	}
	return rt("CloneJSON").Call(x)
}

// elemClone is the element copy function for CloneSlice and CloneMap: nil
// when elements are plain values.
func elemClone(t *schema.TypeRef) jen.Code {
	if !t.NeedsClone() {
		return jen.Nil()
	}
	if t.Kind == schema.TypeNamed {
		return jen.Id(t.Named.Names.Clone)
	}
	return elemCloneFunc(t)
}

// emitClone writes the copy function of a schema type that needs one.
func emitClone(f *jen.File, t *schema.Type) {
	if !t.NeedsClone {
		return
	}
	f.Comment(t.Names.Clone + " returns a deep copy of v: one that shares no slice, map or pointer with it.")
	f.Func().Id(t.Names.Clone).Params(jen.Id("v").Id(t.Name)).Id(t.Name).BlockFunc(func(g *jen.Group) {
		for _, fld := range t.Fields {
			if fld.Type.NeedsClone() {
				g.Id("v").Dot(fld.GoName).Op("=").Add(cloneExpr(fld.Type, jen.Id("v").Dot(fld.GoName)))
			}
		}
		g.Return(jen.Id("v"))
	})
	f.Line()
}

// kindClone is the Clone field of a kind's runtime description, or nil
// when its values need no deep copy. Values of external types are copied
// through their own codec.
func kindClone(k *schema.Kind) jen.Code {
	v := k.Value
	switch {
	case !v.NeedsClone():
		return nil
	case v.Kind == schema.TypeExternal:
		return rt("CodecClone").Call(codec(k))
	case v.Kind == schema.TypeNamed:
		return jen.Id(v.Named.Names.Clone)
	}
	return elemCloneFunc(v)
}

// elemCloneFunc is a function literal copying a value of type t.
func elemCloneFunc(t *schema.TypeRef) jen.Code {
	return jen.Func().Params(jen.Id("v").Add(goType(t))).Add(goType(t)).Block(jen.Return(cloneExpr(t, jen.Id("v"))))
}
