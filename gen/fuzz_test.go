package gen_test

import (
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/gen"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// FuzzLoad feeds arbitrary schema files to the loader and the generator:
// neither may panic, an invalid schema must come back as an ErrorList with
// positions, and a valid one must generate Go that parses. Its seeds are
// every golden input, so `go test` runs them all; `go test -fuzz=FuzzLoad
// ./gen` explores further.
func FuzzLoad(f *testing.F) {
	seeds, err := filepath.Glob("../golden/*/kvwatch.yaml")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no golden seeds: %v", err)
	}
	for _, path := range seeds {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := schema.Load("kvwatch.yaml", src)
		if err != nil {
			var list schema.ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("Load error is not a non-empty ErrorList: %T %v", err, err)
			}
			for _, e := range list {
				if e.File != "kvwatch.yaml" || e.Msg == "" {
					t.Fatalf("malformed error %#v", e)
				}
			}
			return
		}
		files, err := gen.Generate(s)
		if err != nil {
			t.Fatalf("valid schema, but Generate failed: %v\n%s", err, src)
		}
		for _, file := range files {
			if _, err := parser.ParseFile(token.NewFileSet(), file.Name, file.Content, parser.AllErrors); err != nil {
				t.Fatalf("%s does not parse: %v\nschema:\n%s", file.Name, err, src)
			}
		}
	})
}
