package interp

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	jsonvalues "github.com/kvwatchgen/kvwatchgen/golden/json_values/want"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// The lazies below the levels a type unrolls decode as encoding/json
// decodes the generated type, with the fewest levels (where nearly every
// Inner is a lazy): on random Inner trees whose keys repeat, whose slices
// shrink and grow again and hold nulls (encoding/json reuses slice
// elements: a repeated key merges into the elements it left). The one
// difference allowed is the known one (lazy.go): a type error in a part of
// the value that a repeated key replaced, below the levels, is not seen;
// never the other way round.
func TestLaziesDecodeAsEncodingJSON(t *testing.T) {
	s, err := schema.LoadFile("../../../golden/json_values/kvwatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var everything *schema.Kind
	for _, k := range s.Buckets[0].Kinds {
		if k.GoName == "Everything" {
			everything = k
		}
	}
	rng := rand.New(rand.NewPCG(8, 9))
	missed := 0
	for levels := 1; levels <= 3; levels++ {
		jt, err := newJSONType("jsonvalues", everything.Value)
		if err != nil {
			t.Fatal(err)
		}
		jt.levels, jt.built = levels, map[unrolled]reflect.Type{}
		if jt.rt, err = jt.goType(everything.Value); err != nil {
			t.Fatal(err)
		}
		for range 2000 {
			data := []byte(`{"inners":[` + randomInnerJSON(rng, 4) + `],"inner":` + randomInnerJSON(rng, 5) + `}`)
			var want jsonvalues.Everything
			wantErr := json.Unmarshal(data, &want)
			got, err := jt.decode(data)
			var typeErr *json.UnmarshalTypeError
			if err == nil && errors.As(wantErr, &typeErr) && replaced(data) {
				missed++
				continue
			}
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("levels %d: %s: run time %v, encoding/json %v", levels, data, err, wantErr)
			}
			if err != nil {
				continue
			}
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(want)
			if string(gotJSON) != string(wantJSON) {
				t.Fatalf("levels %d: %s:\nrun time %s\nencoding/json %s", levels, data, gotJSON, wantJSON)
			}
		}
	}
	t.Logf("type errors in replaced parts not seen: %d of 6000 values", missed)
}

// replaced reports whether data repeats a key of one object, or gives a
// tree after another: what can replace a part of the value.
func replaced(data []byte) bool {
	return strings.Count(string(data), `"tree"`) > 1
}

// randomInnerJSON writes an Inner object, sometimes with a key repeated or
// in another case, a tree of random length, null elements, and now and
// then a value of the wrong type.
func randomInnerJSON(rng *rand.Rand, depth int) string {
	if depth == 0 || rng.IntN(8) == 0 {
		return []string{"null", "{}", `{"name":"leaf"}`}[rng.IntN(3)]
	}
	var fields []string
	for range 1 + rng.IntN(3) {
		switch rng.IntN(5) {
		case 0:
			fields = append(fields, fmt.Sprintf(`"name":"n%d"`, rng.IntN(10)))
		case 1:
			fields = append(fields, `"NAME":"upper"`)
		case 2:
			if rng.IntN(20) == 0 {
				fields = append(fields, `"name":7`) // a type error
			} else {
				fields = append(fields, `"tree":null`)
			}
		default:
			elems := make([]string, rng.IntN(4))
			for i := range elems {
				elems[i] = randomInnerJSON(rng, depth-1)
			}
			fields = append(fields, `"tree":[`+strings.Join(elems, ",")+`]`)
		}
	}
	return "{" + strings.Join(fields, ",") + "}"
}
