package benchkv

import (
	"encoding/json"
	"testing"
)

// benchItemJSON is a value of the bench's bucket as the bench writes it:
// about 200 bytes.
var benchItemJSON, _ = json.Marshal(Item{Name: "item-1", Owner: "team-1", CIDR: "10.0.1.0/24", NextHop: "10.0.0.1",
	Metric: 1, Enabled: true, Version: 3, Tags: []string{"a", "b"}, Note: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})

// BenchmarkDecodeItem decodes one value the way the generated watcher does
// (the JSON codec with its generated fast path) and with encoding/json
// alone (what kv.WatchFiltered's readers in the bench do):
//
//	go test ./bench/benchkv -run XXX -bench DecodeItem -benchmem
func BenchmarkDecodeItem(b *testing.B) {
	b.Run("generated", func(b *testing.B) {
		codec := kvwBenchItemKind.Codec
		b.ReportAllocs()
		for b.Loop() {
			if _, err := codec.Decode(benchItemJSON); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v Item
			if err := json.Unmarshal(benchItemJSON, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The bench's values take the fast path: otherwise the benchmark above
// would measure encoding/json twice.
func TestBenchItemTakesTheFastPath(t *testing.T) {
	got, ok := kvwBenchItemKind.Codec.(interface{ DecodeFast([]byte) (Item, bool) }).DecodeFast(benchItemJSON)
	if !ok || got.Name != "item-1" || len(got.Tags) != 2 {
		t.Fatalf("DecodeFast = %+v, %v", got, ok)
	}
}
