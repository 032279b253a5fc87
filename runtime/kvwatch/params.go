package kvwatch

import (
	"errors"
	"fmt"
	"strconv"
)

// Typed key parameters are written in canonical decimal: no '+', no
// leading zeros, no "-0". Parsing accepts only that form, so that a key
// and its typed struct map one to one: Parse(k.String()) == k and
// Parse(s).String() == s.

// ParseIntParam parses a canonical decimal int64 key token.
func ParseIntParam(s string) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an int64: %w", s, errors.Unwrap(err))
	}
	if !canonicalDecimal(s, true) {
		return 0, fmt.Errorf("%q is not in canonical form (want %q)", s, strconv.FormatInt(v, 10))
	}
	return v, nil
}

// ParseUintParam parses a canonical decimal uint64 key token.
func ParseUintParam(s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a uint64: %w", s, errors.Unwrap(err))
	}
	if !canonicalDecimal(s, false) {
		return 0, fmt.Errorf("%q is not in canonical form (want %q)", s, strconv.FormatUint(v, 10))
	}
	return v, nil
}

// canonicalDecimal reports whether s, which strconv parsed, is written as
// FormatInt/FormatUint would write it: no '+', no leading zero, no "-0".
// It does not allocate (formatting the number back would).
func canonicalDecimal(s string, signed bool) bool {
	if signed && len(s) > 1 && s[0] == '-' {
		s = s[1:]
		if s == "0" {
			return false
		}
	}
	return s != "" && s[0] != '+' && (s[0] != '0' || len(s) == 1)
}

// ParamError reports a key whose token for a typed parameter does not
// parse.
type ParamError struct {
	Key   string // the key
	Param string // the parameter name
	Err   error
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("key %q: parameter %s: %v", e.Key, e.Param, e.Err)
}

// Unwrap returns the parse error.
func (e *ParamError) Unwrap() error { return e.Err }
