package kvwatch

import (
	"encoding"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file keeps generated code of versions 2 and 3 building. Version 2
// used these names from kvwatch, which are now kvwatchimpl's (the plumbing
// only generated code uses); version 3 still compiled key templates with
// kvwatch.MustTemplate. They go in the next release; regenerate to stop
// using them.

// Deprecated: for generated code of versions 2 and 3; regenerate.
type Template = kvwatchimpl.Template

// MustTemplate is kvwatchimpl.MustTemplate.
//
// Deprecated: for generated code of versions 2 and 3; regenerate.
func MustTemplate(raw string) *Template { return kvwatchimpl.MustTemplate(raw) }

// Deprecated: for generated code of version 2; regenerate.
type (
	Kind[K comparable, V any] = kvwatchimpl.Kind[K, V]
	BucketSpec                = kvwatchimpl.BucketSpec
	ScopeSpec                 = kvwatchimpl.ScopeSpec
	Codec[V any]              = kvwatchimpl.Codec[V]
	JSON[V any]               = kvwatchimpl.JSON[V]
	String                    = kvwatchimpl.String
	Bytes                     = kvwatchimpl.Bytes
	Text[V any, P interface {
		*V
		encoding.TextMarshaler
		encoding.TextUnmarshaler
	}] = kvwatchimpl.Text[V, P]
	Binary[V any, P interface {
		*V
		encoding.BinaryMarshaler
		encoding.BinaryUnmarshaler
	}] = kvwatchimpl.Binary[V, P]
	JSONReader                     = kvwatchimpl.JSONReader
	GeneratedCodeTooOld_Regenerate = kvwatchimpl.GeneratedCodeTooOld_Regenerate
	RuntimeTooOld_UpgradeModule    = kvwatchimpl.RuntimeTooOld_UpgradeModule
)

// Deprecated: for generated code of version 2; regenerate.
const (
	GenVersion = kvwatchimpl.GenVersion
	MinVersion = kvwatchimpl.MinVersion
	MaxVersion = kvwatchimpl.MaxVersion
)

// JSONInt is kvwatchimpl.JSONInt.
//
// Deprecated: for generated code of version 2; regenerate.
func JSONInt[T ~int | ~int8 | ~int16 | ~int32 | ~int64](r *JSONReader, p *T) {
	kvwatchimpl.JSONInt(r, p)
}

// JSONUint is kvwatchimpl.JSONUint.
//
// Deprecated: for generated code of version 2; regenerate.
func JSONUint[T ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64](r *JSONReader, p *T) {
	kvwatchimpl.JSONUint(r, p)
}

// JSONSlice is kvwatchimpl.JSONSlice.
//
// Deprecated: for generated code of version 2; regenerate.
func JSONSlice[E any](r *JSONReader, p *[]E, elem func(*JSONReader, *E)) {
	kvwatchimpl.JSONSlice(r, p, elem)
}

// JSONMap is kvwatchimpl.JSONMap.
//
// Deprecated: for generated code of version 2; regenerate.
func JSONMap[E any](r *JSONReader, p *map[string]E, elem func(*JSONReader, *E)) {
	kvwatchimpl.JSONMap(r, p, elem)
}

// JSONValue is kvwatchimpl.JSONValue.
//
// Deprecated: for generated code of version 2; regenerate.
func JSONValue[T any](r *JSONReader, p *T) { kvwatchimpl.JSONValue(r, p) }

// CloneSlice is kvwatchimpl.CloneSlice.
//
// Deprecated: for generated code of version 2; regenerate.
func CloneSlice[S ~[]E, E any](s S, elem func(E) E) S { return kvwatchimpl.CloneSlice(s, elem) }

// CloneMap is kvwatchimpl.CloneMap.
//
// Deprecated: for generated code of version 2; regenerate.
func CloneMap[M ~map[K]E, K comparable, E any](m M, elem func(E) E) M {
	return kvwatchimpl.CloneMap(m, elem)
}

// CloneJSON is kvwatchimpl.CloneJSON.
//
// Deprecated: for generated code of version 2; regenerate.
func CloneJSON[V any](v V) V { return kvwatchimpl.CloneJSON(v) }

// CodecClone is kvwatchimpl.CodecClone.
//
// Deprecated: for generated code of version 2; regenerate.
func CodecClone[V any](codec Codec[V]) func(V) V { return kvwatchimpl.CodecClone(codec) }

// ParseIntParam is kvwatchimpl.ParseIntParam.
//
// Deprecated: for generated code of version 2; regenerate.
func ParseIntParam(s string) (int64, error) { return kvwatchimpl.ParseIntParam(s) }

// ParseUintParam is kvwatchimpl.ParseUintParam.
//
// Deprecated: for generated code of version 2; regenerate.
func ParseUintParam(s string) (uint64, error) { return kvwatchimpl.ParseUintParam(s) }
