package apidump

import (
	"fmt"
	"slices"
	"strings"
)

// Class says what a difference between two APIs does to their callers.
type Class int

// The classes of a difference.
const (
	// Added is a line only the new API has: a new name, field or method.
	// Compatible: code written against the old API still builds.
	Added Class = iota
	// Removed is a line only the old API has. Breaking.
	Removed
	// Changed is a name whose line differs: a signature, a field's type,
	// a type's kind or type parameters, a constant's value, an interface
	// that gained a method. Breaking.
	Changed
)

// Breaking reports whether code written against the old API may no
// longer build against the new one.
func (c Class) Breaking() bool { return c != Added }

func (c Class) String() string {
	switch c {
	case Added:
		return "added (compatible)"
	case Removed:
		return "removed (breaking)"
	case Changed:
		return "changed (breaking)"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// A Change is one difference between two APIs.
type Change struct {
	Class Class
	Line  string // the new line; for Removed, the old one
	Was   string // for Changed, the old line
}

func (c Change) String() string {
	if c.Class == Changed {
		return fmt.Sprintf("%s: %s\n    was: %s", c.Class, c.Line, c.Was)
	}
	return fmt.Sprintf("%s: %s", c.Class, c.Line)
}

// Compare returns the differences from the API old to the API new (lines
// as Lines returns them), breaking ones first, each class in line order.
// Lines that name the same thing (Name) and differ are one Changed.
func Compare(old, new []string) []Change {
	byName := func(lines []string) map[string][]string {
		m := map[string][]string{}
		for _, l := range lines {
			m[Name(l)] = append(m[Name(l)], l)
		}
		return m
	}
	was, is := byName(old), byName(new)
	var changes []Change
	for name, olds := range was {
		news := is[name]
		gone := without(olds, news)
		added := without(news, olds)
		for len(gone) > 0 && len(added) > 0 {
			changes = append(changes, Change{Class: Changed, Line: added[0], Was: gone[0]})
			gone, added = gone[1:], added[1:]
		}
		for _, l := range gone {
			changes = append(changes, Change{Class: Removed, Line: l})
		}
		for _, l := range added {
			changes = append(changes, Change{Class: Added, Line: l})
		}
	}
	for name, news := range is {
		if _, ok := was[name]; !ok {
			for _, l := range news {
				changes = append(changes, Change{Class: Added, Line: l})
			}
		}
	}
	rank := map[Class]int{Removed: 0, Changed: 1, Added: 2}
	slices.SortFunc(changes, func(a, b Change) int {
		if r := rank[a.Class] - rank[b.Class]; r != 0 {
			return r
		}
		return strings.Compare(a.Line, b.Line)
	})
	return changes
}

// without returns the lines of a that b does not hold.
func without(a, b []string) []string {
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, l)
		}
	}
	return out
}

// Name returns the part of an API line that names what it describes, the
// same in the old and the new line when only its type or value changed:
//
//	pkg p, func F(int) error                  -> pkg p, func F
//	pkg p, method (*T[$0]) M() string         -> pkg p, method T.M
//	pkg p, type T[$0 any] struct, F []$0      -> pkg p, type T, F
//	pkg p, type T struct, embedded *x.Base    -> pkg p, type T, embedded Base
//	pkg p, type I interface, M(int) bool      -> pkg p, type I, M
//	pkg p, type T[$0 any] struct              -> pkg p, type T
func Name(line string) string {
	parts := splitTop(line)
	if len(parts) < 2 {
		return line
	}
	pkg, decl := parts[0], parts[1]
	kind, rest, _ := strings.Cut(decl, " ")
	if kind == "method" {
		// "(*T[$0, $1]) M(...)" -> "T.M"
		recv, sig, _ := strings.Cut(rest, ") ")
		recv = strings.TrimLeft(recv, "(*")
		return pkg + ", method " + ident(recv) + "." + ident(sig)
	}
	name := pkg + ", " + kind + " " + ident(rest)
	if len(parts) < 3 {
		return name
	}
	member := parts[2]
	if t, ok := strings.CutPrefix(member, "embedded "); ok {
		// The field's name is its type's: "*x.Base[$0]" -> "Base".
		t = strings.TrimLeft(t, "*")
		if i := strings.LastIndex(qualifiedIdent(t), "."); i >= 0 {
			t = t[i+1:]
		}
		return name + ", embedded " + ident(t)
	}
	if member == "unexported methods" {
		return name + ", " + member
	}
	return name + ", " + ident(member)
}

// ident returns the identifier s starts with.
func ident(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r > 127)
	})
	if i < 0 {
		return s
	}
	return s[:i]
}

// qualifiedIdent returns the qualified identifier s starts with ("x.Base").
func qualifiedIdent(s string) string {
	first := ident(s)
	if rest, ok := strings.CutPrefix(s[len(first):], "."); ok {
		return first + "." + ident(rest)
	}
	return first
}

// splitTop splits an API line at each ", " outside brackets, parentheses,
// braces and quoted strings: "pkg p", "type T[$0 any, $1 any] struct",
// "F int".
func splitTop(line string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '"', '`':
			// Skip the quoted string (Go syntax, as ExactString and
			// strconv.Quote write it).
			for i++; i < len(line) && line[i] != c; i++ {
				if line[i] == '\\' && c == '"' {
					i++
				}
			}
		case ',':
			if depth == 0 && i+1 < len(line) && line[i+1] == ' ' {
				parts = append(parts, line[start:i])
				start = i + 2
				i++
			}
		}
	}
	return append(parts, line[start:])
}
