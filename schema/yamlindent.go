package schema

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlLineProblems are the messages go.yaml.in/yaml/v3 gives for a line
// that is indented wrongly, or whose text YAML does not read as the key
// or list item it looks like. The line yaml names is often not the
// mistake's: for "did not find expected key" and "did not find expected
// '-' indicator" it is the line before the start of the mapping or list
// the line falls in (yaml counts lines from 0 there), or the line before
// the mistake when that mapping or list starts on the first line; for
// "mapping values are not allowed" it can be a line after a key glued to
// its value ("key:value"); for errors on the first line it names none.
var yamlLineProblems = []string{
	"mapping values are not allowed in this context",
	"did not find expected key",
	"did not find expected '-' indicator",
	"could not find expected ':'",
	"block sequence entries are not allowed in this context",
	"found character that cannot start any token",
}

// yamlLineHint explains the errors of yamlLineProblems. It finds the line
// yaml fails at (yamlFailingLine), then the likely mistake: first on that
// line alone (yamlOwnHint), then in where the line starts against the
// lists and mappings open above it (yamlPlaceHint).
func yamlLineHint(src []byte, err error) (Pos, string, bool) {
	problem := yamlProblem(err)
	if !slices.Contains(yamlLineProblems, problem) {
		return Pos{}, "", false
	}
	num, start := yamlFailingLine(src, err)
	lines := yamlSrcLines(src)
	if num == 0 || num > len(lines) {
		return Pos{}, "", false
	}
	l := parseYAMLLine(num, lines[num-1])
	if l.rest == "" || l.rest[0] == '#' {
		return Pos{}, "", false
	}
	if p, msg, ok := yamlOwnHint(problem, l); ok {
		return p, msg, true
	}
	var doc yaml.Node // the lines before: they parse, as yaml failed at l
	if yaml.Unmarshal(src[:start], &doc) != nil {
		return Pos{}, "", false
	}
	levels, leaf := yamlOpenLevels(&doc)
	return yamlPlaceHint(l, levels, leaf, lines)
}

// yamlFailingLine returns the line at whose end yaml first fails with
// err, and the offset in src where that line starts: yaml reads its input
// in order, so that line holds the token yaml could not take. The search
// starts a line before the one yaml names: that is a line of the input
// yaml had read, or the one after it, counted from 0 or from 1, so no
// shorter input fails so. It returns 0 when no prefix of src fails so.
func yamlFailingLine(src []byte, err error) (num, start int) {
	msg := err.Error()
	from := max(yamlErrorPos(err).Line-1, 1)
	num = 1
	for i := 0; i <= len(src); i++ {
		if i < len(src) && src[i] != '\n' {
			continue
		}
		if num >= from {
			var n yaml.Node
			if e := yaml.Unmarshal(src[:min(i+1, len(src))], &n); e != nil && e.Error() == msg {
				return num, start
			}
		}
		num, start = num+1, i+1
	}
	return 0, 0
}

// yamlOwnHint explains the errors that the line's own text causes, as
// yaml gives the same error for that text alone (unindented):
//   - "mapping values are not allowed": a value with ": " in it, as in
//     "doc: note: read me", which YAML reads as a key inside the value;
//   - "block sequence entries are not allowed": a list begun on its key's
//     line, as in "keys: - name: A";
//   - "found character that cannot start any token": a value beginning
//     with "@" or "`", which YAML keeps for later use (a tab is explained
//     before, by yamlTabHint).
func yamlOwnHint(problem string, l yamlSrcLine) (Pos, string, bool) {
	var n yaml.Node
	if e := yaml.Unmarshal([]byte(strings.TrimLeft(l.text, " ")), &n); e == nil || yamlProblem(e) != problem {
		return Pos{}, "", false
	}
	value, at := l.value, l.valAt
	if l.key == "" {
		value, at = stripComment(l.rest), l.col-1
	}
	p := Pos{Line: l.num, Col: colAt(l.text, at)}
	switch {
	case value == "":
	case problem == yamlLineProblems[0] && l.key != "" && strings.Contains(value+" ", ": "):
		what := `contains ": "`
		if !strings.Contains(value, ": ") {
			what = `ends with ":"`
		}
		return p, fmt.Sprintf(`the value of %q %s, which YAML reads as another key: quote the value, as %q`, l.key, what, value), true
	case problem == yamlLineProblems[4] && l.key != "" && (value == "-" || strings.HasPrefix(value, "- ")):
		return p, fmt.Sprintf(`a list cannot start on the line of its key %q: put %q on the next line, indented more than %q`, l.key, value, l.key), true
	case problem == yamlLineProblems[5] && strings.ContainsRune("@`", rune(value[0])):
		return p, fmt.Sprintf(`%q cannot start a value that is not quoted: quote the value, as %q`, value[:1], value), true
	}
	return Pos{}, "", false
}

// yamlLevel is a block mapping or list still open at the end of the lines
// before the failing one: a line after them can continue it by starting
// at its column.
type yamlLevel struct {
	list bool   // a list, else a mapping
	col  int    // column of its keys, or of its "-"
	line int    // line of its last key, or of its first "-"
	key  string // its last key
}

// yamlOpenLevels returns the open levels of doc, outermost first, and the
// value the last of them ends with: the last key's value or list item.
func yamlOpenLevels(doc *yaml.Node) ([]yamlLevel, *yaml.Node) {
	if len(doc.Content) == 0 {
		return nil, nil
	}
	var levels []yamlLevel
	n := doc.Content[0]
	for {
		block := n.Style&yaml.FlowStyle == 0
		switch last := len(n.Content) - 1; {
		case n.Kind == yaml.MappingNode && block && last >= 1:
			k := n.Content[last-1]
			levels = append(levels, yamlLevel{col: n.Column, line: k.Line, key: k.Value})
		case n.Kind == yaml.SequenceNode && block && last >= 0:
			levels = append(levels, yamlLevel{list: true, col: n.Column, line: n.Line})
		default:
			return levels, n
		}
		n = n.Content[len(n.Content)-1]
	}
}

// yamlPlaceHint explains a line that starts where nothing above it lets
// it start. With c the column of its first key or "-":
//   - c past every open level while the last key or list item already
//     has its value: the line was meant to line up with that key.
//     Unless the value is a key glued to its own value ("key:value"),
//     which YAML reads as a single value, or plain words on the lines
//     after the key's, at the indentation of keys: then the value's line
//     is the mistake, a key with its ": " missing;
//   - a line of plain words with no key and no "-": a key glued to its
//     value, or a value gone on to a line of its own at the indentation
//     of keys instead of past it;
//   - a "-" at the column of a mapping's keys, or a key at the column of
//     a list's "-": the item belongs to a list indented more, or the key
//     to the item (the line continues neither);
//   - c at no open level: one space off, mostly, from the level of its
//     kind whose column is nearest (the deeper of two as near: the
//     previous line's).
func yamlPlaceHint(l yamlSrcLine, levels []yamlLevel, leaf *yaml.Node, lines []string) (Pos, string, bool) {
	if len(levels) == 0 {
		return Pos{}, "", false
	}
	c, list := l.first(), len(l.dashes) > 0
	at, what := Pos{Line: l.num, Col: c}, l.subject()
	last := levels[len(levels)-1]
	switch {
	case c > last.col && yamlHasValue(leaf):
		if p, msg, ok := yamlGluedValue(leaf, lines); ok {
			return p, msg, true
		}
		if last.list {
			return at, fmt.Sprintf("%s is indented more than the list item on line %d, which is the single value %s: nothing can go under it", what, leaf.Line, yamlShort(leaf.Value)), true
		}
		if leaf.Line > last.line && leaf.Kind == yaml.ScalarNode && leaf.Style == 0 {
			return Pos{Line: leaf.Line, Col: leaf.Column}, fmt.Sprintf(`%s is neither a key ("key: value") nor a list item ("- item"): YAML reads it as the value of %q, and then fails on line %d`, yamlShort(leaf.Value), last.key, l.num), true
		}
		return at, fmt.Sprintf("%s is indented more than %q on line %d, which already has a value: indent it like %q (%s)", what, last.key, last.line, last.key, spaces(last.col-1)), true
	case !list && l.key == "" && yamlWord(l.rest):
		if i := gluedColon(l.rest); i >= 0 {
			return Pos{Line: l.num, Col: colAt(l.text, l.col-1+i)}, yamlGluedMsg(stripComment(l.rest)), true
		}
		return at, fmt.Sprintf(`%s is neither a key ("key: value") nor a list item ("- item"): a value that goes on over lines is indented more than its key`, what), true
	}
	var other *yamlLevel // the deepest level of the other kind at column c
	for i := range levels {
		switch lv := &levels[i]; {
		case lv.col != c:
		case lv.list == list:
			return Pos{}, "", false // the line starts where it may: its text is at fault
		default:
			other = lv
		}
	}
	switch {
	case other != nil && list:
		if slices.ContainsFunc(levels, func(lv yamlLevel) bool { return lv.list }) {
			return at, fmt.Sprintf("%s is indented like %q on line %d (%s), among the keys of a mapping: %s", what, other.key, other.line, spaces(c-1), yamlNearestLevel(levels, c, true).describe()), true
		}
		return at, fmt.Sprintf("%s is indented like %q on line %d, among the keys of a mapping: a list goes on the lines under its key, indented more than it", what, other.key, other.line), true
	case other != nil:
		if in := yamlLevelAfter(levels, other); in != nil && !in.list {
			return at, fmt.Sprintf(`%s is indented like the "-" of the list on line %d: indent it like %q on line %d (%s) to add it to that item, or begin it with "- " to start an item`, what, other.line, in.key, in.line, spaces(in.col-1)), true
		}
		return at, fmt.Sprintf(`%s is indented like the "-" of the list on line %d, where only list items ("- item") can go`, what, other.line), true
	}
	near := yamlNearestLevel(levels, c, list)
	return at, fmt.Sprintf("%s is indented %s, which lines up with nothing above it: %s", what, spaces(c-1), near.describe()), true
}

// yamlLevelAfter returns the level inside lv, or nil for the last.
func yamlLevelAfter(levels []yamlLevel, lv *yamlLevel) *yamlLevel {
	for i := range levels[:len(levels)-1] {
		if &levels[i] == lv {
			return &levels[i+1]
		}
	}
	return nil
}

// yamlNearestLevel returns the level whose column is nearest to c among
// the lists (list) or the mappings (!list), or among all when there is
// none of that kind; of two as near, the deeper.
func yamlNearestLevel(levels []yamlLevel, c int, list bool) yamlLevel {
	kind := slices.ContainsFunc(levels, func(lv yamlLevel) bool { return lv.list == list })
	var best yamlLevel
	bestDist := -1
	for _, lv := range levels {
		if kind && lv.list != list {
			continue
		}
		if d := max(lv.col-c, c-lv.col); bestDist < 0 || d <= bestDist {
			best, bestDist = lv, d
		}
	}
	return best
}

func (lv yamlLevel) describe() string {
	if lv.list {
		return fmt.Sprintf("the items of the list on line %d are indented %d", lv.line, lv.col-1)
	}
	return fmt.Sprintf("%q on line %d is indented %d", lv.key, lv.line, lv.col-1)
}

// yamlHasValue reports whether n, the last value of an open level, is
// one written on its key's or "-"'s line, so that nothing can be
// indented under it: anything but an empty value.
func yamlHasValue(n *yaml.Node) bool {
	return n != nil && !(n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == "" && n.Style == 0)
}

// yamlGluedValue finds a plain value that starts with a key glued to its
// own value ("key:value"), and that is on a line of its own or is a list
// item: after a key on the same line ("url: http://x"), the glue is
// likely meant.
func yamlGluedValue(n *yaml.Node, lines []string) (Pos, string, bool) {
	if n.Kind != yaml.ScalarNode || n.Style != 0 || n.Line < 1 || n.Line > len(lines) {
		return Pos{}, "", false
	}
	line := []rune(lines[n.Line-1])
	if n.Column < 1 || n.Column > len(line) {
		return Pos{}, "", false
	}
	if strings.Trim(string(line[:n.Column-1]), "- ") != "" {
		return Pos{}, "", false
	}
	text := string(line[n.Column-1:])
	i := gluedColon(text)
	if i < 0 {
		return Pos{}, "", false
	}
	return Pos{Line: n.Line, Col: n.Column + colAt(text, i) - 1}, yamlGluedMsg(stripComment(text)), true
}

func yamlGluedMsg(text string) string {
	k, v, _ := strings.Cut(text, ":")
	return fmt.Sprintf(`%q has no space after ":", so YAML reads it as a single value: write %q`, text, k+": "+v)
}

// yamlShort quotes a value for a message, cut to its first 40 bytes.
func yamlShort(v string) string {
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return fmt.Sprintf("%q", v)
}

func spaces(n int) string {
	switch n {
	case 0:
		return "no spaces"
	case 1:
		return "1 space"
	}
	return fmt.Sprintf("%d spaces", n)
}
