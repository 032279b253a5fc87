package schema

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlHints explain the syntax errors of go.yaml.in/yaml/v3 that common
// mistakes cause, each at the position of the likely mistake, with what
// likely fixes it. They are tried in order; the first that knows the
// error gives it. Errors none knows keep yaml's message and line.
var yamlHints = []func(src []byte, err error) (Pos, string, bool){
	yamlTabHint,
	yamlLineHint,
}

// yamlError returns the position and the message of the schema error for
// err, a syntax error yaml found in src.
func yamlError(src []byte, err error) (Pos, string) {
	for _, hint := range yamlHints {
		if p, msg, ok := hint(src, err); ok {
			return p, "invalid YAML: " + msg
		}
	}
	return yamlErrorPos(err), "invalid YAML: " + yamlProblem(err)
}

// yamlLine finds the line number in a YAML syntax error message.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

func yamlErrorPos(err error) Pos {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Pos{Line: line, Col: 1}
	}
	return Pos{Line: 1, Col: 1}
}

// yamlTabProblems are the messages go.yaml.in/yaml/v3 gives for a tab where
// YAML wants spaces. The first can also be another character (such as "@").
var yamlTabProblems = []string{
	"found character that cannot start any token",
	"found a tab character that violates indentation",
	"found a tab character where an indentation space is expected",
}

// yamlTabHint explains a tab where YAML wants spaces, at the tab.
func yamlTabHint(src []byte, err error) (Pos, string, bool) {
	p, ok := yamlTabPos(src, err)
	return p, "tabs are not allowed in YAML indentation: use spaces", ok
}

// yamlTabPos finds the tab that a YAML tab error is about, when err is one.
// The line yaml names is not always the tab's: for a tab in the
// indentation after a plain or block scalar, it is the scalar's line. The
// tab is at or after the start of that line, and preceded on its own line
// only by blanks and the indicators - ? :. It is the first such tab that,
// with what precedes it, makes yaml fail with the same error: yaml reads
// its input in order, so it fails at the first tab it cannot take.
func yamlTabPos(src []byte, err error) (Pos, bool) {
	msg := err.Error()
	if !slices.ContainsFunc(yamlTabProblems, func(p string) bool { return strings.HasSuffix(msg, p) }) {
		return Pos{}, false
	}
	from := yamlErrorPos(err).Line // 1 also when yaml names no line
	line, lineStart := 1, 0
	for i := 0; i < len(src); i++ {
		switch {
		case src[i] == '\n':
			line, lineStart = line+1, i+1
			continue
		case src[i] != '\t' || line < from:
			continue
		case strings.Trim(string(src[lineStart:i]), " \t-?:") != "":
			continue
		}
		var n yaml.Node
		if e := yaml.Unmarshal(src[:i+1], &n); e != nil && e.Error() == msg {
			return Pos{Line: line, Col: i - lineStart + 1}, true // only ASCII precedes it on the line
		}
	}
	return Pos{}, false
}

// yamlProblem returns yaml's message for err without the line it names.
func yamlProblem(err error) string {
	msg := err.Error()
	if m := yamlLine.FindStringIndex(msg); m != nil {
		msg = msg[m[1]:]
	}
	return strings.TrimPrefix(msg, "yaml: ")
}
