// Package apidump writes the exported API of Go packages as text, one line
// per exported name, in the manner of Go's own api/go1.*.txt files:
//
//	pkg example.com/m/p, const Limit untyped int = 8
//	pkg example.com/m/p, func New(context.Context, ...Option) (*Client, error)
//	pkg example.com/m/p, method (*Client) Close() error
//	pkg example.com/m/p, type Client struct
//	pkg example.com/m/p, type Client struct, Name string
//	pkg example.com/m/p, type Set[$0 comparable] map[$0]struct{}
//
// Lines are sorted, so the same API always gives the same text, and a
// change shows as lines added, removed or changed (Compare). Type
// parameters are written $0, $1, ... by position, so renaming one changes
// nothing; aliases are written as the types they stand for, except on the
// line that declares one.
//
// The packages are loaded from the compiler's export data, listed by
// `go list -export` (Load), so nothing but the go command is needed.
package apidump

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Package is the API of one package.
type Package struct {
	Path  string   // import path
	Dir   string   // folder of its source files
	Lines []string // API lines, sorted
}

// listed is what `go list -json` says of a package.
type listed struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	DepOnly    bool
	Error      *struct{ Err string }
}

// Load returns the API of the packages that patterns match in the module
// at dir, sorted by import path. Internal packages (a path element
// "internal") and folders that hold only tests are left out: neither is
// API. It runs `go list -export`, which builds the packages and their
// dependencies (from the build cache when they are there).
func Load(dir string, patterns ...string) ([]Package, error) {
	args := append([]string{"list", "-e", "-export", "-deps",
		"-json=ImportPath,Dir,Export,GoFiles,DepOnly,Error", "--"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v\n%s", err, stderr.Bytes())
	}
	exports := map[string]string{}
	var roots []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %v", err)
		}
		if !p.DepOnly && len(p.GoFiles) == 0 {
			continue // tests only (go list reports "no non-test Go files")
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly && !isInternal(p.ImportPath) {
			roots = append(roots, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	var pkgs []Package
	for _, p := range roots {
		tp, err := imp.Import(p.ImportPath)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %v", p.ImportPath, err)
		}
		pkgs = append(pkgs, Package{Path: p.ImportPath, Dir: p.Dir, Lines: Lines(tp)})
	}
	slices.SortFunc(pkgs, func(a, b Package) int { return strings.Compare(a.Path, b.Path) })
	return pkgs, nil
}

// isInternal reports whether an import path is an internal package or
// below one.
func isInternal(path string) bool {
	return slices.Contains(strings.Split(path, "/"), "internal")
}

// Lines returns the API of pkg: a line for every exported const, var,
// func and type, for every exported field of an exported struct type
// (embedded fields too), every exported method of an exported type
// (promoted ones too), and every method of an exported interface type;
// sorted, without duplicates.
func Lines(pkg *types.Package) []string {
	w := &writer{pkg: pkg, prefix: "pkg " + pkg.Path() + ", "}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			w.emit("const %s %s = %s", name, w.typ(obj.Type()), obj.Val().ExactString())
		case *types.Var:
			w.emit("var %s %s", name, w.typ(obj.Type()))
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			w.emit("func %s%s%s", name, w.typeParams(sig.TypeParams()), w.signature(sig))
		case *types.TypeName:
			w.typeDecl(obj)
		}
	}
	slices.Sort(w.lines)
	return slices.Compact(w.lines)
}

// typeDecl writes the lines of a type: its kind, and its fields, methods
// or interface methods.
func (w *writer) typeDecl(obj *types.TypeName) {
	if alias, ok := obj.Type().(*types.Alias); ok {
		w.emit("type %s%s = %s", obj.Name(), w.typeParams(alias.TypeParams()), w.typ(alias.Rhs()))
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok { // an alias where go/types does not make *types.Alias
		w.emit("type %s = %s", obj.Name(), w.typ(obj.Type()))
		return
	}
	head := "type " + obj.Name() + w.typeParams(named.TypeParams())
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.emit("%s struct", head)
		w.fields(head, named, u, map[*types.Struct]bool{})
	case *types.Interface:
		w.interfaceDecl(head, u)
		return // its methods are its lines
	default:
		w.emit("%s %s", head, w.typ(u))
	}
	w.methods(named)
}

// fields writes the exported fields of st, a struct type of named, and
// its embedded fields. An embedded field of an exported type stands for
// that type's fields and methods, whose lines are the type's own. What an
// embedded field of an unexported type promotes (its exported fields, and
// its embedded fields of exported types) is written as named's, as
// callers see it.
func (w *writer) fields(head string, named *types.Named, st *types.Struct, seen map[*types.Struct]bool) {
	if seen[st] {
		return
	}
	seen[st] = true
	top := len(seen) == 1
	for f := range st.Fields() {
		if !top {
			// A promoted field: written when a selector reaches it.
			if obj, _, _ := types.LookupFieldOrMethod(named, true, w.pkg, f.Name()); obj != f {
				continue
			}
		}
		switch {
		case f.Embedded() && (top || exportedNamed(f.Type())):
			w.emit("%s struct, embedded %s", head, w.typ(f.Type()))
		case f.Exported():
			w.emit("%s struct, %s %s", head, f.Name(), w.typ(f.Type()))
		}
		if f.Embedded() && !exportedNamed(f.Type()) {
			if inner, ok := deref(f.Type()).Underlying().(*types.Struct); ok {
				w.fields(head, named, inner, seen)
			}
		}
	}
}

// deref returns what t points to, or t.
func deref(t types.Type) types.Type {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// exportedNamed reports whether t, or what it points to, is a named type
// with an exported name.
func exportedNamed(t types.Type) bool {
	n, ok := types.Unalias(deref(t)).(*types.Named)
	return ok && n.Obj().Exported()
}

// interfaceDecl writes an interface type. Its kind line lists the names
// of its methods when another package can implement it, so that adding
// a method changes that line (it breaks implementations); with an
// unexported method only this package can, and the line says so instead.
func (w *writer) interfaceDecl(head string, u *types.Interface) {
	if !u.IsMethodSet() { // a constraint: the type set is the API
		w.emit("%s %s", head, w.typ(u))
	}
	var names []string
	complete := true
	for m := range u.Methods() {
		if !m.Exported() {
			complete = false
			continue
		}
		names = append(names, m.Name())
		w.emit("%s interface, %s%s", head, m.Name(), w.signature(m.Type().(*types.Signature)))
	}
	if !u.IsMethodSet() {
		return
	}
	switch {
	case !complete:
		w.emit("%s interface", head)
		w.emit("%s interface, unexported methods", head)
	case len(names) == 0:
		w.emit("%s interface {}", head)
	default:
		slices.Sort(names)
		w.emit("%s interface { %s }", head, strings.Join(names, ", "))
	}
}

// methods writes the exported methods in the method set of *T, each with
// the receiver it is in the method set of: T when a value has it, *T
// otherwise. Methods promoted through an embedded field of an exported
// type are that type's lines (its embedded line says they come with it);
// those promoted through one of an unexported type are written here.
func (w *writer) methods(named *types.Named) {
	recv := named.Obj().Name()
	if tps := named.TypeParams(); tps.Len() > 0 {
		args := make([]string, tps.Len())
		for i := range args {
			args[i] = fmt.Sprintf("$%d", i)
		}
		recv += "[" + strings.Join(args, ", ") + "]"
	}
	values := types.NewMethodSet(named)
	all := types.NewMethodSet(types.NewPointer(named))
	for sel := range all.Methods() {
		m := sel.Obj()
		if !m.Exported() {
			continue
		}
		if viaExported(named, sel.Index()) {
			continue
		}
		r := "*" + recv
		if values.Lookup(m.Pkg(), m.Name()) != nil {
			r = recv
		}
		w.emit("method (%s) %s%s", r, m.Name(), w.signature(sel.Type().(*types.Signature)))
	}
}

// viaExported reports whether the method at path (a Selection's Index)
// is promoted through an embedded field of an exported type.
func viaExported(named *types.Named, path []int) bool {
	var t types.Type = named
	for _, i := range path[:len(path)-1] {
		st, ok := deref(t).Underlying().(*types.Struct)
		if !ok {
			return false
		}
		t = st.Field(i).Type()
		if exportedNamed(t) {
			return true
		}
	}
	return false
}

// writer collects the lines of one package.
type writer struct {
	pkg    *types.Package
	prefix string
	lines  []string
}

func (w *writer) emit(format string, args ...any) {
	w.lines = append(w.lines, w.prefix+fmt.Sprintf(format, args...))
}
