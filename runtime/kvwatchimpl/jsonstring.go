package kvwatchimpl

import (
	"unicode/utf16"
	"unicode/utf8"
)

// stringBytes reads a string and returns its bytes: in the input when it
// has no escape, else in a new buffer. It fails on a control character
// (invalid JSON), on invalid UTF-8 and on an escaped lone surrogate (both
// of which encoding/json replaces with U+FFFD).
func (r *JSONReader) stringBytes() ([]byte, bool) {
	if !r.expect('"') {
		return nil, false
	}
	start, ascii := r.pos, true
	for r.pos < len(r.data) {
		c := r.data[r.pos]
		switch {
		case c == '"':
			s := r.data[start:r.pos]
			r.pos++
			if !ascii && !utf8.Valid(s) {
				return r.failString()
			}
			return s, true
		case c == '\\':
			return r.unescapeFrom(start, ascii)
		case c < 0x20:
			return r.failString()
		case c >= utf8.RuneSelf:
			ascii = false
		}
		r.pos++
	}
	return r.failString()
}

// unescapeFrom finishes reading a string that began at start and has an
// escape at r.pos, into a new buffer; ascii says whether the bytes before
// the escape were. It accepts the escapes JSON defines
// (json.Marshal writes <, > and & as \u003c, \u003e and \u0026), with a
// \u surrogate only as a valid pair.
func (r *JSONReader) unescapeFrom(start int, ascii bool) ([]byte, bool) {
	out := append(make([]byte, 0, r.pos-start+32), r.data[start:r.pos]...)
	for r.pos < len(r.data) {
		c := r.data[r.pos]
		switch {
		case c == '"':
			r.pos++
			if !ascii && !utf8.Valid(r.data[start:r.pos-1]) {
				return r.failString() // encoding/json replaces invalid UTF-8
			}
			return out, true
		case c == '\\':
			var ok bool
			if out, ok = r.appendEscape(out); !ok {
				return r.failString()
			}
		case c < 0x20:
			return r.failString()
		default:
			if c >= utf8.RuneSelf {
				ascii = false
			}
			out = append(out, c)
			r.pos++
		}
	}
	return r.failString()
}

// failString makes the reader fail, for stringBytes and unescapeFrom.
func (r *JSONReader) failString() ([]byte, bool) {
	r.failed = true
	return nil, false
}

// appendEscape appends the character of the escape at r.pos to out and
// moves past it.
func (r *JSONReader) appendEscape(out []byte) ([]byte, bool) {
	if r.pos+1 >= len(r.data) {
		return out, false
	}
	var c byte
	switch r.data[r.pos+1] {
	case '"', '\\', '/':
		c = r.data[r.pos+1]
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		rr := hex4(r.data[r.pos+2:])
		if rr < 0 {
			return out, false
		}
		r.pos += 6
		if utf16.IsSurrogate(rr) {
			if r.pos+1 >= len(r.data) || r.data[r.pos] != '\\' || r.data[r.pos+1] != 'u' {
				return out, false
			}
			dec := utf16.DecodeRune(rr, hex4(r.data[r.pos+2:]))
			if dec == utf8.RuneError {
				return out, false
			}
			r.pos += 6
			rr = dec
		}
		return utf8.AppendRune(out, rr), true
	default:
		return out, false
	}
	r.pos += 2
	return append(out, c), true
}

// hex4 decodes the four hex digits b starts with, -1 if it does not.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var rr rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		rr = rr*16 + rune(c)
	}
	return rr
}
