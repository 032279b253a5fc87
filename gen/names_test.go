package gen_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/gen"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// Every identifier generated code declares inside a function (receivers,
// parameters, results, variables) is one the schema package knows of
// (schema.IsLocalName), so that it names no import after one: a new local
// in gen must be added there.
func TestLocalNamesAreReserved(t *testing.T) {
	paths, err := filepath.Glob("../golden/*/kvwatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range paths {
		s, err := schema.LoadFile(path)
		if err != nil {
			continue // an invalid case
		}
		files, err := gen.Generate(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			file, err := parser.ParseFile(token.NewFileSet(), f.Name, f.Content, 0)
			if err != nil {
				t.Fatalf("%s: %s: %v", path, f.Name, err)
			}
			for _, name := range functionLocals(file) {
				checked++
				if !schema.IsLocalName(name) {
					t.Errorf("%s: %s declares %s inside a function: add it to schema's localNames", path, f.Name, name)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no function locals found: the test checks nothing")
	}
}

// functionLocals returns the names declared in the scope of file's
// functions and function literals.
func functionLocals(file *ast.File) []string {
	var names []string
	fields := func(l *ast.FieldList) {
		if l == nil {
			return
		}
		for _, f := range l.List {
			for _, n := range f.Names {
				names = append(names, n.Name)
			}
		}
	}
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			fields(n.Recv)
			fields(n.Type.Params)
			fields(n.Type.Results)
		case *ast.FuncLit:
			fields(n.Type.Params)
			fields(n.Type.Results)
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE {
				for _, e := range n.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						names = append(names, id.Name)
					}
				}
			}
		case *ast.RangeStmt:
			if n.Tok == token.DEFINE {
				for _, e := range []ast.Expr{n.Key, n.Value} {
					if id, ok := e.(*ast.Ident); ok {
						names = append(names, id.Name)
					}
				}
			}
		case *ast.DeclStmt: // var inside a function
			for _, spec := range n.Decl.(*ast.GenDecl).Specs {
				if vs, ok := spec.(*ast.ValueSpec); ok {
					for _, id := range vs.Names {
						names = append(names, id.Name)
					}
				}
			}
		}
		return true
	})
	return names
}

// A chain of 40 types, each holding the next twice and ending in a plain
// value, generates: whether a type needs a deep copy is found once per
// type, not once per path (2^40 paths end in the plain value).
func TestDeepTypeChain(t *testing.T) {
	const n = 40
	var src strings.Builder
	src.WriteString("version: 1\npackage: p\nbuckets:\n  - bucket: b\n    keys:\n      - {name: A, key: a, value: T0}\ntypes:\n")
	for i := range n {
		fmt.Fprintf(&src, "  T%d:\n    fields:\n      a: T%d\n      b: T%d\n", i, i+1, i+1)
		if i == 0 {
			src.WriteString("      tags: \"[]string\"\n") // after the chain: found last
		}
	}
	fmt.Fprintf(&src, "  T%d:\n    fields:\n      x: string\n", n)
	files := generate(t, src.String())
	shared := string(files[0].Content)
	if !strings.Contains(shared, "func kvwCloneT0(v T0) T0") {
		t.Errorf("T0 holds a slice but has no deep copy function")
	}
	if strings.Contains(shared, "func kvwCloneT1(") {
		t.Errorf("T1 holds plain values only but has a deep copy function")
	}
}
