package schema_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

const tabMsg = "invalid YAML: tabs are not allowed in YAML indentation: use spaces"

// A tab where YAML wants spaces is reported at the tab itself, whichever of
// its messages go.yaml.in/yaml/v3 gives and whatever line it names (for a
// tab after a plain scalar, the line of that scalar: one line early).
func TestYAMLTabErrors(t *testing.T) {
	const head = "version: 1\npackage: p\nbuckets:\n  - bucket: b\n    keys:\n      - name: K\n" // 6 lines
	cases := []struct {
		name, src, want string // want: LINE:COL: message
	}{
		{"tab after a plain scalar's line", head + "\tkey: k\n", "7:1: " + tabMsg},
		{"spaces, then a tab", head + "      \tkey: k\n", "7:7: " + tabMsg},
		{"tabs after blank lines", head + "\n\n\t\tkey: k\n", "9:1: " + tabMsg},
		{"tab after a mapping key", "a:\n  b:\n\tc: 1\n", "3:1: " + tabMsg},
		{"tab before a nested key", "a:\n  b:\n  \t c: 1\n", "3:3: " + tabMsg},
		{"tab after a list indicator", "a:\n  -\tx\n", "2:4: " + tabMsg},
		{"tab on the first line", "\ta: 1\n", "1:1: " + tabMsg},
		{"tab in a block scalar's indentation", "a: 1\nb: |\n  x\n\ty\n", "4:1: " + tabMsg},
		// The tab of line 4 is content (past the block's indentation); the
		// one of line 5 is the error.
		{"content tab, then a bad one", "a: 1\nb: |\n  x\n  \ty\n\tz\n", "5:1: " + tabMsg},
		{"tab-only line", "a: 1\nb: x\n\t\n", "3:1: " + tabMsg},
		{"CRLF line ends", "a: 1\r\nb: x\r\n  c\r\n\td: 1\r\n", "4:1: " + tabMsg},
		{"after a multi-byte character", "a: 1\nb: é\n\tc: 1\n", "3:1: " + tabMsg},
		// Not tab errors: other hints explain them (yamlindent_test.go), or
		// yaml's message stays, at yaml's line.
		{"character that cannot start a token", "a: 1\nb: @x\n", `2:4: invalid YAML: "@" cannot start a value that is not quoted: quote the value, as "@x"`},
		{"indentation with spaces", "a:\n  b: 1\n c: 2\n", `3:2: invalid YAML: "c" is indented 1 space, which lines up with nothing above it: "b" on line 2 is indented 2`},
		{"unclosed quote", "a: 1\nb: \"x\nc: 2\n", "2:1: invalid YAML: found unexpected end of stream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := schema.Load("f.yaml", []byte(tc.src))
			if want := "f.yaml:" + tc.want; err == nil || err.Error() != want {
				t.Errorf("error\n  %v\nwant\n  %s", err, want)
			}
		})
	}
}

// Tabs YAML allows stay allowed: in quoted strings, in flow collections,
// after a value indicator, before a comment.
func TestYAMLTabsAllowed(t *testing.T) {
	src := "version: 1\npackage: p\nbuckets:\n  - bucket: b\n    doc: \"a\tb\"\n" +
		"    keys: [{name: K, key: k,\n\tvalue: string}]\t# comment\n" +
		"types:\n  T:\n    doc: |\n      line\n      \tindented with a tab past the block's indentation\n    fields:\n      a:\tstring\n"
	if _, err := schema.Load("f.yaml", []byte(src)); err != nil {
		t.Fatal(err)
	}
}

// The golden case yaml_tab has a tab on line 23 (the line after a plain
// scalar, which go.yaml.in/yaml/v3 reports as line 22).
func TestYAMLTabGolden(t *testing.T) {
	const file = "../golden/yaml_tab/kvwatch.yaml"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if line := strings.Split(string(src), "\n")[22]; !strings.HasPrefix(line, "\t") {
		t.Fatalf("line 23 of %s is %q, want a line indented with a tab", file, line)
	}
	_, err = schema.LoadFile(file)
	if want := file + ":23:1: " + tabMsg; err == nil || err.Error() != want {
		t.Errorf("error\n  %v\nwant\n  %s", err, want)
	}
}

// A tab put into the indentation of any line of a real schema (before it,
// in place of its first space, or as its last indentation character) is
// reported at that tab, or accepted where YAML allows it (comment lines).
// (An error that is not of YAML is the schema's own, not checked here.)
func TestYAMLTabAnywhere(t *testing.T) {
	const file = "../examples/fleet/fleetkv/kvwatch.yaml"
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	reported := 0
	for i, line := range lines {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		variants := map[int]string{1: "\t" + line} // tab column -> line
		if indent >= 1 {
			variants[1] = "\t" + line[1:]
		}
		if indent >= 2 {
			variants[indent] = line[:indent-1] + "\t" + line[indent:]
		}
		for col, changed := range variants {
			l := slices.Clone(lines)
			l[i] = changed
			_, err := schema.Load("f.yaml", []byte(strings.Join(l, "\n")))
			switch want := fmt.Sprintf("f.yaml:%d:%d: %s", i+1, col, tabMsg); {
			case err == nil || !strings.Contains(err.Error(), "invalid YAML"):
			case err.Error() == want:
				reported++
			default:
				t.Errorf("line %d as %q: %v, want %s", i+1, changed, err, want)
			}
		}
	}
	if reported < len(lines)/2 {
		t.Errorf("%d tabs reported in %d lines: want most", reported, len(lines))
	}
}
