package kvwatchimpl

import "fmt"

// Kind describes one kind of entry of a bucket: its key template, its
// typed key parser and its value codec. Generated code declares one per
// kind; it is read-only after that.
type Kind[K comparable, V any] struct {
	// Name is the Go name of the kind, e.g. "Route"; used in errors.
	Name string
	// Bucket is the schema's name of the bucket the kind belongs to (the
	// bucket watched and written may be named otherwise: kvwatch.WithBucket).
	Bucket string
	// Key is the compiled key template, e.g. "vpc.{vpc}.route.{route_id}",
	// the one the kind's ParseKey splits keys with.
	Key *Template
	// ParseKey parses a key matching Key into K.
	ParseKey func(string) (K, error)
	// FormatKey formats K as a key; ParseKey(FormatKey(k)) == k for every
	// valid key.
	FormatKey func(K) string
	// KeyParams returns the key's parameter values, formatted as key
	// tokens, in Key's order; nil for a key without parameters. A writer
	// checks each before it formats the key, so that a value holding '.'
	// is reported as its parameter's, not as a key of another shape.
	KeyParams func(K) []string
	// Codec converts values.
	Codec Codec[V]
	// Clone returns a deep copy of a value: one that shares no slice, map
	// or pointer with it. Nil means V holds none (a plain copy is deep).
	Clone func(V) V
	// Indexes are the cache's indexes, in the schema's order.
	Indexes []Index[V]
}

// Copy deep-copies v when V needs it (with Clone), and returns v as it
// is otherwise.
func (k *Kind[K, V]) Copy(v V) V {
	if k.Clone == nil {
		return v
	}
	return k.Clone(v)
}

// KeyTemplate returns the kind's compiled key template, Key; an error
// when it is missing.
func (k *Kind[K, V]) KeyTemplate() (*Template, error) {
	if k.Key == nil {
		return nil, fmt.Errorf("kvwatch: kind %s has no key template", k.Name)
	}
	return k.Key, nil
}

// Index is an index of a kind's cache, declared in the schema: the cache
// keeps its entries by the value Value gives (a comparable scalar of V's
// field), so that a lookup by it reads only the matching entries.
type Index[V any] struct {
	// Name is the generated lookup's Go name, e.g. "ByNextHop".
	Name string
	// Value returns the indexed field of v.
	Value func(v V) any
}
