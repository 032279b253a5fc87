package gen_test

import (
	"errors"
	"fmt"
	"go/build"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/gen"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// FuzzLoad feeds arbitrary schema files to the loader and the generator:
// neither may panic, an invalid schema must come back as an ErrorList with
// positions, and a valid one must generate Go that parses, in files that
// Go tools build on every platform. Its seeds are
// every golden input, so `go test` runs them all; `go test -fuzz=FuzzLoad
// ./gen` explores further.
func FuzzLoad(f *testing.F) {
	seeds, err := filepath.Glob("../golden/*/kvwatch.yaml")
	if err != nil || len(seeds) == 0 {
		f.Fatalf("no golden seeds: %v", err)
	}
	pairs, err := filepath.Glob("../golden/compat/*/*.yaml") // kvwatchgen -compat's corpus
	if err != nil || len(pairs) == 0 {
		f.Fatalf("no compat seeds: %v", err)
	}
	seeds = append(seeds, pairs...)
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
			if why := unbuildable(file.Name); why != "" {
				t.Fatalf("file name %s: %s\nschema:\n%s", file.Name, why, src)
			}
			if _, err := parser.ParseFile(token.NewFileSet(), file.Name, file.Content, parser.AllErrors); err != nil {
				t.Fatalf("%s does not parse: %v\nschema:\n%s", file.Name, err, src)
			}
		}
	})
}

// unbuildable says why Go tools would skip, refuse or constrain a file of
// this name, or returns "": go/build's own rules (names starting with '_'
// or '.', GOOS and GOARCH suffixes) on two platforms that share no GOOS or
// GOARCH, and the go command's refusal of a name starting with '-'.
func unbuildable(name string) string {
	if strings.HasPrefix(name, "-") {
		return "the go command refuses file names starting with '-'"
	}
	for _, platform := range [][2]string{{"linux", "amd64"}, {"windows", "arm64"}} {
		ctxt := build.Default
		ctxt.GOOS, ctxt.GOARCH = platform[0], platform[1]
		ctxt.OpenFile = func(string) (io.ReadCloser, error) { // no file: the name alone decides
			return io.NopCloser(strings.NewReader("package p\n")), nil
		}
		if ok, err := ctxt.MatchFile(".", name); err != nil || !ok {
			return fmt.Sprintf("go/build skips it for %s/%s (%v)", platform[0], platform[1], err)
		}
	}
	return ""
}
