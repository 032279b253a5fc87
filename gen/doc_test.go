package gen_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// Every exported name the generator writes has a doc comment: the types,
// functions and methods of every golden package and the example.
func TestGeneratedDocComments(t *testing.T) {
	files, err := filepath.Glob("../golden/*/want/*.go")
	if err != nil {
		t.Fatal(err)
	}
	example, _ := filepath.Glob("../examples/fleet/fleetkv/*.kvwatch.go")
	files = append(files, example...)
	if len(files) < 10 {
		t.Fatalf("only %d generated files found", len(files))
	}
	for _, path := range files {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && d.Doc == nil {
					t.Errorf("%s: func %s has no doc comment", path, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if ts, ok := spec.(*ast.TypeSpec); ok && ts.Name.IsExported() && d.Doc == nil && ts.Doc == nil {
						t.Errorf("%s: type %s has no doc comment", path, ts.Name.Name)
					}
				}
			}
		}
	}
}
