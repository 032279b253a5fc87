package gen_test

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/gen"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// The runtime of one module supports the code its generator writes (both
// read the version from internal/version; the supported range is the
// runtime's own).
func TestRuntimeSupportsTheGeneratedVersion(t *testing.T) {
	if gen.GenVersion < kvwatchimpl.MinVersion || gen.GenVersion > kvwatchimpl.MaxVersion {
		t.Fatalf("the runtime does not support the code this generator writes")
	}
}

func load(t *testing.T, path string) *schema.Schema {
	t.Helper()
	s, err := schema.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Generating twice gives the same bytes, and every file starts with the
// header and parses as Go.
func TestGenerateIsDeterministic(t *testing.T) {
	first, err := gen.Generate(load(t, "../golden/multi_bucket/kvwatch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, err := gen.Generate(load(t, "../golden/multi_bucket/kvwatch.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(first) {
			t.Fatalf("%d files, then %d", len(first), len(again))
		}
		for i := range first {
			if first[i].Name != again[i].Name || !bytes.Equal(first[i].Content, again[i].Content) {
				t.Fatalf("%s differs between two runs", first[i].Name)
			}
		}
	}
	for _, f := range first {
		if !bytes.HasPrefix(f.Content, []byte(gen.Header+"\n")) {
			t.Errorf("%s does not start with the header", f.Name)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), f.Name, f.Content, parser.AllErrors); err != nil {
			t.Errorf("%s does not parse: %v", f.Name, err)
		}
	}
}

// Reordering the mappings of a schema (fields of a bucket, of a key, the
// order of types) changes nothing in the output.
func TestGenerateIgnoresMappingOrder(t *testing.T) {
	a := `version: 1
package: p
buckets:
  - bucket: b
    doc: Bucket b.
    keys:
      - name: K
        key: k.{id}
        value: T
        codec: json
    scopes:
      - name: ID
        prefix: k.{id}
types:
  T:
    doc: T.
    fields:
      x: U
  U:
    fields:
      y: string
`
	b := `types:
  U:
    fields:
      y: string
  T:
    fields:
      x: U
    doc: T.
buckets:
  - scopes:
      - prefix: k.{id}
        name: ID
    keys:
      - codec: json
        value: T
        key: k.{id}
        name: K
    doc: Bucket b.
    bucket: b
package: p
version: 1
`
	ga, gb := generate(t, a), generate(t, b)
	if len(ga) != len(gb) {
		t.Fatalf("%d files, then %d when the schema's mappings are reordered", len(ga), len(gb))
	}
	for i := range ga {
		if ga[i].Name != gb[i].Name {
			t.Errorf("file %d is %s, then %s when the schema's mappings are reordered", i, ga[i].Name, gb[i].Name)
			continue
		}
		if !bytes.Equal(ga[i].Content, gb[i].Content) {
			t.Errorf("%s differs when the schema's mappings are reordered", ga[i].Name)
		}
	}
}

func generate(t *testing.T, src string) []gen.File {
	t.Helper()
	s, err := schema.Load("kvwatch.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	files, err := gen.Generate(s)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The committed example is what the generator produces now (go generate
// was run after the last change).
func TestExampleIsCurrent(t *testing.T) {
	s := load(t, "../examples/fleet/fleetkv/kvwatch.yaml")
	folder, err := gen.InspectFolder("../examples/fleet/fleetkv", s.Package)
	if err != nil {
		t.Fatal(err)
	}
	files, err := gen.Generate(s, gen.Options{NoPackageDoc: folder.PackageDoc != ""})
	if err != nil {
		t.Fatal(err)
	}
	problems, err := gen.Check("../examples/fleet/fleetkv", files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("examples/fleet/fleetkv: %s (run go generate ./examples/fleet/fleetkv)", p)
	}
	if _, err := os.Stat("../examples/fleet/fleetkv/generate.go"); err != nil {
		t.Errorf("the example lost its go:generate line: %v", err)
	}
}
