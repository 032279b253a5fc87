// Package schema loads kvwatchgen schema files (format v1): YAML is parsed
// into nodes that keep their positions, every rule is checked with all
// problems collected (ErrorList, one FILE:LINE:COL: message each, sorted by
// position), and a valid schema is resolved into the read-only model the
// generator consumes. The package knows nothing of the generator or the
// runtime.
package schema

import (
	"fmt"
	"go/token"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LoadFile reads and loads the schema file at path. Errors name the file
// as path.
func LoadFile(path string) (*Schema, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Load(path, src)
}

// Load loads a schema from src; file is the name errors carry. On invalid
// input the error is an ErrorList holding every problem found.
func Load(file string, src []byte) (*Schema, error) {
	l := &loader{errs: errs{file: file}}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		p, msg := yamlError(src, err)
		l.add(p, "%s", msg)
		return nil, l.err()
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		l.add(Pos{Line: 1, Col: 1}, "the schema is empty: it needs version, package and buckets")
		return nil, l.err()
	}
	s := l.schemaFile(doc.Content[0])
	if err := l.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// loader turns YAML nodes into the model, collecting errors.
type loader struct {
	errs
	types       map[string]*Type // by name, for resolving type references
	brokenTypes map[string]bool  // declared with a bad name: references say nothing more
	collisions  []collisionNames // generated names produced twice
}

// Top-level fields of a schema file.
var fileFields = []string{"version", "package", "revision", "buckets", "types", "compat"}

func (l *loader) schemaFile(root *yaml.Node) *Schema {
	s := &Schema{}
	f := l.fields(root, "the schema", fileFields, "version", "package", "buckets")
	if f == nil {
		return s
	}
	if n := f["version"]; n != nil {
		switch v, ok := l.scalar(n, "version"); {
		case !ok:
		case v == "1" && n.Tag != "!!int":
			l.add(pos(n), "version must be the number 1, not the string %q", v)
		case v != "1":
			l.add(pos(n), "unsupported version %s: this kvwatchgen reads version 1", strconv.Quote(v))
		}
	}
	if n := f["package"]; n != nil {
		if v, ok := l.scalar(n, "package"); ok {
			switch {
			case !token.IsIdentifier(v) || v == "_":
				l.add(pos(n), "package %q is not a valid Go package name: %s", v, packageNameRule(v))
			case v != strings.ToLower(v):
				l.add(pos(n), "package %q: Go package names are lower case (try %q)", v, strings.ToLower(v))
			}
			s.Package = v
		}
	}
	if n := f["revision"]; n != nil {
		s.Revision = l.revision(n)
	}
	if n := f["compat"]; n != nil {
		s.Accepts = l.compat(n)
	}
	s.Types = l.typeDecls(f["types"])
	if n := f["buckets"]; n != nil {
		s.Buckets = l.buckets(n)
	}
	l.assignNames(s)
	return s
}

// fields checks that n is a mapping with only known fields, each once, and
// with every required one, and returns its values by field name. It returns
// nil when n is not a mapping.
func (l *loader) fields(n *yaml.Node, what string, known []string, required ...string) map[string]*yaml.Node {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		l.add(pos(n), "%s must be a mapping, not %s", what, describe(n))
		return nil
	}
	out := make(map[string]*yaml.Node, len(n.Content)/2)
	misspelled := map[string]bool{} // fields suggested for unknown ones
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		switch {
		case !contains(known, name):
			best := closest(name, known)
			l.add(pos(k), "unknown field %q in %s%s", name, what, suggest(best))
			if best != "" {
				misspelled[best] = true
			}
		case out[name] != nil:
			l.add(pos(k), "field %q appears twice in %s", name, what)
		default:
			out[name] = resolveAlias(v)
		}
	}
	for _, r := range required {
		// A misspelled field was reported with its fix: "missing" would
		// say the same thing twice.
		if out[r] == nil && !misspelled[r] {
			l.add(pos(n), "%s: missing required field %q", what, r)
		}
	}
	return out
}

// scalar returns the text of a scalar node, reporting other node kinds.
func (l *loader) scalar(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		l.add(pos(n), "%s must be a single value, not %s", what, describe(n))
		return "", false
	}
	if n.Tag == "!!null" {
		l.add(pos(n), "%s is empty", what)
		return "", false
	}
	return n.Value, true
}

// optionalString returns the text of an optional scalar field.
func (l *loader) optionalString(n *yaml.Node, what string) string {
	if n == nil {
		return ""
	}
	v, _ := l.scalar(n, what)
	return v
}

// sequence returns the items of a sequence node, reporting other kinds.
func (l *loader) sequence(n *yaml.Node, what string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		l.add(pos(n), "%s must be a list, not %s", what, describe(n))
		return nil
	}
	items := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		items[i] = resolveAlias(c)
	}
	return items
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func pos(n *yaml.Node) Pos { return Pos{Line: n.Line, Col: n.Column} }

// describe names a node's kind for messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "this"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// packageNameRule says what a package name is, with a suggestion made of
// bad's letters and digits where they make one.
func packageNameRule(bad string) string {
	rule := "use a lower-case Go identifier (letters, digits and _, starting with a letter; not a Go keyword)"
	var b strings.Builder
	for _, r := range strings.ToLower(bad) {
		if 'a' <= r && r <= 'z' || '0' <= r && r <= '9' && b.Len() > 0 {
			b.WriteRune(r)
		}
	}
	try := b.String()
	if token.IsKeyword(try) {
		try += "kv"
	}
	if try == "" || !token.IsIdentifier(try) {
		return rule
	}
	return fmt.Sprintf("%s, such as %q", rule, try)
}
