package jsonvalues

// Hand-written: the run-time interpretation of the schema
// (internal/live/interp, what kvwatchgen verify and watch decode values
// with) against the generated decoders, on the same inputs: the seeds and
// fuzz corpus of decode_test.go and what json.Marshal writes. Both must
// accept or both refuse, and what they accept must be the same value
// (compared as the JSON it marshals to, the run-time value being of a type
// built with reflect).

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/internal/live/interp"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// generated is one kind's generated codec, as Decode returns any.
type generated struct {
	kind   string
	decode func([]byte) (any, error)
}

func generatedOf[V any](kind string, c kvwatchimpl.Codec[V]) generated {
	return generated{kind, func(b []byte) (any, error) {
		v, err := c.Decode(b)
		return v, err
	}}
}

func generatedKinds() []generated {
	return []generated{
		generatedOf("Everything", kvwValuesEverythingKind.Codec),
		generatedOf("Names", kvwValuesNamesKind.Codec),
		generatedOf("Wide", kvwValuesWideKind.Codec),
		generatedOf("List", kvwValuesListKind.Codec),
		generatedOf("Count", kvwValuesCountKind.Codec),
		generatedOf("Stamp", kvwValuesStampKind.Codec),
	}
}

// interpreted returns the run-time kinds of this case's schema, by name.
func interpreted(t testing.TB) map[string]*interp.Kind {
	t.Helper()
	s, err := schema.LoadFile("../kvwatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := interp.NewBucket(s.Package, s.Buckets[0])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*interp.Kind{}
	for _, k := range b.Kinds {
		if k.Coverage() != interp.Full {
			t.Fatalf("kind %s is checked %s; this case's types are all known", k.Name(), k.Coverage())
		}
		out[k.Name()] = k
	}
	return out
}

// checkInterpretedAgrees checks one input against every kind.
func checkInterpretedAgrees(t *testing.T, kinds map[string]*interp.Kind, data []byte) {
	t.Helper()
	for _, g := range generatedKinds() {
		want, wantErr := g.decode(data)
		got, err := kinds[g.kind].Decode(data)
		if (err == nil) != (wantErr == nil) {
			t.Errorf("%s: %.200q: run time: %v; generated: %v", g.kind, data, err, wantErr)
			continue
		}
		if err != nil {
			// The same text: verify and watch print the error the
			// generated code gives (docs/operations.md).
			if err.Error() != wantErr.Error() {
				t.Errorf("%s: %.200q: run-time error\n%.500s\ngenerated\n%.500s", g.kind, data, err, wantErr)
			}
			continue
		}
		gotJSON, err1 := json.Marshal(got)
		wantJSON, err2 := json.Marshal(want)
		if err1 != nil || err2 != nil || string(gotJSON) != string(wantJSON) {
			t.Errorf("%s: %.200q: run time decoded\n%.500s (%v)\ngenerated\n%.500s (%v)", g.kind, data, gotJSON, err1, wantJSON, err2)
		}
	}
}

// recursiveSeeds repeat keys around the recursive type: encoding/json
// decodes a repeated slice into the elements it already has, merging
// structs, and into elements a shorter one cut off but left in the slice's
// capacity; the run-time type's stand-in for Inner below the levels it
// unrolls must do the same (interp's lazy). deeper puts each of them below
// those levels too.
var recursiveSeeds = deeper([]string{
	`{"inner":{"tree":[{"name":"a","tree":[{"name":"x"}]}],"tree":[{"tree":[]}]}}`,
	`{"inner":{"tree":[{"name":"a"},{"name":"b"}],"tree":[{}],"tree":[{},{"tree":null}]}}`,
	`{"inner":{"tree":[{"tree":[{"name":"deep"}]}],"tree":[{"tree":[{"tree":[]}]}]}}`,
	`{"inners":[{"tree":[{"name":"a"}],"tree":[{"name":1}]}]}`,
	`{"by_name":{"k":{"tree":[{"name":"a"}]},"k":{"tree":[{"tree":[{}]}]}}}`,
	`{"inner":{"tree":[null,{"name":"b"}],"tree":[{"name":"c"},null]}}`,
	`{"inner":{"tree":[{"name":"a","NAME":"b","Tree":[{}]}]}}`,
	`{"inner":{"tree":[{"tree":"x"}]}}`,
})

// deeper returns seeds and, for each that starts with {"inner":, the same
// Inner value 600 levels of tree deeper: more than any run-time type
// unrolls.
func deeper(seeds []string) []string {
	out := slices.Clone(seeds)
	for _, s := range seeds {
		if inner, ok := strings.CutPrefix(s, `{"inner":`); ok {
			out = append(out, `{"inner":`+strings.Repeat(`{"tree":[`, 600)+strings.TrimSuffix(inner, "}")+strings.Repeat(`]}`, 600)+`}`)
		}
	}
	return out
}

// The run-time interpretation agrees with the generated decoders on every
// seed of the fast path's tests, and on repeated keys around the
// recursive type.
func TestInterpretedAgreesOnSeeds(t *testing.T) {
	kinds := interpreted(t)
	for _, s := range append(slices.Clone(seeds), recursiveSeeds...) {
		checkInterpretedAgrees(t, kinds, []byte(s))
	}
}

// ... and on what json.Marshal writes of random values, deep trees of the
// recursive type included.
func TestInterpretedAgreesOnMarshalledValues(t *testing.T) {
	kinds := interpreted(t)
	rng := rand.New(rand.NewPCG(3, 5))
	for range 500 {
		data, err := json.Marshal(randomEverything(rng, 1+rng.IntN(6)))
		if err != nil {
			t.Fatal(err)
		}
		checkInterpretedAgrees(t, kinds, data)
	}
}

// FuzzInterpretedAgrees: go test ./golden/json_values/want -fuzz FuzzInterpretedAgrees
func FuzzInterpretedAgrees(f *testing.F) {
	for _, s := range append(slices.Clone(seeds), recursiveSeeds...) {
		f.Add([]byte(s))
	}
	kinds := interpreted(f)
	f.Fuzz(func(t *testing.T, data []byte) { checkInterpretedAgrees(t, kinds, data) })
}
