package kvwatch

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// isKeyTokenByte reports whether b may appear inside one token of a NATS KV
// key: the key charset [-/_=.A-Za-z0-9] without the token separator '.'.
func isKeyTokenByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	case b == '-', b == '/', b == '_', b == '=':
		return true
	}
	return false
}

// validTokenFast is ValidToken without the reason: it does not allocate.
func validTokenFast(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isKeyTokenByte(s[i]) {
			return false
		}
	}
	return true
}

// ValidToken reports why s cannot be used as one token of a KV key, or nil
// when it can. A valid token is non-empty and made only of the key charset
// [-/_=A-Za-z0-9]. The reasons are specific because a token that is not
// rejected here becomes part of a subject filter: "*" and ">" would widen a
// scoped watch to other tenants' keys, and "." would shift every token after
// it.
func ValidToken(s string) error {
	if s == "" {
		return errEmptyToken
	}
	for i := 0; i < len(s); {
		b := s[i]
		if isKeyTokenByte(b) {
			i++
			continue
		}
		r, _ := utf8.DecodeRuneInString(s[i:])
		switch {
		case b == '.':
			return fmt.Errorf("contains %q at byte %d: a value is one token and cannot contain the token separator", '.', i)
		case b == '*' || b == '>':
			return fmt.Errorf("contains the subject wildcard %q at byte %d", rune(b), i)
		case unicode.IsSpace(r):
			return fmt.Errorf("contains whitespace %q at byte %d", r, i)
		default:
			return fmt.Errorf("contains %q at byte %d, outside the key charset [-/_=A-Za-z0-9]", r, i)
		}
	}
	return nil
}

var errEmptyToken = errors.New("is empty")
