package interp

import (
	"encoding/json"
	"reflect"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// lazy stands in for a struct type below the levels a Go type unrolls
// (values.go). encoding/json
// hands it the JSON at its place each time it decodes into that place:
// once, or again when a key is repeated and a slice element is decoded
// into once more (encoding/json reuses slice elements, merging what it
// decodes into them). resolve then decodes each JSON, in the order given,
// into one value of the struct type: what encoding/json does to the
// generated type's element.
//
// One thing differs, and only below the levels a type unrolls: a part of
// the value that a later repeated key replaces (a shorter or null slice, a
// map entry given again) is never resolved, so a type error inside it is
// not seen, where encoding/json, decoding everything as it goes, reports
// it. No value is refused that the generated decoder accepts, and every
// value accepted decodes to the generated decoder's. Closing it would
// need the lazy to check its JSON as it is handed over, which needs the
// struct type it stands for, and a method of a type made at run time
// cannot know it.
type lazy struct {
	raws  []json.RawMessage
	value any // the struct value, once resolved
}

// UnmarshalJSON keeps data: a part of the value being decoded, which
// resolve decodes before decode returns.
func (l *lazy) UnmarshalJSON(data []byte) error {
	l.raws = append(l.raws, data)
	return nil
}

// MarshalJSON writes the resolved value.
func (l lazy) MarshalJSON() ([]byte, error) { return json.Marshal(l.value) }

// resolve decodes the lazies inside v, a value of ref's Go type at path
// in the kind's value, and the lazies inside what they decode, in turn.
func (t *jsonType) resolve(v reflect.Value, ref *schema.TypeRef, path fieldPath) error {
	if v.Type() == lazyType {
		l := v.Addr().Interface().(*lazy)
		st, err := t.goType(ref)
		if err != nil {
			return err
		}
		p := reflect.New(st)
		for _, raw := range l.raws {
			if err := json.Unmarshal(raw, p.Interface()); err != nil {
				return t.typeError(err, ref, path)
			}
		}
		if err := t.resolve(p.Elem(), ref, path); err != nil {
			return err
		}
		l.raws, l.value = nil, p.Elem().Interface()
		return nil
	}
	switch ref.Kind {
	case schema.TypeSlice:
		for i := range v.Len() {
			if err := t.resolve(v.Index(i), ref.Elem, path); err != nil {
				return err
			}
		}
	case schema.TypeMap:
		if !holdsLazy(v.Type().Elem()) {
			return nil
		}
		// Map elements are not addressable: resolve a copy, store it back.
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			if err := t.resolve(e, ref.Elem, path); err != nil {
				return err
			}
			v.SetMapIndex(it.Key(), e)
		}
	case schema.TypeNamed:
		for i, f := range ref.Named.Fields {
			if err := t.resolve(v.Field(i), f.Type, path.field(ref.Named, f.JSONName)); err != nil {
				return err
			}
		}
	}
	return nil
}

// holdsLazy reports whether a value of type rt can hold a lazy.
func holdsLazy(rt reflect.Type) bool {
	switch rt.Kind() {
	case reflect.Slice, reflect.Map:
		return holdsLazy(rt.Elem())
	case reflect.Struct:
		if rt == lazyType {
			return true
		}
		for i := range rt.NumField() {
			if holdsLazy(rt.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
