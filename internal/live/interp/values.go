package interp

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file gives a schema's value types a Go type at run time, so that
// encoding/json decodes a value into it exactly as it decodes into the
// generated type: the same kinds (int is Go's int, bytes []byte, time
// time.Time...), struct fields of the same names and JSON tags in the same
// order (reflect.StructOf). Generated decoders give encoding/json's result
// (runtime/kvwatchimpl JSON codec), so decoding into these types gives the
// generated decoder's result; golden/json_values/want/interp_test.go
// checks it on that case's seeds and fuzz corpus.
//
// Two things cannot be built as they are:
//   - A struct type that holds itself through a slice or map (Inner with
//     tree: []Inner): reflect.StructOf cannot make a recursive type. Where
//     the type refers back to a struct type it is inside of, a lazy
//     stands in: it keeps the JSON it is given, and once encoding/json is
//     done the JSON is decoded into the struct type, in turn (lazy.go).
//   - An external type ("import/path.Type"): its package is not in this
//     program. A few of the standard library's are (externals below);
//     any other is read as json.RawMessage, which checks only that the
//     value there is valid JSON. Such a kind is reported as not fully
//     checked (Coverage).

// externals are the external types the command knows: the standard
// library's that a schema is likely to name. Any other external type is
// checked as JSON only.
var externals = map[string]reflect.Type{
	"net/netip.Addr":           reflect.TypeFor[netip.Addr](),
	"net/netip.Prefix":         reflect.TypeFor[netip.Prefix](),
	"net/netip.AddrPort":       reflect.TypeFor[netip.AddrPort](),
	"net.IP":                   reflect.TypeFor[net.IP](),
	"net/url.URL":              reflect.TypeFor[url.URL](),
	"time.Time":                reflect.TypeFor[time.Time](),
	"time.Duration":            reflect.TypeFor[time.Duration](),
	"time.Month":               reflect.TypeFor[time.Month](),
	"time.Weekday":             reflect.TypeFor[time.Weekday](),
	"encoding/json.RawMessage": reflect.TypeFor[json.RawMessage](),
	"encoding/json.Number":     reflect.TypeFor[json.Number](),
	"math/big.Int":             reflect.TypeFor[big.Int](),
	"math/big.Float":           reflect.TypeFor[big.Float](),
	"math/big.Rat":             reflect.TypeFor[big.Rat](),
}

// builtins are the Go types generated code declares for the schema's
// builtin types (gen's goType).
var builtins = map[string]reflect.Type{
	"string":   reflect.TypeFor[string](),
	"bool":     reflect.TypeFor[bool](),
	"int":      reflect.TypeFor[int](),
	"int32":    reflect.TypeFor[int32](),
	"int64":    reflect.TypeFor[int64](),
	"uint":     reflect.TypeFor[uint](),
	"uint32":   reflect.TypeFor[uint32](),
	"uint64":   reflect.TypeFor[uint64](),
	"float32":  reflect.TypeFor[float32](),
	"float64":  reflect.TypeFor[float64](),
	"bytes":    reflect.TypeFor[[]byte](),
	"time":     reflect.TypeFor[time.Time](),
	"duration": reflect.TypeFor[time.Duration](),
	"json":     reflect.TypeFor[json.RawMessage](),
}

var (
	rawMessage = reflect.TypeFor[json.RawMessage]()
	lazyType   = reflect.TypeFor[lazy]()
)

// Coverage says how completely a kind's values are checked.
type Coverage int

const (
	// Full: a value is checked as the generated decoder checks it.
	Full Coverage = iota
	// JSONOnly: the value's type holds external types the command does not
	// know; where they appear, a value is only checked to be valid JSON.
	JSONOnly
	// Unchecked: the codec is text or binary with an external type; values
	// are not checked at all.
	Unchecked
)

func (c Coverage) String() string {
	switch c {
	case Full:
		return "full"
	case JSONOnly:
		return "json-only"
	}
	return "unchecked"
}

// jsonType is a schema value type's Go type.
type jsonType struct {
	ref *schema.TypeRef
	rt  reflect.Type
	// structs are the Go types of the struct types ref reaches, which a
	// lazy decodes into.
	structs map[*schema.Type]reflect.Type
	// recursive is set when a struct type refers back to one it is
	// inside of: values then hold lazies to resolve.
	recursive bool
	// unknown lists the external types read as JSON only, sorted.
	unknown []string
}

// newJSONType builds ref's Go type. reflect.StructOf panics on what it
// cannot build; a schema that loaded never makes it, but the panic is
// turned into an error all the same.
func newJSONType(ref *schema.TypeRef) (t *jsonType, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("cannot build a Go type for %s: %v", TypeString(ref), r)
		}
	}()
	t = &jsonType{ref: ref, structs: map[*schema.Type]reflect.Type{}}
	unknown := map[string]bool{}
	inside := map[*schema.Type]bool{}
	var of func(r *schema.TypeRef) reflect.Type
	of = func(r *schema.TypeRef) reflect.Type {
		switch r.Kind {
		case schema.TypeBuiltin:
			return builtins[r.Builtin]
		case schema.TypeSlice:
			return reflect.SliceOf(of(r.Elem))
		case schema.TypeMap:
			return reflect.MapOf(builtins["string"], of(r.Elem))
		case schema.TypeExternal:
			name := r.ImportPath + "." + r.Name
			if known := externals[name]; known != nil {
				return known
			}
			unknown[name] = true
			return rawMessage
		}
		if inside[r.Named] {
			t.recursive = true
			return lazyType
		}
		if st, ok := t.structs[r.Named]; ok {
			return st
		}
		inside[r.Named] = true
		fields := make([]reflect.StructField, len(r.Named.Fields))
		for i, f := range r.Named.Fields {
			fields[i] = reflect.StructField{
				Name: f.GoName,
				Type: of(f.Type),
				Tag:  reflect.StructTag(`json:` + strconv.Quote(f.JSONName)),
			}
		}
		delete(inside, r.Named)
		st := reflect.StructOf(fields)
		t.structs[r.Named] = st
		return st
	}
	t.rt = of(ref)
	for name := range unknown {
		t.unknown = append(t.unknown, name)
	}
	sortStrings(t.unknown)
	return t, nil
}

// decode decodes data as encoding/json decodes it into the generated type,
// with the error the generated codec returns (prefixed "json: ").
func (t *jsonType) decode(data []byte) (any, error) {
	p := reflect.New(t.rt)
	err := json.Unmarshal(data, p.Interface())
	if err == nil && t.recursive {
		err = t.resolve(p.Elem(), t.ref)
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), "json: ") {
			err = fmt.Errorf("json: %w", err)
		}
		return nil, err
	}
	return p.Elem().Interface(), nil
}

// TypeString writes a type as the schema does: "[]Route", "map[string]int",
// "net/netip.Addr".
func TypeString(t *schema.TypeRef) string {
	switch t.Kind {
	case schema.TypeBuiltin:
		return t.Builtin
	case schema.TypeSlice:
		return "[]" + TypeString(t.Elem)
	case schema.TypeMap:
		return "map[string]" + TypeString(t.Elem)
	case schema.TypeNamed:
		return t.Named.Name
	}
	return t.ImportPath + "." + t.Name
}
