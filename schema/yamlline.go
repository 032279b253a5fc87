package schema

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// yamlSrcLine is one line of a YAML file as the indentation hints read it:
// by its text alone, without the lines around it. It is only trusted for
// the simple block lines a schema is made of ("key: value", "- item",
// "- key: value"); for anything else (flow collections, explicit keys)
// the hints say nothing.
type yamlSrcLine struct {
	num    int    // 1-based line number
	text   string // without the line end
	indent int    // leading spaces
	dashes []int  // columns (1-based) of the "-" that start list items
	rest   string // the text after the indentation and the dashes
	col    int    // column of rest
	key    string // the key of a "key:" or "key: value" line, else ""
	colon  int    // index in rest of the key's ':', or -1
	value  string // after the key's ':', without blanks and comment
	valAt  int    // index in text of value
}

// yamlSrcLines splits src into lines (LF or CRLF ends).
func yamlSrcLines(src []byte) []string {
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

func parseYAMLLine(num int, text string) yamlSrcLine {
	l := yamlSrcLine{num: num, text: text, colon: -1}
	rest := strings.TrimLeft(text, " ")
	l.indent = len(text) - len(rest)
	l.col = l.indent + 1
	// "-" starts a list item when a blank or the line end follows it.
	for rest == "-" || strings.HasPrefix(rest, "- ") {
		l.dashes = append(l.dashes, l.col)
		after := strings.TrimLeft(rest[1:], " ")
		l.col += len(rest) - len(after)
		rest = after
	}
	l.rest = rest
	if i := keyColon(rest); i > 0 {
		l.colon = i
		l.key = strings.Trim(rest[:i], " ")
		if k := l.key; len(k) >= 2 && (k[0] == '"' || k[0] == '\'') && k[len(k)-1] == k[0] {
			l.key = k[1 : len(k)-1] // for messages, which quote it
		}
		after := rest[i+1:]
		l.value = stripComment(strings.Trim(after, " "))
		l.valAt = len(text) - len(strings.TrimLeft(after, " "))
	}
	return l
}

// keyColon finds the ':' that ends the key of a block mapping entry: the
// first one followed by a blank or the line end, outside quotes and
// before a comment. It returns -1 when there is none, and for flow
// collections, explicit keys and comments, which the hints do not read.
func keyColon(s string) int {
	if s == "" || strings.ContainsRune("[{?#", rune(s[0])) {
		return -1
	}
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case (c == '"' || c == '\'') && i == 0:
			quote = c
		case c == '#' && i > 0 && s[i-1] == ' ':
			return -1
		case c == ':' && (i+1 == len(s) || s[i+1] == ' '):
			return i
		}
	}
	return -1
}

// stripComment drops a " #" comment from the end of a value.
func stripComment(v string) string {
	if strings.HasPrefix(v, "#") {
		return ""
	}
	if i := strings.Index(v, " #"); i >= 0 && !strings.ContainsAny(v[:1], `"'`) {
		v = strings.TrimRight(v[:i], " ")
	}
	return v
}

// glued matches a key written with no blank after its ':' ("key:value"),
// which YAML reads as a single plain value, not as a key and its value.
// Keys start with a letter or "_", so that times ("12:30") are not taken
// for one, nor are URLs ("http://x").
var glued = regexp.MustCompile(`^[\p{L}_][\p{L}\p{N}_.-]*:[^\s:/]`)

// gluedColon returns the index of the ':' of s when s starts with a key
// glued to its value, else -1.
func gluedColon(s string) int {
	if !glued.MatchString(s) {
		return -1
	}
	return strings.IndexByte(s, ':')
}

// subject names what a line starts with, for messages: its key, or the
// list item.
func (l yamlSrcLine) subject() string {
	switch {
	case len(l.dashes) > 0:
		return "this list item"
	case l.key != "":
		return strconv.Quote(l.key)
	}
	return strconv.Quote(l.rest)
}

// first is the column of the first thing on the line: its first "-", or
// its key or value.
func (l yamlSrcLine) first() int {
	if len(l.dashes) > 0 {
		return l.dashes[0]
	}
	return l.col
}

// colAt returns the 1-based column, in characters, of the byte at index i
// of text, as yaml counts columns.
func colAt(text string, i int) int {
	return utf8.RuneCountInString(text[:min(i, len(text))]) + 1
}

// yamlWord reports whether s starts with a letter, a digit or "_": as a
// plain value does, and unlike a flow collection, a quoted value, an
// anchor, an alias, a tag or an explicit key.
func yamlWord(s string) bool {
	if s == "" {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s)
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
