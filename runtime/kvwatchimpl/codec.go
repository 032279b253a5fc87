package kvwatchimpl

import (
	"encoding"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Codec converts between a value of type V and the bytes stored in a KV
// entry. Decode must return a value that shares no memory with data: the
// runtime reuses nothing, but callers of a Codec may.
type Codec[V any] interface {
	Decode(data []byte) (V, error)
	Encode(v V) ([]byte, error)
}

// JSON is the json codec: values are encoded with encoding/json, and
// decoded by Fast when it is set, by encoding/json otherwise.
type JSON[V any] struct {
	// Fast is the decoder kvwatchgen writes for V (see JSONReader): it
	// reads the common shapes of JSON without reflection, and declines
	// the rest, which encoding/json then decodes. Either way the result is
	// encoding/json's. Nil: encoding/json decodes everything.
	Fast func(*JSONReader, *V)
}

// Decode unmarshals data into a new V.
func (c JSON[V]) Decode(data []byte) (V, error) {
	if v, ok := c.DecodeFast(data); ok {
		return v, nil
	}
	var v V
	if err := json.Unmarshal(data, &v); err != nil {
		var zero V
		return zero, jsonError(err)
	}
	return v, nil
}

// jsonError names the codec in err once: encoding/json starts some of its
// errors with "json: " (type errors) and not others (syntax errors).
func jsonError(err error) error {
	if strings.HasPrefix(err.Error(), "json: ") {
		return err
	}
	return fmt.Errorf("json: %w", err)
}

// DecodeFast decodes data with Fast alone; ok is false when there is no
// Fast or it declined data (Decode then uses encoding/json). For tests and
// diagnostics: Decode is what the runtime calls.
func (c JSON[V]) DecodeFast(data []byte) (v V, ok bool) {
	if c.Fast == nil {
		return v, false
	}
	// Fast is a function value, so what it gets escapes: the reader and
	// the value share one allocation.
	d := &fastDecoding[V]{r: JSONReader{data: data}}
	c.Fast(&d.r, &d.v)
	if !d.r.End() {
		return v, false
	}
	return d.v, true
}

// fastDecoding is what DecodeFast allocates, and what a binding keeps to
// decode into (decodeWith).
type fastDecoding[V any] struct {
	r JSONReader
	v V
}

// decodeWith decodes data as Decode does, with d as the reader and the
// value decoded into: a binding's, reused entry after entry on the event
// goroutine, so that a decode allocates only what the value holds.
func (c JSON[V]) decodeWith(d *fastDecoding[V], data []byte) (V, error) {
	if c.Fast != nil {
		*d = fastDecoding[V]{r: JSONReader{data: data}}
		c.Fast(&d.r, &d.v)
		if d.r.End() {
			return d.v, nil
		}
	}
	return c.Decode(data)
}

// Encode marshals v.
func (JSON[V]) Encode(v V) ([]byte, error) { return json.Marshal(v) }

// String is the string codec: the entry's bytes are the string itself.
type String struct{}

// Decode returns data as a string.
func (String) Decode(data []byte) (string, error) { return string(data), nil }

// Encode returns the string's bytes.
func (String) Encode(v string) ([]byte, error) { return []byte(v), nil }

// Bytes is the bytes codec: the entry's bytes, copied.
type Bytes struct{}

// Decode returns a copy of data.
func (Bytes) Decode(data []byte) ([]byte, error) { return slices.Clone(data), nil }

// Encode returns v itself.
func (Bytes) Encode(v []byte) ([]byte, error) { return v, nil }

// Text is the text codec: values implement encoding.TextMarshaler and
// encoding.TextUnmarshaler (P is *V).
type Text[V any, P interface {
	*V
	encoding.TextMarshaler
	encoding.TextUnmarshaler
}] struct{}

// Decode unmarshals data into a new V.
func (Text[V, P]) Decode(data []byte) (V, error) {
	var v V
	if err := P(&v).UnmarshalText(data); err != nil {
		var zero V
		return zero, fmt.Errorf("text: %w", err)
	}
	return v, nil
}

// Encode marshals v.
func (Text[V, P]) Encode(v V) ([]byte, error) { return P(&v).MarshalText() }

// Binary is the binary codec: values implement encoding.BinaryMarshaler
// and encoding.BinaryUnmarshaler (P is *V).
type Binary[V any, P interface {
	*V
	encoding.BinaryMarshaler
	encoding.BinaryUnmarshaler
}] struct{}

// Decode unmarshals data into a new V.
func (Binary[V, P]) Decode(data []byte) (V, error) {
	var v V
	if err := P(&v).UnmarshalBinary(data); err != nil {
		var zero V
		return zero, fmt.Errorf("binary: %w", err)
	}
	return v, nil
}

// Encode marshals v.
func (Binary[V, P]) Encode(v V) ([]byte, error) { return P(&v).MarshalBinary() }
