package apidump

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeModule writes files (path -> content) into a fresh folder holding
// module example.com/m and returns the folder.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.26\n"
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLoad loads a module through go list: the packages under the
// pattern but internal ones and a folder of tests only, with types from
// other packages of the module and the standard library.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	dir := writeModule(t, map[string]string{
		"lib/a/a.go": `package a

import (
	"time"

	"example.com/m/lib/internal/x"
)

// T is the package's only type.
type T struct{ X x.X; D time.Duration }

func New() *T { return nil }
`,
		"lib/internal/x/x.go":     "package x\n\ntype X int\n\nfunc Hidden() {}\n",
		"lib/onlytests/a_test.go": "package onlytests\n",
		"lib/b/b.go":              "package b\n\nimport \"example.com/m/lib/a\"\n\nvar Default = a.New()\n",
		"other/o.go":              "package other\n\nfunc NotListed() {}\n",
	})
	pkgs, err := Load(dir, "./lib/...")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pkgs {
		if rel, _ := filepath.Rel(dir, p.Dir); rel != filepath.Join("lib", filepath.Base(p.Path)) {
			t.Errorf("%s: Dir %s", p.Path, p.Dir)
		}
		got = append(got, p.Lines...)
	}
	want := []string{
		"pkg example.com/m/lib/a, func New() *T",
		"pkg example.com/m/lib/a, type T struct",
		"pkg example.com/m/lib/a, type T struct, D time.Duration",
		"pkg example.com/m/lib/a, type T struct, X x.X",
		"pkg example.com/m/lib/b, var Default *a.T",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestLoadFailsOnBrokenPackage: a package that does not build is an
// error, not an API without it.
func TestLoadFailsOnBrokenPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	dir := writeModule(t, map[string]string{
		"p/p.go": "package p\n\nfunc F() int { return \"no\" }\n",
	})
	if pkgs, err := Load(dir, "./..."); err == nil {
		t.Fatalf("no error; got %v", pkgs)
	} else if !strings.Contains(err.Error(), "p.go") {
		t.Errorf("error does not name the file: %v", err)
	}
}
