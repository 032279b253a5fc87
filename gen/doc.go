package gen

import "strings"

// commentWidth is the column doc comments are wrapped at.
const commentWidth = 78

// wrap formats text as a // comment wrapped at commentWidth, for
// jen.Comment (a comment starting with "//" is rendered as is). Blank
// lines in text separate paragraphs.
func wrap(text string) string { return wrapAt(text, "// ", commentWidth) }

// wrapIndented is wrap for comments inside a struct (one tab deeper).
func wrapIndented(text string) string {
	return strings.ReplaceAll(wrapAt(text, "// ", commentWidth-8), "\n", "\n\t")
}

func wrapAt(text, prefix string, width int) string {
	var lines []string
	for i, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		if i > 0 {
			lines = append(lines, "//")
		}
		line := prefix
		for _, word := range strings.Fields(para) {
			if len(line) > len(prefix) && len(line)+1+len(word) > width {
				lines = append(lines, line)
				line = prefix
			}
			if len(line) > len(prefix) {
				line += " "
			}
			line += word
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
