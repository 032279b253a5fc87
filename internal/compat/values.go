package compat

import (
	"fmt"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file compares value types the way the generated JSON decoders read
// them: encoding/json into the declared Go types. A reader of type R reads
// what a writer of type W wrote when every value W encodes decodes into R
// with no error and to the same JSON value. Under encoding/json's rules:
// unknown object keys are skipped, a missing key leaves the zero value,
// null leaves a value as it is, object keys match field names
// case-insensitively, a number must fit the integer or float it is read
// into (a fraction never fits an integer), and a string is never a number.

// walkValues compares the value type of one kind, or of one field (old
// and new), and records what breaks each direction. subject names it in
// IDs ("Route.metric", or a kind's name for its whole value); what
// describes it in messages; where is its place in the new schema; keeps
// says how long the bucket keeps old values, for new readers' messages.
func (c *comparison) walkValues(o, n *schema.TypeRef, rule, subject, what string, where at, keeps string) {
	// Slices of slices of structs compare as their structs, field by
	// field; anything else as whole types.
	oi, ni := o, n
	for oi.Kind == ni.Kind && (oi.Kind == schema.TypeSlice || oi.Kind == schema.TypeMap) {
		oi, ni = oi.Elem, ni.Elem
	}
	switch {
	case oi.Kind == schema.TypeNamed && ni.Kind == schema.TypeNamed:
		c.structs(oi.Named, ni.Named, keeps)
		return
	case sameType(o, n):
		return
	}
	oldReaders, newReaders := reads(n, o), reads(o, n)
	if oldReaders == "" && newReaders == "" {
		c.add(where, NewReaders, Safe, rule, subject, "%s changed from %s to %s: both read the other's values (%s)", what, o, n, sameJSON(o, n))
		return
	}
	if oldReaders != "" {
		c.add(where, OldReaders, Breaking, rule, subject, "%s changed from %s to %s: old watchers reading what new writers write: %s", what, o, n, oldReaders)
	}
	if newReaders != "" {
		c.add(where, NewReaders, Breaking, rule, subject, "%s changed from %s to %s: new watchers reading old values: %s; %s", what, o, n, newReaders, keeps)
	}
}

// structs compares two struct types field by field, matched by JSON name
// as encoding/json matches them (exactly, else ignoring case).
func (c *comparison) structs(o, n *schema.Type, keeps string) {
	pair := [2]*schema.Type{o, n}
	if c.walked[pair] {
		return // compared already, or being compared (a type that holds itself)
	}
	c.walked[pair] = true
	matched := map[*schema.Field]bool{}
	for _, nf := range n.Fields {
		of := matchField(o, nf.JSONName)
		subject := n.Name + "." + nf.JSONName
		if of == nil {
			c.add(c.inNew(nf.Pos), NewReaders, Safe, "field-added", subject,
				"field %s added to %s: old watchers skip it; new watchers read it as its zero value in old values", nf.JSONName, n.Name)
			continue
		}
		matched[of] = true
		if of.JSONName != nf.JSONName {
			c.add(c.inNew(nf.Pos), NewReaders, Safe, "field-name-case", subject,
				"field %s of %s renamed %s: encoding/json matches field names ignoring case, so both read it", of.JSONName, n.Name, nf.JSONName)
		}
		c.walkValues(of.Type, nf.Type, "field-type", subject, fmt.Sprintf("field %s of %s", nf.JSONName, n.Name), c.inNew(nf.Pos), keeps)
	}
	for _, of := range o.Fields {
		if matched[of] {
			continue
		}
		hint := ""
		for _, nf := range n.Fields {
			if matchField(o, nf.JSONName) == nil && sameType(of.Type, nf.Type) {
				hint = fmt.Sprintf(" (renamed %s? the JSON name is what the entries carry)", nf.JSONName)
				break
			}
		}
		c.add(c.inOld(of.Pos), OldReaders, Breaking, "field-removed", n.Name+"."+of.JSONName,
			"field %s removed from %s%s: old watchers read it as its zero value in every value new writers write", of.JSONName, n.Name, hint)
	}
}

// matchField is the field of t that encoding/json fills from the object
// key name: the one named so exactly, else one whose name equals it
// ignoring case (the generated decoders do the same), nil for none.
func matchField(t *schema.Type, name string) *schema.Field {
	var folded *schema.Field
	for _, f := range t.Fields {
		if f.JSONName == name {
			return f
		}
		if folded == nil && strings.EqualFold(f.JSONName, name) {
			folded = f
		}
	}
	return folded
}

// sameType reports whether a and b are the same type expression, with
// int and int64, uint and uint64 the same (the generated Go types differ,
// which the Go API check says; the JSON does not).
func sameType(a, b *schema.TypeRef) bool {
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case schema.TypeBuiltin:
		return normBuiltin(a.Builtin) == normBuiltin(b.Builtin)
	case schema.TypeSlice, schema.TypeMap:
		return sameType(a.Elem, b.Elem)
	case schema.TypeNamed:
		return a.Named.Name == b.Named.Name
	case schema.TypeExternal:
		return a.ImportPath == b.ImportPath && a.Name == b.Name
	}
	return false
}

func normBuiltin(b string) string {
	switch b {
	case "int":
		return "int64"
	case "uint":
		return "uint64"
	}
	return b
}

// integerRange is the range of an integer type.
type integerRange struct {
	signed bool
	bits   int
}

// integerRanges are the values each integer builtin encodes and decodes;
// a duration is a count of nanoseconds, an int64 in JSON.
var integerRanges = map[string]integerRange{
	"int32": {true, 32}, "int64": {true, 64}, "duration": {true, 64},
	"uint32": {false, 32}, "uint64": {false, 64},
}

// reads says why a reader of type r does not read every value a writer of
// type w writes, "" when it does (same JSON value, no error). Slices and
// maps read as their elements do; a struct reads only a struct, which
// structs compares field by field.
func reads(w, r *schema.TypeRef) string {
	switch {
	case r.Kind == schema.TypeBuiltin && r.Builtin == "json":
		return "" // a json reader keeps whatever JSON it gets
	case w.Kind == schema.TypeExternal || r.Kind == schema.TypeExternal:
		if sameType(w, r) {
			return ""
		}
		return fmt.Sprintf("an external type's JSON is not known here, so %s cannot be shown to read what %s writes (DataError likely)", r, w)
	case w.Kind == r.Kind && (w.Kind == schema.TypeSlice || w.Kind == schema.TypeMap):
		return reads(w.Elem, r.Elem)
	case w.Kind != schema.TypeBuiltin || r.Kind != schema.TypeBuiltin:
		return fmt.Sprintf("%s is written as %s, which %s does not decode (DataError)", w, jsonShape(w), r)
	}
	wb, rb := normBuiltin(w.Builtin), normBuiltin(r.Builtin)
	if wb == rb {
		return ""
	}
	wi, wInt := integerRanges[wb]
	ri, rInt := integerRanges[rb]
	switch {
	case wInt && rInt:
		// w's range lies in r's: no negative value r cannot hold, and a
		// largest value (2^magnitude - 1) no larger than r's.
		magnitude := func(i integerRange) int {
			if i.signed {
				return i.bits - 1
			}
			return i.bits
		}
		if (!wi.signed || ri.signed && wi.bits <= ri.bits) && magnitude(wi) <= magnitude(ri) {
			return ""
		}
		return fmt.Sprintf("%s values outside %s's range fail to decode (DataError)", w.Builtin, r.Builtin)
	case wInt && rb == "float64":
		if wi.bits == 32 {
			return ""
		}
		return "whole numbers beyond 2^53 decode rounded: the reader holds another value"
	case wInt && rb == "float32":
		return "whole numbers beyond 2^24 decode rounded: the reader holds another value"
	case (wb == "float32" || wb == "float64") && rInt:
		return "numbers with a fraction or an exponent fail to decode (DataError)"
	case wb == "float32" && rb == "float64":
		return ""
	case wb == "float64" && rb == "float32":
		return "numbers beyond float32's range fail to decode (DataError), others decode rounded"
	case rb == "string" && (wb == "time" || wb == "bytes"):
		return "" // the reader holds the RFC 3339 or base64 text: the same JSON
	}
	return fmt.Sprintf("%s is written as %s, which %s does not decode (DataError)", w, jsonShape(w), r)
}

// sameJSON explains why two different types read each other's values.
func sameJSON(o, n *schema.TypeRef) string {
	return fmt.Sprintf("%s is written as %s, %s as %s", o, jsonShape(o), n, jsonShape(n))
}

// jsonShape says what JSON a type encodes to.
func jsonShape(t *schema.TypeRef) string {
	switch t.Kind {
	case schema.TypeSlice:
		return "an array (or null)"
	case schema.TypeMap, schema.TypeNamed:
		if t.Kind == schema.TypeMap {
			return "an object (or null)"
		}
		return "an object"
	case schema.TypeExternal:
		return "its own JSON"
	}
	switch t.Builtin {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		return "a whole number"
	case "duration":
		return "a whole number of nanoseconds"
	case "float32", "float64":
		return "a number"
	case "bytes":
		return "a base64 string (or null)"
	case "time":
		return "an RFC 3339 string"
	case "json":
		return "any JSON"
	}
	return t.Builtin
}
