package schema

import (
	"go/token"
	"strings"
	"unicode"
	"unicode/utf8"
)

// initialisms are words written all in capitals in Go names: the list from
// Go's own style tooling (golint's commonInitialisms), plus networking words
// that fleet schemas are full of (VPC, CIDR, ...). A word is only
// capitalized whole when it is one of these; "vpc_id" becomes VPCID,
// "route_id" RouteID, "next_hop" NextHop.
var initialisms = map[string]bool{
	"ACL": true, "API": true, "ASCII": true, "CPU": true, "CSS": true, "DNS": true, "EOF": true,
	"GUID": true, "HTML": true, "HTTP": true, "HTTPS": true, "ID": true, "IP": true, "JSON": true,
	"LHS": true, "QPS": true, "RAM": true, "RHS": true, "RPC": true, "SLA": true, "SMTP": true,
	"SQL": true, "SSH": true, "TCP": true, "TLS": true, "TTL": true, "UDP": true, "UI": true,
	"UID": true, "UUID": true, "URI": true, "URL": true, "UTF8": true, "VM": true, "XML": true,
	"XMPP": true, "XSRF": true, "XSS": true,
	// Networking and fleet vocabulary.
	"VPC": true, "CIDR": true, "NAT": true, "MAC": true, "VLAN": true, "DHCP": true, "BGP": true,
	"AZ": true, "ARN": true, "MTU": true, "KV": true,
}

// camelCase turns a schema name (snake_case, kebab-case, dotted or already
// camelCase) into an exported Go name: words are split at '_', '-', '.',
// and lower-to-upper case changes; each word is capitalized, or written in
// capitals when it is an initialism. The result may still not be a valid
// identifier (a leading digit): callers check with isExported.
func camelCase(s string) string {
	var b strings.Builder
	for _, w := range splitWords(s) {
		if up := strings.ToUpper(w); initialisms[up] {
			b.WriteString(up)
			continue
		}
		r, size := utf8.DecodeRuneInString(w)
		b.WriteRune(unicode.ToUpper(r))
		b.WriteString(w[size:])
	}
	return b.String()
}

// splitWords splits at separators and before an upper-case letter that
// follows a lower-case letter or digit ("routeID" -> "route", "ID").
func splitWords(s string) []string {
	var words []string
	start := -1
	var prev rune
	for i, r := range s {
		sep := r == '_' || r == '-' || r == '.' || r == ' '
		boundary := unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev))
		if start >= 0 && (sep || boundary) {
			words = append(words, s[start:i])
			start = -1
		}
		if !sep && start < 0 {
			start = i
		}
		prev = r
	}
	if start >= 0 {
		words = append(words, s[start:])
	}
	return words
}

// isExported reports whether s is an exported Go identifier.
func isExported(s string) bool {
	return token.IsIdentifier(s) && token.IsExported(s)
}
