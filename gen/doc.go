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

// article returns the indefinite article for name, a Go name or a word:
// "an" when it is read starting with a vowel sound, "a" otherwise. A
// leading initialism (a run of capitals: "HTTPRoute", "APIKey", the "A"
// of "AWatcher") is read letter by letter, so "an HTTPRoute" and "a
// URLMap", unless it is one of the few read as a word ("a NATSAccount").
// A word is read by its first letters, with the usual exceptions ("a
// User", "an Update", "a Euro", "a OneShot", "an Hour").
func article(name string) string {
	if len(name) == 0 {
		return "a"
	}
	if len(name) > 1 && isUpper(name[0]) && isUpper(name[1]) {
		i := 0
		for i < len(name) && (isUpper(name[i]) || '0' <= name[i] && name[i] <= '9') {
			i++
		}
		if i < len(name) && 'a' <= name[i] && name[i] <= 'z' {
			i-- // the last capital starts the next word: "HTTP" of "HTTPRoute"
		}
		if !initialismsReadAsWords[name[:i]] {
			if strings.IndexByte("AEFHILMNORSX", name[0]) >= 0 {
				return "an"
			}
			return "a"
		}
	}
	if wordStartsWithVowelSound(strings.ToLower(name)) {
		return "an"
	}
	return "a"
}

// initialismsReadAsWords are initialisms of infrastructure names that are
// pronounced as words, not spelled out.
var initialismsReadAsWords = map[string]bool{
	"NATS": true, "NAT": true, "LAN": true, "WAN": true, "RAM": true, "ROM": true, "SAN": true,
	"NAS": true, "NIC": true, "MAC": true, "SIM": true, "SAML": true, "RAID": true, "SOAP": true,
	"REST": true, "FAQ": true, "LUN": true,
}

// wordStartsWithVowelSound reports whether a lower-case word starts with a
// vowel sound: a, e, i, o or u, but not the "y" sound of "user", "unit" or
// "euro", nor the "w" of "one", and also the silent h of "hour".
func wordStartsWithVowelSound(w string) bool {
	for _, p := range []string{"hour", "honest", "honor", "honour", "heir"} {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	switch {
	case strings.HasPrefix(w, "one"), strings.HasPrefix(w, "once"), strings.HasPrefix(w, "eu"), strings.HasPrefix(w, "ewe"):
		return false
	case strings.HasPrefix(w, "uni"):
		return strings.HasPrefix(w, "unin") // "uninstalled", but "unique", "unit"
	case strings.HasPrefix(w, "un"), strings.HasPrefix(w, "up"):
		return true // "unknown", "unused", "update", "upstream"
	case len(w) > 2 && w[0] == 'u' && !isVowel(w[1]) && isVowel(w[2]):
		return false // "user", "usage", "utility", "uranium"
	case strings.HasPrefix(w, "uu"):
		return false // "uuid"
	}
	return isVowel(w[0])
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

func isVowel(c byte) bool { return strings.IndexByte("aeiou", c) >= 0 }
