package checkpointfile

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// TypeName names t for a header's Kind.Codec: its package path and name,
// without type arguments ("github.com/…/kvwatchimpl.JSON" for every
// JSON[V]), or its literal form for an unnamed type; "<nil>" for nil.
func TypeName(t reflect.Type) string {
	if t == nil {
		return "<nil>"
	}
	name, _, _ := strings.Cut(t.Name(), "[")
	if name == "" {
		return t.String()
	}
	return t.PkgPath() + "." + name
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// Shape is a digest of what encoding/json sees of t, for a header's
// Kind.ValueShape: exported and embedded fields with their names, tags
// and types, element and key types, down to named types that encode
// themselves (json.Marshaler, encoding.TextMarshaler, such as time.Time),
// which count by name. Two types differing in any of these have
// different shapes (but for digest collisions, 64 bits of SHA-256); the
// same type always has the same one, in any process.
func Shape(t reflect.Type) string {
	var sb strings.Builder
	writeShape(&sb, t, map[reflect.Type]bool{})
	sum := sha256.Sum256([]byte(sb.String()))
	return hex.EncodeToString(sum[:8])
}

func writeShape(sb *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	if t.Name() != "" {
		sb.WriteString(t.PkgPath() + "." + t.Name())
		if seen[t] {
			return
		}
		seen[t] = true
		pt := reflect.PointerTo(t)
		if t.Implements(jsonMarshalerType) || pt.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) || pt.Implements(textMarshalerType) {
			return
		}
		sb.WriteString("=")
	}
	switch t.Kind() {
	case reflect.Struct:
		sb.WriteString("struct{")
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			sb.WriteString(f.Name)
			if f.Anonymous {
				sb.WriteString("(embedded)")
			}
			sb.WriteString(" ")
			writeShape(sb, f.Type, seen)
			sb.WriteString(" " + strconv.Quote(string(f.Tag)) + ";")
		}
		sb.WriteString("}")
	case reflect.Pointer:
		sb.WriteString("*")
		writeShape(sb, t.Elem(), seen)
	case reflect.Slice:
		sb.WriteString("[]")
		writeShape(sb, t.Elem(), seen)
	case reflect.Array:
		sb.WriteString("[" + strconv.Itoa(t.Len()) + "]")
		writeShape(sb, t.Elem(), seen)
	case reflect.Map:
		sb.WriteString("map[")
		writeShape(sb, t.Key(), seen)
		sb.WriteString("]")
		writeShape(sb, t.Elem(), seen)
	default:
		sb.WriteString(t.Kind().String())
	}
}
