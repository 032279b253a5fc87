package kvwatchimpl

import "github.com/kvwatchgen/kvwatchgen/internal/keys"

// Typed key parameters are written in canonical decimal: no '+', no
// leading zeros, no "-0" (internal/keys, the grammar the schema follows
// too). Parsing accepts only that form, so that a key and its typed struct
// map one to one: Parse(k.String()) == k and Parse(s).String() == s.

// ParseIntParam parses a canonical decimal int64 key token.
func ParseIntParam(s string) (int64, error) { return keys.ParseInt(s) }

// ParseUintParam parses a canonical decimal uint64 key token.
func ParseUintParam(s string) (uint64, error) { return keys.ParseUint(s) }
