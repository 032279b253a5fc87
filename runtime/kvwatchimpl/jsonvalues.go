package kvwatchimpl

import (
	"encoding/json"
	"math"
	"strconv"
)

// The value readers of JSONReader. Each has the shape func(*JSONReader,
// *T) (methods through method expressions), so that generated code can
// pass them as the element decoders of JSONSlice and JSONMap. Each leaves
// *p as it is on null, as encoding/json does for these types.

// ReadString decodes a string into *p.
func (r *JSONReader) ReadString(p *string) {
	if r.Null() {
		return
	}
	if s, ok := r.stringBytes(); ok {
		*p = string(s)
	}
}

// ReadBool decodes true or false into *p.
func (r *JSONReader) ReadBool(p *bool) {
	if r.Null() {
		return
	}
	rest := r.data[r.pos:]
	switch {
	case hasLiteral(rest, "true"):
		*p = true
		r.pos += 4
	case hasLiteral(rest, "false"):
		*p = false
		r.pos += 5
	default:
		r.failed = true
	}
}

// ReadFloat64 decodes a number into *p.
func (r *JSONReader) ReadFloat64(p *float64) {
	if r.Null() {
		return
	}
	if f, ok := r.float(64); ok {
		*p = f
	}
}

// ReadFloat32 decodes a number into *p, rounded once to float32 as
// encoding/json does (not through float64).
func (r *JSONReader) ReadFloat32(p *float32) {
	if r.Null() {
		return
	}
	if f, ok := r.float(32); ok {
		*p = float32(f)
	}
}

// JSONInt decodes an integer into *p; a fraction, an exponent or a value
// out of T's range fails (encoding/json rejects them).
func JSONInt[T ~int | ~int8 | ~int16 | ~int32 | ~int64](r *JSONReader, p *T) {
	if r.Null() {
		return
	}
	negative := r.peek() == '-'
	if negative {
		r.pos++
	}
	mag, ok := r.digits()
	switch {
	case !ok:
	case negative && mag <= 1<<63:
		n := int64(-mag) // wraps to math.MinInt64 at 1<<63, as wanted
		if int64(T(n)) != n {
			r.failed = true
			return
		}
		*p = T(n)
	case !negative && mag <= math.MaxInt64:
		n := int64(mag)
		if int64(T(n)) != n {
			r.failed = true
			return
		}
		*p = T(n)
	default:
		r.failed = true
	}
}

// JSONUint decodes a non-negative integer into *p; a sign, a fraction, an
// exponent or a value out of T's range fails.
func JSONUint[T ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64](r *JSONReader, p *T) {
	if r.Null() {
		return
	}
	r.peek()
	mag, ok := r.digits()
	if !ok {
		return
	}
	if uint64(T(mag)) != mag {
		r.failed = true
		return
	}
	*p = T(mag)
}

// digits reads the digits of an integer, JSON's way (no leading zero), as
// a uint64; it fails on overflow and when a fraction or an exponent
// follows.
func (r *JSONReader) digits() (uint64, bool) {
	start := r.pos
	var n uint64
	for r.pos < len(r.data) {
		c := r.data[r.pos]
		if c < '0' || c > '9' {
			break
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			r.failed = true
			return 0, false
		}
		n = n*10 + d
		r.pos++
	}
	switch {
	case r.pos == start, r.data[start] == '0' && r.pos-start > 1:
		r.failed = true
	case r.pos < len(r.data) && (r.data[r.pos] == '.' || r.data[r.pos] == 'e' || r.data[r.pos] == 'E'):
		r.failed = true
	}
	return n, !r.failed
}

// float reads a number in JSON's grammar and parses it at bits (32 or 64);
// a number out of range fails.
func (r *JSONReader) float(bits int) (float64, bool) {
	if r.peek() == 0 || r.failed {
		r.failed = true
		return 0, false
	}
	start := r.pos
	if r.data[r.pos] == '-' {
		r.pos++
	}
	if !r.skipDigits(false) {
		return 0, false
	}
	if r.pos < len(r.data) && r.data[r.pos] == '.' {
		r.pos++
		if !r.skipDigits(true) {
			return 0, false
		}
	}
	if r.pos < len(r.data) && (r.data[r.pos] == 'e' || r.data[r.pos] == 'E') {
		r.pos++
		if r.pos < len(r.data) && (r.data[r.pos] == '+' || r.data[r.pos] == '-') {
			r.pos++
		}
		if !r.skipDigits(true) {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(r.data[start:r.pos]), bits)
	if err != nil {
		r.failed = true
		return 0, false
	}
	return f, true
}

// skipDigits moves past a run of digits; without leadingZeros, a run that
// starts with 0 must be just "0" (JSON's integer part).
func (r *JSONReader) skipDigits(leadingZeros bool) bool {
	start := r.pos
	for r.pos < len(r.data) && r.data[r.pos] >= '0' && r.data[r.pos] <= '9' {
		r.pos++
	}
	if r.pos == start || !leadingZeros && r.data[start] == '0' && r.pos-start > 1 {
		r.failed = true
	}
	return !r.failed
}

// JSONSlice decodes an array into *p with elem decoding each element into
// a zero E; null makes *p nil and [] an empty, non-nil slice, as
// encoding/json does.
func JSONSlice[E any](r *JSONReader, p *[]E, elem func(*JSONReader, *E)) {
	if r.Null() {
		*p = nil
		return
	}
	s := []E{}
	for i := r.Array(); r.MoreElems(&i); {
		if cap(s) == 0 {
			// Room for a few at once: short lists take one allocation,
			// not one per element.
			s = make([]E, 0, 4)
		}
		// Into the slice's own zero element, as encoding/json does: no
		// element on the side to copy (or to allocate).
		var zero E
		s = append(s, zero)
		elem(r, &s[len(s)-1])
	}
	*p = s
}

// JSONMap decodes an object into the map *p (made when nil) with elem
// decoding each value into a zero E; a repeated key keeps its last value,
// null makes *p nil, as encoding/json does.
func JSONMap[E any](r *JSONReader, p *map[string]E, elem func(*JSONReader, *E)) {
	if r.Null() {
		*p = nil
		return
	}
	m := *p
	if m == nil {
		m = map[string]E{}
	}
	e := new(E) // one element decoded into, reset for each key
	for i := r.Object(); r.More(&i); {
		key := string(r.Key())
		var zero E
		*e = zero
		elem(r, e)
		m[key] = *e
	}
	*p = m
}

// JSONValue decodes one value into *p with encoding/json: for the types
// the fast path does not read itself (time, bytes, raw JSON, external
// types). encoding/json gets the same bytes it would get decoding the
// whole value, and any error makes the reader fail.
func JSONValue[T any](r *JSONReader, p *T) {
	start := r.skipValue()
	if r.failed {
		return
	}
	if err := json.Unmarshal(r.data[start:r.pos], p); err != nil {
		r.failed = true
	}
}
