package schema_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// A line indented wrongly, or whose text YAML reads otherwise than it
// looks, is reported at the likely mistake, with what likely fixes it,
// whatever line go.yaml.in/yaml/v3 names (in the comments: its message
// and line).
func TestYAMLLineHints(t *testing.T) {
	cases := []struct {
		name, src, want string // want: LINE:COL: message after "invalid YAML: "
	}{
		// mapping values are not allowed in this context (line 3)
		{"key under a key that has a value", "a: 1\nb: x\n  c: 2\n",
			`3:3: "c" is indented more than "b" on line 2, which already has a value: indent it like "b" (no spaces)`},
		// (line 3)
		{"key of a list item, one space more", "keys:\n  - name: A\n     key: a\n",
			`3:6: "key" is indented more than "name" on line 2, which already has a value: indent it like "name" (4 spaces)`},
		// (line 4)
		{"after a value that goes on over lines", "a: 1\nb: x\n  y\n  c: 2\n",
			`4:3: "c" is indented more than "b" on line 2, which already has a value: indent it like "b" (no spaces)`},
		// (line 3)
		{"key under a list item that is a value", "a:\n  - x\n    y: 1\n",
			`3:5: "y" is indented more than the list item on line 2, which is the single value "x": nothing can go under it`},
		// (line 3: the line after the mistake)
		{"key glued to its value in a list item", "keys:\n  - name:A\n    key: a\n",
			`2:9: "name:A" has no space after ":", so YAML reads it as a single value: write "name: A"`},
		// (line 3: the line after the mistake)
		{"key glued to its value", "a:\n  b:x\n  c: 2\n",
			`2:4: "b:x" has no space after ":", so YAML reads it as a single value: write "b: x"`},
		// (line 2)
		{"value with a colon", "a: 1\nb: c: 2\n",
			`2:4: the value of "b" contains ": ", which YAML reads as another key: quote the value, as "c: 2"`},
		// (no line: the first)
		{"value with a colon, first line", "- a: b: c # comment\n",
			`1:6: the value of "a" contains ": ", which YAML reads as another key: quote the value, as "b: c"`},
		{"value with a colon after a wide character", "é: x: y\n",
			`1:4: the value of "é" contains ": ", which YAML reads as another key: quote the value, as "x: y"`},
		{"CRLF line ends", "a: 1\r\nb: x\r\n  c: 2\r\n",
			`3:3: "c" is indented more than "b" on line 2, which already has a value: indent it like "b" (no spaces)`},

		// (line 3: the line after the mistake)
		{"key without its colon", "a:\n  name\n  c: 2\n",
			`2:3: "name" is neither a key ("key: value") nor a list item ("- item"): YAML reads it as the value of "a", and then fails on line 3`},
		{"key glued to its value, wide characters", "a:\n  ü:x\n  c: 2\n",
			`2:4: "ü:x" has no space after ":", so YAML reads it as a single value: write "ü: x"`},
		{"quoted key under a key that has a value", "\"a\": 1\n  'b': 2\n",
			`2:3: "b" is indented more than "a" on line 1, which already has a value: indent it like "a" (no spaces)`},
		{"value ending with a colon", "a: b:\n",
			`1:4: the value of "a" ends with ":", which YAML reads as another key: quote the value, as "b:"`},

		// did not find expected '-' indicator (line 5)
		{"key one space less than its siblings", "buckets:\n  - bucket: b\n    keys:\n      - name: A\n        key: a\n       value: V\n",
			`6:8: "value" is indented 7 spaces, which lines up with nothing above it: "key" on line 5 is indented 8`},
		// did not find expected key (line 2)
		{"key one space less, blank and comment lines between", "a:\n  b: 1\n\n  # comment\n c: 2\n",
			`5:2: "c" is indented 1 space, which lines up with nothing above it: "b" on line 2 is indented 2`},
		// did not find expected '-' indicator (line 1)
		{"key at the column of a list's dashes", "keys:\n  - name: A\n    key: a\n  value: b\n",
			`4:3: "value" is indented like the "-" of the list on line 2: indent it like "key" on line 3 (4 spaces) to add it to that item, or begin it with "- " to start an item`},
		// (line 1)
		{"key at the column of a list of values", "a:\n  - b\n  c: 1\n",
			`3:3: "c" is indented like the "-" of the list on line 2, where only list items ("- item") can go`},
		// did not find expected key (line 3)
		{"list item one space less", "a:\n  - x\n  - y\n - z\n",
			`4:2: this list item is indented 1 space, which lines up with nothing above it: the items of the list on line 2 are indented 2`},
		// (line 1)
		{"list item at the column of keys", "buckets:\n  - bucket: b\n    keys:\n      - name: A\n        key: a\n    - name: B\n      key: b\n",
			`6:5: this list item is indented like "keys" on line 3 (4 spaces), among the keys of a mapping: the items of the list on line 4 are indented 6`},
		// (line 1)
		{"list item among keys", "a: 1\n- b\n",
			`2:1: this list item is indented like "a" on line 1, among the keys of a mapping: a list goes on the lines under its key, indented more than it`},
		// (line 1)
		{"key under a quoted value", "a: \"x\"\n  b: 1\n",
			`2:3: "b" is indented more than "a" on line 1, which already has a value: indent it like "a" (no spaces)`},

		// could not find expected ':' (line 2)
		{"key glued to its value, then a key", "a: 1\nb:x\nc: 2\n",
			`2:2: "b:x" has no space after ":", so YAML reads it as a single value: write "b: x"`},
		// (line 3)
		{"value gone on at the column of keys", "a:\n  doc: this is long\n  and goes on\n  b: 1\n",
			`3:3: "and goes on" is neither a key ("key: value") nor a list item ("- item"): a value that goes on over lines is indented more than its key`},

		// block sequence entries are not allowed in this context (line 2)
		{"list on its key's line", "a:\n  b: - c\n",
			`2:6: a list cannot start on the line of its key "b": put "- c" on the next line, indented more than "b"`},
		// (no line: the first)
		{"list on its key's line, first line", "keys: - x\n",
			`1:7: a list cannot start on the line of its key "keys": put "- x" on the next line, indented more than "keys"`},

		// found character that cannot start any token (no line)
		{"value starting with @", "- a: @b\n",
			`1:6: "@" cannot start a value that is not quoted: quote the value, as "@b"`},
		// (line 2)
		{"value starting with a backquote", "a: 1\nb: `x`\n",
			"2:4: \"`\" cannot start a value that is not quoted: quote the value, as \"`x`\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schema.Load("f.yaml", []byte(tc.src))
			line, msg, _ := strings.Cut(tc.want, ": ")
			if want := "f.yaml:" + line + ": invalid YAML: " + msg; err == nil || err.Error() != want {
				t.Errorf("error\n  %v\nwant\n  %s", err, want)
			}
		})
	}
}

// yaml's own messages for the mistakes the hints explain: an error with
// one of them has no hint.
var yamlMessages = []string{
	"mapping values are not allowed in this context",
	"did not find expected key",
	"did not find expected '-' indicator",
	"could not find expected ':'",
	"block sequence entries are not allowed in this context",
	"found character that cannot start any token",
}

// Any line of a real schema indented one or two spaces more or less, when
// YAML cannot read the file so, gets a hint, at that line or after it
// (a line may be indented as it is only because the one above is not).
// Nearly always the hint names the line: as its position, or in its
// message. The exceptions are keys moved into a mapping where they are
// valid, so that a later line is the first YAML cannot take.
func TestYAMLLineHintsAnyShift(t *testing.T) {
	const file = "../examples/fleet/fleetkv/kvwatch.yaml"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	var hinted, named int
	for i, line := range lines {
		text := strings.TrimLeft(line, " ")
		if text == "" || text[0] == '#' {
			continue
		}
		indent := len(line) - len(text)
		for _, d := range []int{-2, -1, 1, 2} {
			if indent+d < 0 {
				continue
			}
			l := slices.Clone(lines)
			l[i] = strings.Repeat(" ", indent+d) + text
			_, err := schema.Load("f.yaml", []byte(strings.Join(l, "\n")))
			if err == nil || !strings.Contains(err.Error(), "invalid YAML") {
				continue
			}
			var at int
			fmt.Sscanf(err.Error(), "f.yaml:%d:", &at)
			switch msg := err.Error(); {
			case slices.ContainsFunc(yamlMessages, func(m string) bool { return strings.Contains(msg, m) }):
				t.Errorf("line %d as %q: no hint: %v", i+1, l[i], err)
			case at < i+1:
				t.Errorf("line %d as %q: reported before it: %v", i+1, l[i], err)
			case at == i+1 || regexp.MustCompile(fmt.Sprintf(`\bline %d\b`, i+1)).MatchString(msg):
				hinted++
				named++
			default:
				hinted++
			}
		}
	}
	if hinted < 100 || named < hinted*95/100 {
		t.Errorf("%d hints, %d naming the line shifted: want over 100, nearly all naming it", hinted, named)
	}
}
