package interp

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// A type error of encoding/json names the Go types it met: the struct
// whose field was being decoded and the field's type. The types built at
// run time have no names (a struct type's reflect string spells out its
// fields), so such an error is given again as encoding/json gives it for
// the generated types: the struct by its generated name, the type as the
// generated package spells it (netkv.Device, []netkv.Inner). verify and
// watch then print the text a generated watcher or Get… gives.

// fieldPath is where a value being decoded sits inside the value of a
// kind: the JSON names of the struct fields on the way (encoding/json's
// UnmarshalTypeError.Field), and the generated name of the struct holding
// the last of them (its Struct).
type fieldPath struct {
	fields []string
	inside string
}

// field returns p one field deeper, into field name of struct type in.
func (p fieldPath) field(in *schema.Type, name string) fieldPath {
	return fieldPath{fields: append(slices.Clip(p.fields), name), inside: in.Name}
}

// generatedTypeError is an *json.UnmarshalTypeError with the generated
// types' names.
type generatedTypeError struct {
	text string
	err  *json.UnmarshalTypeError
}

func (e *generatedTypeError) Error() string { return e.text }
func (e *generatedTypeError) Unwrap() error { return e.err }

// typeError returns err, met decoding into root's Go type at path, with
// the text encoding/json gives for the generated types. An error of
// another sort, or one whose place in root cannot be found, is returned
// as it is.
func (t *jsonType) typeError(err error, root *schema.TypeRef, at fieldPath) error {
	typeErr, ok := err.(*json.UnmarshalTypeError)
	if !ok {
		return err
	}
	path := at
	cur := root
	if typeErr.Field != "" {
		for _, name := range strings.Split(typeErr.Field, ".") {
			for cur.Kind == schema.TypeSlice || cur.Kind == schema.TypeMap {
				cur = cur.Elem
			}
			if cur.Kind != schema.TypeNamed {
				return err
			}
			i := slices.IndexFunc(cur.Named.Fields, func(f *schema.Field) bool { return f.JSONName == name })
			if i < 0 {
				return err
			}
			path = path.field(cur.Named, name)
			cur = cur.Named.Fields[i].Type
		}
	}
	// The value's type is the field's, or an element of it.
	for !sameShape(cur, typeErr.Type) {
		if cur.Kind != schema.TypeSlice && cur.Kind != schema.TypeMap {
			return err
		}
		cur = cur.Elem
	}
	text := "json: cannot unmarshal " + typeErr.Value
	if len(path.fields) > 0 {
		text += " into Go struct field " + path.inside + "." + strings.Join(path.fields, ".")
	} else {
		text += " into Go value"
	}
	return &generatedTypeError{text: text + " of type " + t.spelling(cur), err: typeErr}
}

// sameShape reports whether rt is a Go type built for r.
func sameShape(r *schema.TypeRef, rt reflect.Type) bool {
	switch r.Kind {
	case schema.TypeSlice:
		return rt.Kind() == reflect.Slice && rt != builtins["bytes"] && sameShape(r.Elem, rt.Elem())
	case schema.TypeMap:
		return rt.Kind() == reflect.Map && sameShape(r.Elem, rt.Elem())
	case schema.TypeNamed:
		return rt == lazyType || rt.Kind() == reflect.Struct && rt.Name() == ""
	case schema.TypeExternal:
		if known := externals[r.ImportPath+"."+r.Name]; known != nil {
			return rt == known
		}
		return rt == rawMessage
	}
	return rt == builtins[r.Builtin]
}

// spelling is r's Go type as encoding/json names the generated one.
func (t *jsonType) spelling(r *schema.TypeRef) string {
	switch r.Kind {
	case schema.TypeSlice:
		return "[]" + t.spelling(r.Elem)
	case schema.TypeMap:
		return "map[string]" + t.spelling(r.Elem)
	case schema.TypeNamed:
		return t.pkg + "." + r.Named.Name
	case schema.TypeExternal:
		if known := externals[r.ImportPath+"."+r.Name]; known != nil {
			return known.String()
		}
		return rawMessage.String()
	}
	return builtins[r.Builtin].String()
}
