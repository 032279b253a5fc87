package interp_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/golden/typed_params/want"
	"github.com/kvwatchgen/kvwatchgen/internal/live/interp"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

func bucketOf(t *testing.T, path string) *interp.Bucket {
	t.Helper()
	s, err := schema.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := interp.NewBucket(s.Package, s.Buckets[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func loadSrc(t *testing.T, src string) *interp.Bucket {
	t.Helper()
	s, err := schema.Load("kvwatch.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	b, err := interp.NewBucket(s.Package, s.Buckets[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Classify sorts keys into kinds, and parses typed parameters, as the
// generated parsers of golden/typed_params do: the same keys accepted, the
// same refused, on random keys built from the templates' pieces.
func TestClassifyAgreesWithGeneratedParsers(t *testing.T) {
	b := bucketOf(t, "../../../golden/typed_params/kvwatch.yaml")
	parsers := map[string]func(string) error{
		"Shard":   func(k string) error { _, err := typed.ParseShardKey(k); return err },
		"Replica": func(k string) error { _, err := typed.ParseReplicaKey(k); return err },
		"Global":  func(k string) error { _, err := typed.ParseGlobalKey(k); return err },
		"Epoch":   func(k string) error { _, err := typed.ParseEpochKey(k); return err },
	}
	pieces := []string{"region", "shard", "replica", "global", "epoch", "eu", "0", "7", "-3", "-0", "01", "+1",
		"18446744073709551615", "18446744073709551616", "9223372036854775808", "-9223372036854775808", "x"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		tokens := make([]string, 1+rng.IntN(6))
		for i := range tokens {
			tokens[i] = pieces[rng.IntN(len(pieces))]
		}
		key := strings.Join(tokens, ".")
		kind, params, err := b.Classify(key)
		for name, parse := range parsers {
			genErr := parse(key)
			mine := kind != nil && kind.Name() == name
			if mine && (err == nil) != (genErr == nil) {
				t.Fatalf("%s: %s: run time %v, generated %v", key, name, err, genErr)
			}
			if !mine && genErr == nil {
				t.Fatalf("%s: generated %s parses it, run time says %v", key, name, kind)
			}
		}
		if kind != nil && err == nil && len(params) != len(kind.Template.Params()) {
			t.Fatalf("%s: params %v", key, params)
		}
	}
}

// The codecs other than json decode as the runtime's do; an external type
// with codec text or binary is not checked, and one in a JSON value is
// checked as JSON only, except the standard library's the command knows.
func TestCodecsAndCoverage(t *testing.T) {
	b := bucketOf(t, "../../../golden/codecs/kvwatch.yaml")
	kinds := map[string]*interp.Kind{}
	for _, k := range b.Kinds {
		kinds[k.Name()] = k
	}
	stamp, _ := time.Date(2024, 1, 2, 3, 4, 5, 6, time.UTC).MarshalBinary()
	for _, tc := range []struct {
		kind, data, json string
		fails            bool
		coverage         interp.Coverage
	}{
		{"Text", "any \xff bytes", `"any \ufffd bytes"`, false, interp.Full},
		{"Blob", "\x00\x01", `"AAE="`, false, interp.Full},
		{"Stamp", string(stamp), `"2024-01-02T03:04:05.000000006Z"`, false, interp.Full},
		{"Stamp", "nope", "", true, interp.Full},
		{"Prefix", "not checked", `"not checked"`, false, interp.Unchecked},
		{"Addr", `"10.0.0.1"`, `"10.0.0.1"`, false, interp.Full},
		{"Addr", `"10.0.0.300"`, "", true, interp.Full},
		{"Raw", `{"a":[1]}`, `{"a":[1]}`, false, interp.Full},
		{"Raw", `{"a":`, "", true, interp.Full},
	} {
		k := kinds[tc.kind]
		if got := k.Coverage(); got != tc.coverage {
			t.Errorf("%s: coverage %v, want %v", tc.kind, got, tc.coverage)
		}
		v, err := k.Decode([]byte(tc.data))
		if (err != nil) != tc.fails {
			t.Errorf("%s: Decode(%q) error %v, want failure %v", tc.kind, tc.data, err, tc.fails)
			continue
		}
		if err != nil {
			continue
		}
		if got, _ := json.Marshal(v); string(got) != tc.json {
			t.Errorf("%s: Decode(%q) marshals to %s, want %s", tc.kind, tc.data, got, tc.json)
		}
	}
}

func TestUnknownExternalIsCheckedAsJSON(t *testing.T) {
	b := loadSrc(t, `version: 1
package: p
buckets:
  - bucket: b
    keys:
      - name: Thing
        key: thing.{id}
        value: Thing
types:
  Thing:
    fields:
      id: example.com/ids.ID
      n: int
`)
	k := b.Kinds[0]
	if k.Coverage() != interp.JSONOnly || strings.Join(k.Unknown(), ",") != "example.com/ids.ID" {
		t.Fatalf("coverage %v of %v", k.Coverage(), k.Unknown())
	}
	if _, err := k.Decode([]byte(`{"id":{"any":"thing"},"n":1}`)); err != nil {
		t.Errorf("unknown external: %v", err)
	}
	if _, err := k.Decode([]byte(`{"id":1,"n":"x"}`)); err == nil {
		t.Error("n as a string decoded")
	}
}
