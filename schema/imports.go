package schema

import (
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// This file names the packages of external types. Generated code refers to
// such a package by a name in the file's scope, so the name must not be one
// the code declares in a function's scope ("func(v v.T) v.T" does not
// compile), the name of another imported package, or a predeclared
// identifier.

// localNames are the identifiers generated code declares inside functions:
// receivers, parameters and variables. bindRoute, bindVPCConfig, ... are
// declared too ("bind" and a kind's Go name: one binding per kind; see
// IsLocalName).
var localNames = []string{"_", "b", "c", "cp", "ctx", "err", "fn", "h", "i", "js", "k", "key", "kv", "opts", "out", "p", "r", "revision", "s", "scopes", "seen", "state", "t", "v", "w"}

// ownImports are the packages generated code imports itself. An external
// type of one of these paths keeps the package's name; no other package
// gets one of these names.
var ownImports = []struct{ path, name string }{
	{"context", "context"},
	{"encoding/json", "json"},
	{"iter", "iter"},
	{"slices", "slices"},
	{"strconv", "strconv"},
	{"time", "time"},
	{"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch", "kvwatch"},
	{"github.com/kvwatchgen/kvwatchgen/runtime/kvclient", "kvclient"},
	{"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl", "kvwatchimpl"},
	{"github.com/nats-io/nats.go/jetstream", "jetstream"},
}

// IsLocalName reports whether generated code may declare name inside a
// function: the generator declares no other name there (a gen test checks
// its output), and no import is given one of these names.
func IsLocalName(name string) bool {
	if slices.Contains(localNames, name) {
		return true
	}
	n, ok := strings.CutPrefix(name, "bind")
	return ok && n != "" && unicode.IsUpper([]rune(n)[0])
}

// reservedImportName reports whether an external package may not be
// referred to by name: generated code uses the name for something else, or
// Go does not allow it as a package name.
func reservedImportName(name string) bool {
	if IsLocalName(name) || token.IsKeyword(name) || types.Universe.Lookup(name) != nil || name == "init" || name == "main" {
		return true
	}
	return slices.ContainsFunc(ownImports, func(o struct{ path, name string }) bool { return o.name == name })
}

// assignImports gives every package of an external type of s a name, in
// path order so that the names do not depend on the order of the schema.
func assignImports(s *Schema) {
	var paths []string
	var visit func(t *TypeRef)
	visit = func(t *TypeRef) {
		switch t.Kind {
		case TypeExternal:
			paths = append(paths, t.ImportPath)
		case TypeSlice, TypeMap:
			visit(t.Elem)
		}
	}
	for _, t := range s.Types {
		for _, f := range t.Fields {
			visit(f.Type)
		}
	}
	for _, b := range s.Buckets {
		for _, k := range b.Kinds {
			visit(k.Value)
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	taken := map[string]bool{}
	for _, path := range paths {
		s.Imports = append(s.Imports, importFor(path, taken))
	}
}

// importFor names the package at path, avoiding the names taken by
// packages named before it. The name is the package's own one when the
// path tells it and it is free ("net/netip" is netip); otherwise it is made
// from the path's last element (its last but one after a major version
// suffix, as in ".../yaml/v3"): lower case letters and digits, suffixed
// with "pkg" when reserved ("example.com/x/v" is vpkg) and with 2, 3, ...
// when taken.
func importFor(path string, taken map[string]bool) *Import {
	for _, o := range ownImports {
		if o.path == path {
			return &Import{Path: path, Name: o.name}
		}
	}
	elems := strings.Split(path, "/")
	last := elems[len(elems)-1]
	if len(elems) > 1 && majorVersion(last) {
		last = elems[len(elems)-2]
	}
	base := strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			return r
		case 'A' <= r && r <= 'Z':
			return r - 'A' + 'a'
		}
		return -1
	}, last)
	base = strings.TrimLeft(base, "0123456789")
	if base == "" {
		base = "pkg"
	}
	if reservedImportName(base) {
		base += "pkg"
	}
	name := base
	for n := 2; taken[name] || reservedImportName(name); n++ {
		name = base + strconv.Itoa(n)
	}
	taken[name] = true
	// The standard library (paths without a dot in the first element)
	// names each package after its folder.
	std := !strings.Contains(elems[0], ".")
	return &Import{Path: path, Name: name, Explicit: !std || name != last}
}

// majorVersion reports whether a path element is a major version suffix
// ("v2", "v3", ...).
func majorVersion(elem string) bool {
	n, ok := strings.CutPrefix(elem, "v")
	if !ok || n == "" {
		return false
	}
	_, err := strconv.ParseUint(n, 10, 64)
	return err == nil
}
