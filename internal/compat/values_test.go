package compat

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// builtinSamples are, per builtin, the Go type the generator writes and
// values that reach the edges of what it holds: what a narrower reader
// cannot take.
var builtinSamples = map[string]struct {
	typ    reflect.Type
	values []any
}{
	"string":   {reflect.TypeFor[string](), []any{"s-1", "", "2026-12-02T10:00:00Z", "AQID", "12"}},
	"bool":     {reflect.TypeFor[bool](), []any{true, false}},
	"int":      {reflect.TypeFor[int](), []any{0, -1, 1<<60 + 1, math.MinInt64, math.MaxInt64}},
	"int32":    {reflect.TypeFor[int32](), []any{int32(0), int32(-(1 << 24) - 1), int32(math.MinInt32), int32(math.MaxInt32)}},
	"int64":    {reflect.TypeFor[int64](), []any{int64(0), int64(1<<60 + 1), int64(math.MinInt64)}},
	"uint":     {reflect.TypeFor[uint](), []any{uint(0), uint(math.MaxUint64), uint(1 << 63)}},
	"uint32":   {reflect.TypeFor[uint32](), []any{uint32(0), uint32(math.MaxUint32), uint32(1<<24 + 1)}},
	"uint64":   {reflect.TypeFor[uint64](), []any{uint64(0), uint64(math.MaxUint64)}},
	"float32":  {reflect.TypeFor[float32](), []any{float32(1.5), float32(0.1), float32(math.MaxFloat32), float32(-3.25e-20)}},
	"float64":  {reflect.TypeFor[float64](), []any{1.5, 0.123456789012345, 1e300, 2.0}},
	"bytes":    {reflect.TypeFor[[]byte](), []any{[]byte{1, 2, 3}, []byte(nil)}},
	"time":     {reflect.TypeFor[time.Time](), []any{time.Date(2026, 12, 2, 10, 0, 0, 123, time.UTC)}},
	"duration": {reflect.TypeFor[time.Duration](), []any{time.Duration(1 << 40), -time.Second, time.Duration(1<<60 + 1)}},
	"json":     {reflect.TypeFor[json.RawMessage](), []any{json.RawMessage(`{"x":1}`), json.RawMessage(`"s"`), json.RawMessage(`12`)}},
}

// TestBuiltinRulesAgreeWithEncodingJSON checks the rule for every pair of
// builtins against encoding/json itself: reads(w, r) says a reader of r
// reads what a writer of w writes exactly when every sample of w,
// marshaled, unmarshals into r without error and marshals back to the
// same JSON. The generated decoders decode as encoding/json does (the
// generator's fuzz test holds them to it).
func TestBuiltinRulesAgreeWithEncodingJSON(t *testing.T) {
	for _, w := range schema.Builtins {
		for _, r := range schema.Builtins {
			ws, rs := builtinSamples[w], builtinSamples[r]
			if ws.typ == nil || rs.typ == nil {
				t.Fatalf("no samples for %s or %s", w, r)
			}
			rule := reads(&schema.TypeRef{Kind: schema.TypeBuiltin, Builtin: w}, &schema.TypeRef{Kind: schema.TypeBuiltin, Builtin: r})
			var failure string
			for _, v := range ws.values {
				data, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				p := reflect.New(rs.typ)
				if err := json.Unmarshal(data, p.Interface()); err != nil {
					failure = string(data) + ": " + err.Error()
					break
				}
				back, err := json.Marshal(p.Elem().Interface())
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(back, data) && !(string(data) == "null" && len(back) > 0) {
					failure = string(data) + " reads back as " + string(back)
					break
				}
			}
			switch {
			case rule == "" && failure != "":
				t.Errorf("%s -> %s: the rule says it reads, encoding/json says %s", w, r, failure)
			case rule != "" && failure == "":
				t.Errorf("%s -> %s: the rule says %q, but every sample reads back the same", w, r, rule)
			}
		}
	}
}
