package kvwatchimpl

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// Deep-copy helpers for generated Clone functions. A cache hands out
// copies, so that nothing a caller does to a value it read can change the
// cache; these copy the shapes schema types are made of.

// CloneSlice copies s; with elem non-nil, each element is copied by elem.
// A nil slice stays nil.
func CloneSlice[S ~[]E, E any](s S, elem func(E) E) S {
	if s == nil {
		return nil
	}
	out := slices.Clone(s)
	if elem != nil {
		for i := range out {
			out[i] = elem(out[i])
		}
	}
	return out
}

// CloneMap copies m; with elem non-nil, each value is copied by elem. A
// nil map stays nil.
func CloneMap[M ~map[K]E, K comparable, E any](m M, elem func(E) E) M {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	if elem != nil {
		for k, v := range out {
			out[k] = elem(v)
		}
	}
	return out
}

// CloneJSON copies v by a JSON round trip: how values of external types
// inside schema structs are copied (they are JSON-encoded there anyway). A
// value that does not round-trip panics: it could not have been decoded
// from an entry in the first place.
func CloneJSON[V any](v V) V {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("kvwatch: CloneJSON: %v", err))
	}
	var out V
	if err := json.Unmarshal(data, &out); err != nil {
		panic(fmt.Sprintf("kvwatch: CloneJSON: %v", err))
	}
	return out
}

// CodecClone returns a function that copies a value by a round trip
// through codec: how values of external types are copied.
func CodecClone[V any](codec Codec[V]) func(V) V {
	return func(v V) V {
		data, err := codec.Encode(v)
		if err != nil {
			panic(fmt.Sprintf("kvwatch: CodecClone: %v", err))
		}
		out, err := codec.Decode(data)
		if err != nil {
			panic(fmt.Sprintf("kvwatch: CodecClone: %v", err))
		}
		return out
	}
}
