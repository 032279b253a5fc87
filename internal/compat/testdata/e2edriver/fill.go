package main

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"time"
)

// The sample values: each one a value that a narrower type cannot hold,
// so that a reader of another type shows the break compat names.
var (
	// sampleTime is written as RFC 3339 text with nanoseconds.
	sampleTime = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	// sampleInt64 are, by variant, beyond int32 and beyond float64's
	// exact integers, the second negative (no unsigned reader holds it).
	sampleInt64 = [2]int64{1<<60 + 1, -(1 << 60) - 1}
	// sampleInt32 are negative below -2^24 (no unsigned reader holds it,
	// float32 rounds it), and int32's largest (beyond float32's exact
	// integers too).
	sampleInt32 = [2]int64{-(1 << 24) - 1, 1<<31 - 1}
	// sampleFloat64 are, by variant, one out of float32's range (and with
	// an exponent: no integer reader holds it) and one with a fraction
	// beyond float32's precision.
	sampleFloat64 = [2]float64{1e300, 1.234567890123}
	// sampleString is not a number, not base64 and not an RFC 3339 time.
	sampleString = "s-1"
	sampleBytes  = []byte{1, 2, 3}
	sampleJSON   = json.RawMessage(`{"a":1}`)
	// sampleDuration is 2^40 nanoseconds.
	sampleDuration = time.Duration(1 << 40)
)

var (
	timeType     = reflect.TypeFor[time.Time]()
	durationType = reflect.TypeFor[time.Duration]()
	rawJSONType  = reflect.TypeFor[json.RawMessage]()
)

// maxDepth bounds the filling of a type that holds itself.
const maxDepth = 4

// fill returns a value of type t with every field filled with a sample
// (variant 0 or 1: they differ in signed integers and float64s), slices
// and maps with one element; strings are strLen bytes long where
// strLen > 0.
// sampleTexts are what a value of an external type with a text form is
// filled from: the first it takes (an address prefix, an address, a time,
// a number).
var sampleTexts = []string{"10.1.2.0/24", "10.1.2.3", "2024-05-06T07:08:09Z", "12345"}

func fill(t reflect.Type, variant, strLen int, depth int) reflect.Value {
	v := reflect.New(t).Elem()
	switch t {
	case timeType:
		v.Set(reflect.ValueOf(sampleTime))
		return v
	case durationType:
		v.SetInt(int64(sampleDuration))
		return v
	case rawJSONType:
		v.SetBytes(append([]byte{}, sampleJSON...))
		return v
	}
	if u, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok && t.PkgPath() != "" && t.Kind() == reflect.Struct {
		// An external type with a text form (net/netip's, say): the
		// first sample text it takes, so that its JSON is a real one.
		for _, text := range sampleTexts {
			if u.UnmarshalText([]byte(text)) == nil {
				return v
			}
		}
	}
	switch t.Kind() {
	case reflect.String:
		s := sampleString
		if strLen > 0 {
			s = strings.Repeat("x", strLen)
		}
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(sampleInt64[variant])
	case reflect.Int32:
		v.SetInt(sampleInt32[variant])
	case reflect.Int8, reflect.Int16:
		v.SetInt(-100)
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		v.SetUint(math.MaxUint64)
	case reflect.Uint32:
		v.SetUint(math.MaxUint32)
	case reflect.Uint8, reflect.Uint16:
		v.SetUint(200)
	case reflect.Float64:
		v.SetFloat(sampleFloat64[variant])
	case reflect.Float32:
		v.SetFloat(1.5)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			v.SetBytes(append([]byte{}, sampleBytes...))
		} else if depth < maxDepth {
			v.Set(reflect.Append(v, fill(t.Elem(), variant, strLen, depth+1)))
		}
	case reflect.Array:
		for i := range v.Len() {
			v.Index(i).Set(fill(t.Elem(), variant, strLen, depth+1))
		}
	case reflect.Map:
		if depth < maxDepth {
			v.Set(reflect.MakeMap(t))
			v.SetMapIndex(fill(t.Key(), variant, 0, depth+1), fill(t.Elem(), variant, strLen, depth+1))
		}
	case reflect.Pointer:
		if depth < maxDepth {
			v.Set(reflect.New(t.Elem()))
			v.Elem().Set(fill(t.Elem(), variant, strLen, depth+1))
		}
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				v.Field(i).Set(fill(t.Field(i).Type, variant, strLen, depth+1))
			}
		}
	}
	return v
}

// fillKey returns a key of type t (a generated key struct of string,
// int64 and uint64 fields). Variant 0 takes values other parameter types
// refuse: a string that is no number, a negative int, a uint beyond
// int64; variant 1 takes 7 for every parameter, which every type reads.
// A non-empty str replaces the string parameters (to make keys unique).
func fillKey(t reflect.Type, variant int, str string) reflect.Value {
	v := reflect.New(t).Elem()
	for i := range t.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			switch {
			case str != "":
				f.SetString(str)
			case variant == 0:
				f.SetString(sampleString)
			default:
				f.SetString("7")
			}
		case reflect.Int64:
			f.SetInt([2]int64{-42, 7}[variant])
		case reflect.Uint64:
			f.SetUint([2]uint64{math.MaxUint64, 7}[variant])
		}
	}
	return v
}
