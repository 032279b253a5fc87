package gen

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// Every schema type gets a decoder for the JSON codec's fast path (the
// runtime's JSONReader): a switch on the object's keys with one case per
// field, each reading the field with the runtime's reader for its type.
// The runtime decodes with encoding/json whatever a decoder declines, so a
// decoder only has to be right about what it accepts; the heuristics below
// decline whatever encoding/json treats specially.

// emitDecode writes the fast-path decoder of t.
func emitDecode(f *jen.File, t *schema.Type) {
	f.Comment(fmt.Sprintf("%s decodes one %s on the JSON codec's fast path (see kvwatchimpl.JSONReader).", t.Names.DecodeJSON, t.Name))
	reader := jen.Id("r").Op("*").Add(rt("JSONReader"))
	f.Func().Id(t.Names.DecodeJSON).Params(reader, jen.Id("v").Op("*").Id(t.Name)).BlockFunc(func(g *jen.Group) {
		g.If(jen.Id("r").Dot("Null").Call()).Block(jen.Return())
		fast, all := fastFields(t)
		if len(fast) > 0 {
			g.Var().Id("seen").Index(jen.Lit((len(fast) + 63) / 64)).Uint64()
		}
		g.For(jen.Id("i").Op(":=").Id("r").Dot("Object").Call(), jen.Id("r").Dot("More").Call(jen.Op("&").Id("i")), jen.Empty()).Block(
			jen.Switch(jen.String().Call(jen.Id("r").Dot("Key").Call())).BlockFunc(func(sw *jen.Group) {
				for j, fld := range fast {
					sw.Case(jen.Lit(fld.JSONName)).Block(
						jen.Id("r").Dot("Once").Call(jen.Op("&").Id("seen").Index(jen.Lit(j/64)), jen.Lit(j%64)),
						decodeInto(fld.Type, jen.Op("&").Id("v").Dot(fld.GoName)),
					)
				}
				if !all {
					// A field the switch leaves out: encoding/json has its
					// own reading of that name, so every other key is its
					// to judge too.
					sw.Default().Id("r").Dot("Fail").Call()
					return
				}
				names := make([]jen.Code, len(fast))
				for j, fld := range fast {
					names[j] = jen.Lit(fld.JSONName)
				}
				sw.Default().Id("r").Dot("SkipUnknown").Call(names...)
			}),
		)
	})
	f.Line()
}

// fastFields returns the fields of t the decoder's switch names, and
// whether that is all of them. It leaves out the fields whose JSON name
// encoding/json does not take as written: "-" (the field is ignored), a
// name its tag rules reject (the Go field name is used instead), and names
// outside ASCII (matched with Unicode case folding).
func fastFields(t *schema.Type) (fast []*schema.Field, all bool) {
	for _, fld := range t.Fields {
		if plainJSONName(fld.JSONName) {
			fast = append(fast, fld)
		}
	}
	return fast, len(fast) == len(t.Fields)
}

// plainJSONName reports whether encoding/json matches name, as a struct
// tag, exactly as written: ASCII letters, digits and the punctuation its
// tag rules allow, and not "-".
func plainJSONName(name string) bool {
	if name == "" || name == "-" {
		return false
	}
	for _, c := range name {
		if c >= unicode.MaxASCII || !unicode.IsLetter(c) && !unicode.IsDigit(c) && !strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c) {
			return false
		}
	}
	return true
}

// decodeInto is the statement decoding a value of type t from r into the
// pointer p.
func decodeInto(t *schema.TypeRef, p jen.Code) jen.Code {
	r := jen.Id("r")
	switch t.Kind {
	case schema.TypeSlice:
		return rt("JSONSlice").Call(r, p, elemDecoder(t.Elem))
	case schema.TypeMap:
		return rt("JSONMap").Call(r, p, elemDecoder(t.Elem))
	case schema.TypeNamed:
		return jen.Id(t.Named.Names.DecodeJSON).Call(r, p)
	case schema.TypeBuiltin:
		if m := readerMethod(t.Builtin); m != "" {
			return r.Dot(m).Call(p)
		}
		if fn := genericReader(t.Builtin); fn != "" {
			return rt(fn).Call(jen.Id("r"), p)
		}
	}
	return rt("JSONValue").Call(r, p) // external types, time, bytes, json
}

// elemDecoder is a function value decoding a value of type t: the element
// decoder of JSONSlice and JSONMap, and a JSON codec's Fast.
func elemDecoder(t *schema.TypeRef) jen.Code {
	switch t.Kind {
	case schema.TypeNamed:
		return jen.Id(t.Named.Names.DecodeJSON)
	case schema.TypeBuiltin:
		if m := readerMethod(t.Builtin); m != "" {
			return jen.Parens(jen.Op("*").Add(rt("JSONReader"))).Dot(m)
		}
		if fn := genericReader(t.Builtin); fn != "" {
			return rt(fn).Types(goType(t))
		}
		return rt("JSONValue").Types(goType(t))
	case schema.TypeExternal:
		return rt("JSONValue").Types(goType(t))
	}
	return jen.Func().Params(jen.Id("r").Op("*").Add(rt("JSONReader")), jen.Id("p").Op("*").Add(goType(t))).Block(
		decodeInto(t, jen.Id("p")),
	)
}

// readerMethod is the JSONReader method reading builtin b, "" if none.
func readerMethod(b string) string {
	switch b {
	case "string":
		return "ReadString"
	case "bool":
		return "ReadBool"
	case "float32":
		return "ReadFloat32"
	case "float64":
		return "ReadFloat64"
	}
	return ""
}

// genericReader is the runtime's generic reader of builtin b, "" if none.
// A duration is an integer count of nanoseconds in JSON.
func genericReader(b string) string {
	switch b {
	case "int", "int32", "int64", "duration":
		return "JSONInt"
	case "uint", "uint32", "uint64":
		return "JSONUint"
	}
	return ""
}

// fastDecoder is the Fast decoder of a JSON kind's codec, nil where the
// fast path would only hand the whole value to encoding/json.
func fastDecoder(t *schema.TypeRef) jen.Code {
	switch {
	case t.Kind == schema.TypeExternal:
		return nil
	case t.Kind == schema.TypeBuiltin && readerMethod(t.Builtin) == "" && genericReader(t.Builtin) == "":
		return nil
	}
	return elemDecoder(t)
}
