package jsonvalues

// Hand-written tests of the generated JSON decoders (kvwDecode*, and the
// Fast decoders of the non-struct kinds): the fast path must read what
// json.Marshal writes, and never disagree with encoding/json.

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// decoder decodes with one kind's codec: fast path alone, the codec's
// Decode, and encoding/json alone.
type decoder struct {
	name   string
	fast   func([]byte) (any, bool)
	decode func([]byte) (any, error)
	std    func([]byte) (any, error)
}

func decoderOf[V any](name string, c kvwatchimpl.Codec[V]) decoder {
	jc := c.(kvwatchimpl.JSON[V])
	return decoder{
		name: name,
		fast: func(b []byte) (any, bool) { return jc.DecodeFast(b) },
		decode: func(b []byte) (any, error) {
			v, err := jc.Decode(b)
			return v, err
		},
		std: func(b []byte) (any, error) {
			var v V
			err := json.Unmarshal(b, &v)
			return v, err
		},
	}
}

func decoders() []decoder {
	return []decoder{
		decoderOf("Everything", kvwValuesEverythingKind.Codec),
		decoderOf("Names", kvwValuesNamesKind.Codec),
		decoderOf("Wide", kvwValuesWideKind.Codec),
		decoderOf("List", kvwValuesListKind.Codec),
		decoderOf("Count", kvwValuesCountKind.Codec),
		decoderOf("Inner", kvwatchimpl.Codec[Inner](kvwatchimpl.JSON[Inner]{Fast: kvwDecodeInner})),
	}
}

// checkAgrees checks one input against every decoder: where the fast path
// accepts it, encoding/json accepts it too and decodes the same value; and
// the codec's Decode always equals encoding/json, error or not.
func checkAgrees(t *testing.T, data []byte) {
	t.Helper()
	for _, d := range decoders() {
		want, stdErr := d.std(data)
		if got, ok := d.fast(data); ok {
			if stdErr != nil {
				t.Errorf("%s: fast path accepted %q, encoding/json: %v", d.name, data, stdErr)
			} else if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: fast path decoded %q as\n%#v\nencoding/json as\n%#v", d.name, data, got, want)
			}
		}
		got, err := d.decode(data)
		switch {
		case (err == nil) != (stdErr == nil):
			t.Errorf("%s: Decode(%q) error %v, encoding/json %v", d.name, data, err, stdErr)
		case err == nil && !reflect.DeepEqual(got, want):
			t.Errorf("%s: Decode(%q) =\n%#v\nencoding/json\n%#v", d.name, data, got, want)
		}
	}
}

// seeds are inputs at the edges of the fast path: what it must decline
// (escapes, case-folded or repeated keys, numbers its types reject,
// invalid JSON) and what it must read like encoding/json.
var seeds = []string{
	`{}`, `null`, " \t{ \"s\" : \"x\" }\r\n", `{"s":"a\"b"}`, `{"s":"\u00e9"}`, `{"s":"é"}`,
	"{\"s\":\"\x01\"}", "{\"s\":\"\xff\"}", `{"S":"x"}`, `{"s":"x","s":"y"}`, `{"s":null}`, `{"s":1}`,
	`{"i":1.0}`, `{"i":1e2}`, `{"i":-0}`, `{"i":01}`, `{"i":-}`, `{"i":9223372036854775807}`,
	`{"i":9223372036854775808}`, `{"i":-9223372036854775808}`, `{"i":-9223372036854775809}`,
	`{"i32":2147483648}`, `{"i32":-2147483648}`, `{"u":-1}`, `{"u":-0}`, `{"u64":18446744073709551615}`,
	`{"u64":18446744073709551616}`, `{"u32":4294967296}`, `{"f32":3.4e39}`, `{"f32":16777217}`,
	`{"f64":1e400}`, `{"f64":-0.0}`, `{"f64":1.5E-3}`, `{"f64":.5}`, `{"f64":1.}`, `{"f64":1e}`,
	`{"f64":0.1e+2}`, `{"f64":00.1}`, `{"b":true}`, `{"b":tru}`, `{"b":truex}`, `{"b":null}`, `{"b":false }`,
	`{"strs":null}`, `{"strs":[]}`, `{"strs":["a","b"]}`, `{"strs":["a",]}`, `{"strs":[,]}`, `{"strs":[1]}`,
	`{"grid":[[1,2],[],null]}`, `{"grid":[[1,2],[3]],"grid":[[4]]}`,
	`{"by_name":{"a":{"name":"x"},"a":{"tree":[]}}}`, `{"by_name":{}}`, `{"by_name":null}`,
	`{"by_name":{"a\n":{}}}`, `{"inner":{"tree":[{"tree":[{}]}]}}`, `{"inner":{"name":"a","NAME":"b"}}`,
	`{"inners":[{"name":"a"},null,{}]}`, `{"weights":{"w":[1.5,2e-3],"v":null}}`,
	`{"raw":"aGk="}`, `{"raw":"!!"}`, `{"raw":null}`, `{"at":"2024-01-02T03:04:05.123+02:00"}`, `{"at":null}`,
	`{"at":"bad"}`, `{"d":1000}`, `{"d":1.5}`, `{"j":{"x":[1,"]"]}}`, `{"j":null}`, `{"j":[1,2}`,
	`{"addr":"1.2.3.4"}`, `{"addr":"x"}`, `{"addr":null}`,
	`{"unknown":{"a":[1,2,{"b":"}\"]"}]}}`, `{"unknown":[1,,2]}`, `{"unknown":tru}`, `{"unknown":"\ud800"}`,
	`{"UNKNOWN":1}`, `{"S ":1}`, `{"Strs":["a"]}`, `{"x-y":"1","a b":"2"}`, `{"X-Y":"1"}`, `{"a B":"1"}`,
	`{"s":"x"} x`, `{"s":"x"}}`, `{"s":"x"`, `{"s"}`, `{"s":}`, `{,"s":"x"}`, `{"s":"x",}`, `[1,2]`,
	`"str"`, `1`, ``, ` `, `{"plain":"x"}`, `{"größe":1}`, `{"STATE":"x"}`, `{"ſtate":"x"}`, `{"state":"x"}`,
	`{"f69":1,"f0":2}`, `{"f64":1,"f64":2}`, `{"f0":1,"f0":2}`, `[1,2,3]`, `[]`, `[2147483648]`, `[1,null]`,
	`7`, `-7`, `4294967296`, `"2024-01-02T03:04:05Z"`,
	`{"s":"a\u003cb\u0026c\u003e\n\t\/\\\"\b\f\r"}`, `{"s":"\u00e9\u2028\ud83d\ude00"}`, `{"s":"\ud83d"}`,
	`{"s":"\ud83dx"}`, `{"s":"\ud83d\u0041"}`, `{"s":"\ude00\ud83d"}`, `{"s":"\u12"}`, `{"s":"\u12G4"}`, `{"s":"\x"}`,
	`{"s":"\'"}`, `{"s":"\`, `{"s":"\u"}`, "{\"s\":\"\xff\\n\"}", "{\"s\":\"\\n\xff\"}", "{\"s\":\"\\n\x01\"}",
	`{"s":"\u0000"}`, `{"strs":["\"","\u003c"]}`, `{"by_name":{"\u0061":{}}}`, `{"\u0073":"x"}`,
	strings.Repeat(`{"tree":[`, 6000) + strings.Repeat(`]}`, 6000),
	// Depth as encoding/json counts it, over the whole input, also inside
	// values handed to it (json, unknown keys): 10,000 levels pass, one
	// more does not.
	`{"j":` + strings.Repeat(`[`, 9999) + strings.Repeat(`]`, 9999) + `}`,
	`{"j":` + strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000) + `}`,
	`{"x":` + strings.Repeat(`[`, 9999) + strings.Repeat(`]`, 9999) + `}`,
	`{"x":` + strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000) + `}`,
	`{"inner":{"zz":` + strings.Repeat(`[`, 9998) + strings.Repeat(`]`, 9998) + `}}`,
	`{"inner":{"zz":` + strings.Repeat(`[`, 9999) + strings.Repeat(`]`, 9999) + `}}`,
	strings.Repeat(`{"tree":[`, 100) + strings.Repeat(`]}`, 100),
}

// The fast path agrees with encoding/json on every seed.
func TestFastPathAgreesOnEdgeCases(t *testing.T) {
	for _, s := range seeds {
		checkAgrees(t, []byte(s))
	}
}

// The fast path declines the inputs it must leave to encoding/json, and
// reads the plain ones itself: a fast path that declined everything would
// agree with encoding/json too.
func TestFastPathDeclinesWhatItMust(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		fast       bool
	}{
		{"Everything", `{"s":"x","i":-3,"strs":["a"],"by_name":{"k":{"tree":[]}}}`, true},
		{"Everything", `{"s":"a\"b\u003c"}`, true},                // escapes
		{"Everything", `{"s":"\ud800"}`, false},                   // lone surrogate
		{"Everything", `{"\u0073":"x"}`, true},                    // escaped key
		{"Everything", `{"\u0053":"x"}`, false},                   // escaped key, case-folded
		{"Everything", `{"S":"x"}`, false},                        // case-folded key
		{"Everything", `{"s":"x","s":"y"}`, false},                // repeated key
		{"Everything", `{"unknown":[1,{"a":"b"}],"s":"x"}`, true}, // skipped
		{"Everything", `{"unknown":[1,,2]}`, false},               // invalid JSON skipped
		{"Everything", `{"i":1.0}`, false},                        // not an int
		{"Names", `{"plain":"x"}`, true},
		{"Names", `{"other":"x"}`, false}, // a field the switch leaves out may match it
		{"Names", `{"größe":1}`, false},
		{"Wide", `{"f0":1,"f69":2}`, true},
		{"Wide", `{"f69":1,"f69":2}`, false},
		{"List", `[1,-2,3]`, true},
		{"List", `[2147483648]`, false},
		{"Count", ` 4294967295 `, true},
		{"Count", `4294967296`, false},
	} {
		var d decoder
		for _, c := range decoders() {
			if c.name == tc.name {
				d = c
			}
		}
		if _, ok := d.fast([]byte(tc.data)); ok != tc.fast {
			t.Errorf("%s: fast path took %s: %v, want %v", tc.name, tc.data, ok, tc.fast)
		}
	}
}

// What json.Marshal writes takes the fast path and decodes to what
// encoding/json decodes.
func TestFastPathReadsMarshalledValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	d := decoders()[0]
	for range 2000 {
		v := randomEverything(rng, 3)
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := d.fast(data)
		if !ok {
			t.Fatalf("fast path declined %s", data)
		}
		want, err := d.std(data)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("fast path decoded %s as\n%#v\nencoding/json as\n%#v (%v)", data, got, want, err)
		}
	}
}

// randomEverything returns a value with every field set at random, strings
// with characters json.Marshal writes as they are and characters it
// escapes (<, >, &, quotes, control characters, U+2028).
func randomEverything(rng *rand.Rand, depth int) Everything {
	str := func() string {
		const chars = "abcXYZ019 -_./:é€<>&\"\\\n\t\u2028😀"
		runes := []rune(chars)
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteRune(runes[rng.IntN(len(runes))])
		}
		return b.String()
	}
	v := Everything{
		S: str(), B: rng.IntN(2) == 1, I: int(rng.Uint64()), I32: int32(rng.Uint32()), I64: int64(rng.Uint64()),
		U: uint(rng.Uint64()), U32: rng.Uint32(), U64: rng.Uint64(),
		F32: float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(60)-30))),
		F64: rng.NormFloat64() * math.Pow(10, float64(rng.IntN(600)-300)),
		D:   time.Duration(rng.Int64()), At: time.Unix(rng.Int64N(1<<34), rng.Int64N(1e9)).UTC(),
		XY: str(), AB: str(), Inner: randomInner(rng, depth, str),
	}
	if rng.IntN(2) == 1 {
		v.Raw = []byte(str())
		v.J, _ = json.Marshal(map[string]any{"k": []any{rng.IntN(100), str()}})
		v.Addr = netip.AddrFrom4([4]byte{10, byte(rng.IntN(256)), 0, 1})
	}
	for range rng.IntN(4) {
		v.Strs = append(v.Strs, str())
		v.Grid = append(v.Grid, []int{rng.IntN(1000) - 500})
		v.Inners = append(v.Inners, randomInner(rng, depth-1, str))
	}
	if rng.IntN(3) > 0 {
		v.ByName = map[string]Inner{}
		v.Weights = map[string][]float32{}
		for range rng.IntN(3) {
			v.ByName[str()] = randomInner(rng, depth-1, str)
			v.Weights[str()] = []float32{rng.Float32(), -rng.Float32()}
		}
	}
	return v
}

func randomInner(rng *rand.Rand, depth int, str func() string) Inner {
	in := Inner{Name: str()}
	for range rng.IntN(3) {
		if depth > 0 {
			in.Tree = append(in.Tree, randomInner(rng, depth-1, str))
		}
	}
	return in
}

// FuzzFastPathAgrees: go test ./golden/json_values/want -fuzz FuzzFastPathAgrees
func FuzzFastPathAgrees(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkAgrees(t, data) })
}
