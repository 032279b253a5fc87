package gen_test

import (
	"testing"

	"github.com/kvwatchgen/kvwatchgen/gen"
	"github.com/kvwatchgen/kvwatchgen/internal/benchschema"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// BenchmarkGenerate measures load + generate of a 100-bucket × 10-kind
// schema: what one `go generate` costs (the target is well under a second).
func BenchmarkGenerate(b *testing.B) {
	src := benchschema.Large(100, 10)
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
	s, err := schema.Load("kvwatch.yaml", benchschema.Large(100, 10))
	if err != nil {
		t.Fatal(err)
	}
	files, err := gen.Generate(s)
	if err != nil || len(files) != 101 {
		t.Fatalf("%d files, %v", len(files), err)
	}
}
