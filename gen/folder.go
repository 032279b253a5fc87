package gen

import (
	"fmt"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Folder is what the Go files of an output folder that kvwatchgen does not
// own (no Header) say about the package generated into it.
type Folder struct {
	// PackageDoc names the file whose package clause has a doc comment
	// ("" when none has): the package is documented there, and the
	// generated package comment is left out.
	PackageDoc string
	// Packages are the files whose package clause names another package
	// than the schema's, "file.go (package name)", sorted: generating
	// there makes a folder go build refuses.
	Packages []string
}

// InspectFolder reads the package clauses of dir's Go files that are not
// generated, not tests and not excluded by build constraints (as go build
// sees them), against pkg, the schema's package. A missing dir is an empty
// folder.
func InspectFolder(dir, pkg string) (Folder, error) {
	var out Folder
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("gen: reading %s: %w", dir, err)
	}
	ctx := build.Default
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		if ok, err := ctx.MatchFile(dir, name); err != nil || !ok {
			continue // excluded from the build (or unreadable: go build says why)
		}
		path := filepath.Join(dir, name)
		generated, err := fileHasHeader(path)
		if err != nil {
			return out, fmt.Errorf("gen: reading %s: %w", path, err)
		}
		if generated {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			continue // not Go yet; go build reports it
		}
		if f.Name.Name != pkg {
			out.Packages = append(out.Packages, fmt.Sprintf("%s (package %s)", name, f.Name.Name))
		}
		if f.Doc != nil && out.PackageDoc == "" {
			out.PackageDoc = name
		}
	}
	slices.Sort(out.Packages)
	return out, nil
}
