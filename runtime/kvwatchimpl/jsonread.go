package kvwatchimpl

import (
	"encoding/json"
	"unicode/utf8"
)

// JSONReader reads JSON for the decoders kvwatchgen writes for a schema's
// value types: the fast path of the JSON codec (see JSON.Fast). It is for
// generated code; its contract is what makes the fast path safe:
//
//   - A reader accepts a subset of JSON and never reports an error: on
//     anything outside that subset it fails, and every later call does
//     nothing. A decoder's result counts only when the reader has not
//     failed and reached the end of the input (End); otherwise the codec
//     decodes the same bytes again with encoding/json. So what a value
//     decodes to, or which error it gets, never depends on the path.
//   - Within the subset the result equals encoding/json's into a zero
//     value: strings, numbers in the grammar JSON allows
//     that fit their Go type, true/false, null (a no-op, or nil for a
//     slice or a map), objects whose keys match a field exactly and once,
//     arrays. A key that matches no field is skipped when it is valid JSON
//     and could not match a field case-insensitively either (which
//     encoding/json would do).
//   - Values of other types (time, bytes, raw JSON, external types) are
//     handed to encoding/json one field at a time (JSONValue).
//
// A JSONReader is not safe for concurrent use.
type JSONReader struct {
	data   []byte
	pos    int
	key    []byte // the last object key read by More
	depth  int    // objects and arrays open
	failed bool
}

// maxJSONDepth is encoding/json's nesting limit: deeper input fails here,
// and encoding/json then reports its own error.
const maxJSONDepth = 10000

// Fail makes the reader fail: the value is then decoded by encoding/json.
func (r *JSONReader) Fail() { r.failed = true }

// End reports whether the decoding succeeded: no failure, and nothing but
// white space after the value.
func (r *JSONReader) End() bool {
	r.skipSpace()
	return !r.failed && r.pos == len(r.data)
}

// skipSpace moves past JSON white space.
func (r *JSONReader) skipSpace() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (r *JSONReader) peek() byte {
	r.skipSpace()
	if r.pos < len(r.data) {
		return r.data[r.pos]
	}
	return 0
}

// expect consumes c after white space, or fails.
func (r *JSONReader) expect(c byte) bool {
	if r.failed || r.peek() != c {
		r.failed = true
		return false
	}
	r.pos++
	return true
}

// Null consumes a null literal and reports whether there was one. It also
// reports true once the reader has failed, so that decoders stop early.
func (r *JSONReader) Null() bool {
	if r.failed {
		return true
	}
	if r.peek() == 'n' && hasLiteral(r.data[r.pos:], "null") {
		r.pos += 4
		return true
	}
	return false
}

// hasLiteral reports whether b starts with lit (compared without copying).
func hasLiteral(b []byte, lit string) bool {
	return len(b) >= len(lit) && string(b[:len(lit)]) == lit
}

// Object consumes the '{' of an object and returns the counter More needs:
//
//	for i := r.Object(); r.More(&i); {
//		switch string(r.Key()) { ... }
//	}
func (r *JSONReader) Object() int {
	if r.expect('{') {
		r.open()
	}
	return 0
}

// More moves to the next key of the object and its ':' and reports whether
// there is one; false at the closing '}' (consumed) or on failure.
func (r *JSONReader) More(i *int) bool {
	if !r.next(i, '}') {
		return false
	}
	key, ok := r.stringBytes()
	if !ok || !r.expect(':') {
		r.failed = true
		return false
	}
	r.key = key
	return true
}

// Key returns the key More moved to, unescaped. It may point into the
// input: valid until the next call to More, not to be kept.
func (r *JSONReader) Key() []byte { return r.key }

// Array consumes the '[' of an array and returns the counter MoreElems
// needs.
func (r *JSONReader) Array() int {
	if r.expect('[') {
		r.open()
	}
	return 0
}

// MoreElems moves to the next element of the array and reports whether
// there is one; false at the closing ']' (consumed) or on failure.
func (r *JSONReader) MoreElems(i *int) bool { return r.next(i, ']') }

// open counts an object or array opened, failing past maxJSONDepth.
func (r *JSONReader) open() {
	if r.depth++; r.depth > maxJSONDepth {
		r.failed = true
	}
}

// next is the separator logic of More and MoreElems: before element *i,
// either the closing byte (the container ends) or, after the first
// element, a ','.
func (r *JSONReader) next(i *int, closing byte) bool {
	if r.failed {
		return false
	}
	switch c := r.peek(); {
	case c == closing:
		r.pos++
		r.depth--
		return false
	case *i == 0:
	case c == ',':
		r.pos++
	default:
		r.failed = true
		return false
	}
	*i++
	return true
}

// Once marks field bit of an object as seen, and fails if it was: with a
// key given twice, encoding/json's result depends on the field's type
// (merged structs, replaced slices), so the fast path leaves it to it.
func (r *JSONReader) Once(seen *uint64, bit uint) {
	if *seen&(1<<bit) != 0 {
		r.failed = true
	}
	*seen |= 1 << bit
}

// SkipUnknown skips the value of a key that matches none of fields (the
// type's JSON field names, all ASCII). It fails when encoding/json could
// still match the key to a field (case-insensitively; a key outside ASCII
// may fold onto one) or the value is not valid JSON (encoding/json would
// report it).
func (r *JSONReader) SkipUnknown(fields ...string) {
	for _, c := range r.key {
		if c >= utf8.RuneSelf {
			r.failed = true
			return
		}
	}
	for _, f := range fields {
		if equalFoldASCII(f, r.key) {
			r.failed = true
			return
		}
	}
	start := r.skipValue()
	if !r.failed && !json.Valid(r.data[start:r.pos]) {
		r.failed = true
	}
}

// equalFoldASCII reports whether ASCII strings a and b are equal under
// case folding (for ASCII, what Unicode folding and encoding/json do).
func equalFoldASCII(a string, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// skipValue moves past one JSON value and returns where it began (after
// white space). It finds the value's end without validating it: callers
// validate the bytes (json.Valid, json.Unmarshal), which also catches an
// end found wrong on invalid input.
func (r *JSONReader) skipValue() int {
	c := r.peek()
	start := r.pos
	switch {
	case r.failed:
	case c == 0:
		r.failed = true
	case c == '"':
		r.skipString()
	case c == '{' || c == '[':
		for depth := 0; r.pos < len(r.data); {
			switch r.data[r.pos] {
			case '"':
				r.skipString()
				continue
			case '{', '[':
				// encoding/json counts depth over the whole input, so
				// a value handed to it alone must be counted here.
				if depth++; r.depth+depth > maxJSONDepth {
					r.failed = true
					return start
				}
			case '}', ']':
				depth--
			}
			r.pos++
			if depth == 0 {
				return start
			}
		}
		r.failed = true
	default: // a number or a literal: up to the next delimiter
		for r.pos < len(r.data) && !isDelimiter(r.data[r.pos]) {
			r.pos++
		}
	}
	return start
}

// skipString moves past the string starting at r.pos, escapes included.
func (r *JSONReader) skipString() {
	for r.pos++; r.pos < len(r.data); r.pos++ {
		switch r.data[r.pos] {
		case '\\':
			r.pos++
		case '"':
			r.pos++
			return
		}
	}
	r.failed = true
}

// isDelimiter reports whether c cannot be part of a number or a literal.
func isDelimiter(c byte) bool {
	switch c {
	case ',', ':', '}', ']', '{', '[', '"', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
