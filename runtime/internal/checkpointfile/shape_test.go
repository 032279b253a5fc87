package checkpointfile

import (
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
	"time"
)

type generic[T any] struct{ V T }

// TypeName names a codec's type by package and name, the same for every
// instance of a generic type.
func TestTypeName(t *testing.T) {
	cases := []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[generic[int]](), "github.com/kvwatchgen/kvwatchgen/runtime/internal/checkpointfile.generic"},
		{reflect.TypeFor[generic[string]](), "github.com/kvwatchgen/kvwatchgen/runtime/internal/checkpointfile.generic"},
		{reflect.TypeFor[time.Duration](), "time.Duration"},
		{reflect.TypeFor[*time.Time](), "*time.Time"},
		{reflect.TypeFor[struct{}](), "struct {}"},
		{reflect.TypeFor[[]byte](), "[]uint8"},
		{nil, "<nil>"},
	}
	for _, c := range cases {
		if got := TypeName(c.t); got != c.want {
			t.Errorf("TypeName(%v) = %q, want %q", c.t, got, c.want)
		}
	}
}

// Value types, as a kind's value type changes between two builds.
type (
	base struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels,omitempty"`
		When   time.Time         `json:"when"`
	}
	renamedType struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels,omitempty"`
		When   time.Time         `json:"when"`
	}
	renamedTag struct {
		Name   string            `json:"title"`
		Labels map[string]string `json:"labels,omitempty"`
		When   time.Time         `json:"when"`
	}
	retyped struct {
		Name   []byte            `json:"name"`
		Labels map[string]string `json:"labels,omitempty"`
		When   time.Time         `json:"when"`
	}
	reordered struct {
		Labels map[string]string `json:"labels,omitempty"`
		Name   string            `json:"name"`
		When   time.Time         `json:"when"`
	}
	elemChanged struct {
		Name   string         `json:"name"`
		Labels map[string]int `json:"labels,omitempty"`
		When   time.Time      `json:"when"`
	}
	marshalerChanged struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels,omitempty"`
		When   netip.Addr        `json:"when"`
	}
	embedded struct {
		base
		Extra int `json:"extra"`
	}
	embeddedChanged struct {
		renamedTag
		Extra int `json:"extra"`
	}
	tree struct {
		Value    int     `json:"value"`
		Children []*tree `json:"children"`
	}
	rawHolder struct {
		Raw json.RawMessage `json:"raw"`
	}
)

// Shape changes with each change encoding/json sees of a type (and with
// its name), and not with the others.
func TestShape(t *testing.T) {
	shape := func(v any) string { return Shape(reflect.TypeOf(v)) }
	if got := shape(base{}); len(got) != 16 || got != shape(base{}) {
		t.Errorf("Shape(base) = %q: want 16 hex digits, the same each time", got)
	}
	cases := []struct {
		name string
		a, b any
		same bool
	}{
		{"a type renamed", base{}, renamedType{}, false}, // named types count by name
		{"a tag renamed", base{}, renamedTag{}, false},
		{"a field retyped", base{}, retyped{}, false},
		{"fields reordered", base{}, reordered{}, false},
		{"a map's element type", base{}, elemChanged{}, false},
		{"a marshaler replaced", base{}, marshalerChanged{}, false},
		{"an embedded type changed", embedded{}, embeddedChanged{}, false},
		{"a pointer", base{}, &base{}, false},
		{"a slice and an array", []int{}, [1]int{}, false},
		{"array lengths", [1]int{}, [2]int{}, false},
		{"int sizes", int32(0), int64(0), false},
		{"the same recursive type", tree{}, tree{}, true},
		{"the same unnamed struct", struct{ A int }{}, struct{ A int }{}, true},
		{"unnamed structs with other tags", struct {
			A int `json:"a"`
		}{}, struct {
			A int `json:"b"`
		}{}, false},
		{"unnamed structs, an unexported field more", struct{ A int }{}, struct {
			A int
			b int
		}{}, true},
		{"a RawMessage and bytes", rawHolder{}, struct {
			Raw []byte `json:"raw"`
		}{}, false},
	}
	for _, c := range cases {
		if got := shape(c.a) == shape(c.b); got != c.same {
			t.Errorf("%s: %T and %T have the same shape: %v, want %v", c.name, c.a, c.b, got, c.same)
		}
	}
}
