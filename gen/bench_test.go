package gen_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/gen"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// LargeSchema returns a schema of buckets × kinds, each kind with two
// parameters and a struct value, each bucket with two scopes.
func largeSchema(buckets, kinds int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\npackage: large\nbuckets:\n")
	for i := range buckets {
		fmt.Fprintf(&b, "  - bucket: bucket%d\n    keys:\n", i)
		for k := range kinds {
			fmt.Fprintf(&b, "      - name: B%dKind%d\n        key: tenant.{tenant}.k%d.{id:uint}\n        value: Value%d\n", i, k, k, k%5)
		}
		fmt.Fprintf(&b, "    scopes:\n      - name: Tenant\n        prefix: tenant.{tenant}\n")
		fmt.Fprintf(&b, "      - name: First\n        prefix: tenant.{tenant}.k0.{id}\n")
	}
	b.WriteString("types:\n")
	for v := range 5 {
		fmt.Fprintf(&b, "  Value%d:\n    fields:\n      name: string\n      count: int\n      tags: \"[]string\"\n      at: time\n", v)
	}
	return []byte(b.String())
}

// BenchmarkGenerate measures load + generate of a 100-bucket × 10-kind
// schema: what one `go generate` costs (the target is well under a second).
func BenchmarkGenerate(b *testing.B) {
	src := largeSchema(100, 10)
	b.ReportAllocs()
	for b.Loop() {
		s, err := schema.Load("kvwatch.yaml", src)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := gen.Generate(s); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLargeSchemaGenerates keeps the benchmark's input valid.
func TestLargeSchemaGenerates(t *testing.T) {
	s, err := schema.Load("kvwatch.yaml", largeSchema(100, 10))
	if err != nil {
		t.Fatal(err)
	}
	files, err := gen.Generate(s)
	if err != nil || len(files) != 101 {
		t.Fatalf("%d files, %v", len(files), err)
	}
}
