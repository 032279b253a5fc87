package interp

import (
	"encoding/json"
	"reflect"
	"slices"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// lazy stands in for a struct type inside itself (values.go). encoding/json
// hands it the JSON at its place each time it decodes into that place:
// once, or again when a key is repeated and a slice element is decoded
// into once more (encoding/json reuses slice elements, merging what it
// decodes into them). resolve then decodes each JSON, in the order given,
// into one value of the struct type: what encoding/json does to the
// generated type's element.
type lazy struct {
	raws  []json.RawMessage
	value any // the struct value, once resolved
}

// UnmarshalJSON keeps a copy of data.
func (l *lazy) UnmarshalJSON(data []byte) error {
	l.raws = append(l.raws, slices.Clone(data))
	return nil
}

// MarshalJSON writes the resolved value.
func (l lazy) MarshalJSON() ([]byte, error) { return json.Marshal(l.value) }

// resolve decodes the lazies inside v, a value of ref's Go type, and the
// lazies inside what they decode, in turn.
func (t *jsonType) resolve(v reflect.Value, ref *schema.TypeRef) error {
	if v.Type() == lazyType {
		l := v.Addr().Interface().(*lazy)
		p := reflect.New(t.structs[ref.Named])
		for _, raw := range l.raws {
			if err := json.Unmarshal(raw, p.Interface()); err != nil {
				return err
			}
		}
		if err := t.resolve(p.Elem(), ref); err != nil {
			return err
		}
		l.raws, l.value = nil, p.Elem().Interface()
		return nil
	}
	switch ref.Kind {
	case schema.TypeSlice:
		for i := range v.Len() {
			if err := t.resolve(v.Index(i), ref.Elem); err != nil {
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
			if err := t.resolve(e, ref.Elem); err != nil {
				return err
			}
			v.SetMapIndex(it.Key(), e)
		}
	case schema.TypeNamed:
		for i, f := range ref.Named.Fields {
			if err := t.resolve(v.Field(i), f.Type); err != nil {
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
