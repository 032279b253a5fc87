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
	"sync"
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
//     tree: []Inner): reflect.StructOf cannot make a recursive type. It is
//     unrolled some levels deep (unrollLevels), and below them a lazy
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
	// pkg is the generated package's name, for error texts.
	pkg string
	rt  reflect.Type
	// levels is how many struct types deep a type is unrolled before a
	// lazy stands in (see unrollLevels).
	levels int
	// lazy is set when rt holds a lazy: values then hold lazies to resolve.
	lazy bool
	// unknown lists the external types read as JSON only, sorted.
	unknown []string

	mu    sync.Mutex
	built map[unrolled]reflect.Type
}

// unrolled is a struct type unrolled levels deep.
type unrolled struct {
	t      *schema.Type
	levels int
}

// maxExpansion bounds the struct types one Go type holds, each written out
// in full in its reflect string: a type that refers to itself twice (a
// tree) doubles it at every level.
const maxExpansion = 256

// newJSONType builds ref's Go type, of generated package pkg.
// reflect.StructOf panics on what it cannot build; a schema that loaded
// never makes it, but the panic is turned into an error all the same.
func newJSONType(pkg string, ref *schema.TypeRef) (t *jsonType, err error) {
	t = &jsonType{ref: ref, pkg: pkg, built: map[unrolled]reflect.Type{}}
	t.levels = unrollLevels(ref)
	unknown := map[string]bool{}
	var walk func(r *schema.TypeRef, seen map[*schema.Type]bool)
	walk = func(r *schema.TypeRef, seen map[*schema.Type]bool) {
		switch r.Kind {
		case schema.TypeSlice, schema.TypeMap:
			walk(r.Elem, seen)
		case schema.TypeExternal:
			if name := r.ImportPath + "." + r.Name; externals[name] == nil {
				unknown[name] = true
			}
		case schema.TypeNamed:
			if !seen[r.Named] {
				seen[r.Named] = true
				for _, f := range r.Named.Fields {
					walk(f.Type, seen)
				}
			}
		}
	}
	walk(ref, map[*schema.Type]bool{})
	for name := range unknown {
		t.unknown = append(t.unknown, name)
	}
	sortStrings(t.unknown)
	if t.rt, err = t.goType(ref); err != nil {
		return nil, err
	}
	return t, nil
}

// unrollLevels returns how many levels of struct types ref's Go type
// unrolls: as many as keep it within maxExpansion struct types (at least
// one, at most 512), or all of them when fewer do. Each lazy a value meets
// is decoded again from its JSON, so a value nested deeper than the levels
// costs a scan of its JSON per levels of nesting; more levels make that
// rarer.
func unrollLevels(ref *schema.TypeRef) int {
	memo := map[unrolled]int{}
	var size func(r *schema.TypeRef, levels int) int
	size = func(r *schema.TypeRef, levels int) int {
		switch r.Kind {
		case schema.TypeSlice, schema.TypeMap:
			return size(r.Elem, levels)
		case schema.TypeNamed:
			if levels == 0 {
				return 1
			}
			k := unrolled{r.Named, levels}
			if n, ok := memo[k]; ok {
				return n
			}
			n := 1
			for _, f := range r.Named.Fields {
				n = min(n+size(f.Type, levels-1), maxExpansion+1)
			}
			memo[k] = n
			return n
		}
		return 0
	}
	levels, prev := 1, -1
	for levels < 512 {
		n := size(ref, levels+1)
		if n > maxExpansion || n == prev {
			break // too large, or no struct type left to unroll
		}
		levels, prev = levels+1, n
	}
	return levels
}

// goType returns the Go type of r unrolled t.levels deep.
func (t *jsonType) goType(r *schema.TypeRef) (rt reflect.Type, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cannot build a Go type for %s: %v", r.String(), p)
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.of(r, t.levels), nil
}

// of builds r's Go type with struct types levels deep; t.mu is held.
func (t *jsonType) of(r *schema.TypeRef, levels int) reflect.Type {
	switch r.Kind {
	case schema.TypeBuiltin:
		return builtins[r.Builtin]
	case schema.TypeSlice:
		return reflect.SliceOf(t.of(r.Elem, levels))
	case schema.TypeMap:
		return reflect.MapOf(builtins["string"], t.of(r.Elem, levels))
	case schema.TypeExternal:
		if known := externals[r.ImportPath+"."+r.Name]; known != nil {
			return known
		}
		return rawMessage
	}
	if levels == 0 {
		t.lazy = true
		return lazyType
	}
	k := unrolled{r.Named, levels}
	if st, ok := t.built[k]; ok {
		return st
	}
	fields := make([]reflect.StructField, len(r.Named.Fields))
	for i, f := range r.Named.Fields {
		fields[i] = reflect.StructField{
			Name: f.GoName,
			Type: t.of(f.Type, levels-1),
			Tag:  reflect.StructTag(`json:` + strconv.Quote(f.JSONName)),
		}
	}
	st := reflect.StructOf(fields)
	t.built[k] = st
	return st
}

// decode decodes data as encoding/json decodes it into the generated type,
// with the error the generated codec returns: the same text, the generated
// types named as encoding/json names them (typeerror.go).
func (t *jsonType) decode(data []byte) (any, error) {
	p := reflect.New(t.rt)
	err := json.Unmarshal(data, p.Interface())
	if err != nil {
		err = t.typeError(err, t.ref, fieldPath{})
	} else if t.lazy {
		err = t.resolve(p.Elem(), t.ref, fieldPath{})
	}
	if err != nil {
		if !strings.HasPrefix(err.Error(), "json: ") {
			err = fmt.Errorf("json: %w", err)
		}
		return nil, err
	}
	return p.Elem().Interface(), nil
}
