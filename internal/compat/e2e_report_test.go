package compat_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file holds the driver's report as the test reads it (the driver's
// Report, testdata/e2edriver), and how the test compares what was
// written with what a watcher holds.

type driverReport struct{ Cases []caseReport }

type caseReport struct {
	Name    string
	Buckets []bucketReport
}

type bucketReport struct {
	Bucket             string
	Err                []string
	OldToNew, NewToOld runReport
	Update             *updateReport
	Limits             *limitsReport
}

type runReport struct {
	Err                     string
	Written                 []entryReport
	Caches                  map[string][]entryReport
	DataErrors, UnknownKeys uint64
	Errors                  []reportedError
}

type entryReport struct {
	Kind, Key   string
	JSON        json.RawMessage
	Raw, Stored []byte
	Err         string
}

type reportedError struct{ Type, Kind, Key, Text string }

type updateReport struct {
	Err           string
	Refused       bool
	Changes       []kvclient.BucketChange
	AllowDataLoss *updateReport
}

type limitsReport struct {
	Err             string
	ConsumersProbed bool
	Watchers        int
	WatcherErr      string
	ConsumerLimit   bool
	BatchErr        string
	BatchDisabled   bool
	Oversized       int
	OversizedErr    string
	FillProbed      bool
	FillWrites      int
	FillErr         string
}

// cached finds the entry a watcher holds under key, in any kind's cache.
func (r *runReport) cached(key string) (kind string, e entryReport, ok bool) {
	kinds := make([]string, 0, len(r.Caches))
	for k := range r.Caches {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		for _, e := range r.Caches[k] {
			if e.Key == key {
				return k, e, true
			}
		}
	}
	return "", entryReport{}, false
}

// reported returns the errors OnError received for key, of type typ.
func (r *runReport) reported(key, typ string) []reportedError {
	var out []reportedError
	for _, e := range r.Errors {
		if e.Key == key && e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// sides prints what was written and what the watcher holds, key by key,
// with the watcher's counters and errors: both sides of a failure.
func (r *runReport) sides() string {
	var b strings.Builder
	for _, w := range r.Written {
		fmt.Fprintf(&b, "\n    wrote %s %s: %s", w.Kind, w.Key, w.JSON)
		if w.Err != "" {
			fmt.Fprintf(&b, " (write failed: %s)", w.Err)
		}
		if kind, c, ok := r.cached(w.Key); ok {
			fmt.Fprintf(&b, "\n     read %s %s: %s", kind, c.Key, c.JSON)
		} else {
			fmt.Fprintf(&b, "\n     read: in no cache")
		}
	}
	for kind, entries := range r.Caches {
		for _, c := range entries {
			if !r.wrote(c.Key) {
				fmt.Fprintf(&b, "\n     read %s %s: %s (not written)", kind, c.Key, c.JSON)
			}
		}
	}
	fmt.Fprintf(&b, "\n    Stats: DataErrors %d, UnknownKeys %d", r.DataErrors, r.UnknownKeys)
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "\n    OnError: %s", e.Text)
	}
	return b.String()
}

func (r *runReport) wrote(key string) bool {
	for _, w := range r.Written {
		if w.Key == key {
			return true
		}
	}
	return false
}

// differences compares a written value with the value a watcher holds:
// byte by byte where both kinds store raw bytes (codec string or bytes),
// else as JSON, where every field both sides carry must hold the same
// value (an object key matched as encoding/json matches it, ignoring
// case; numbers compared exactly), a field only one side carries and the
// fields named in ignore (lower case) left out. It returns the paths that
// differ.
func differences(written entryReport, writerCodec schema.Codec, held entryReport, readerCodec schema.Codec, ignore map[string]bool) []string {
	raw := func(c schema.Codec) bool { return c == schema.CodecString || c == schema.CodecBytes }
	if raw(writerCodec) && raw(readerCodec) {
		if !bytes.Equal(written.Raw, held.Raw) {
			return []string{fmt.Sprintf("the bytes (%q, held %q)", written.Raw, held.Raw)}
		}
		return nil
	}
	w, err1 := decodeJSON(written.JSON)
	h, err2 := decodeJSON(held.JSON)
	if err1 != nil || err2 != nil {
		return []string{fmt.Sprintf("undecodable JSON: %v, %v", err1, err2)}
	}
	var diffs []string
	compareJSON("$", w, h, ignore, &diffs)
	return diffs
}

func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func compareJSON(path string, w, h any, ignore map[string]bool, diffs *[]string) {
	switch w := w.(type) {
	case map[string]any:
		h, ok := h.(map[string]any)
		if !ok {
			*diffs = append(*diffs, fmt.Sprintf("%s (%s, held %s)", path, show(w), show(h)))
			return
		}
		for k, wv := range w {
			if ignore[strings.ToLower(k)] {
				continue
			}
			if hv, ok := matchKey(h, k); ok {
				compareJSON(path+"."+k, wv, hv, ignore, diffs)
			}
		}
	case []any:
		h, ok := h.([]any)
		if !ok || len(h) != len(w) {
			*diffs = append(*diffs, fmt.Sprintf("%s (%s, held %s)", path, show(w), show(h)))
			return
		}
		for i := range w {
			compareJSON(fmt.Sprintf("%s[%d]", path, i), w[i], h[i], ignore, diffs)
		}
	case json.Number:
		hn, ok := h.(json.Number)
		wr, ok1 := new(big.Rat).SetString(string(w))
		var hr *big.Rat
		var ok2 bool
		if ok {
			hr, ok2 = new(big.Rat).SetString(string(hn))
		}
		if !ok || !ok1 || !ok2 || wr.Cmp(hr) != 0 {
			*diffs = append(*diffs, fmt.Sprintf("%s (%s, held %s)", path, show(w), show(h)))
		}
	default:
		if !reflect.DeepEqual(w, h) {
			*diffs = append(*diffs, fmt.Sprintf("%s (%s, held %s)", path, show(w), show(h)))
		}
	}
}

// matchKey is the value of object m under key k as encoding/json finds
// it: the key itself, else one equal to it ignoring case.
func matchKey(m map[string]any, k string) (any, bool) {
	if v, ok := m[k]; ok {
		return v, true
	}
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if strings.EqualFold(key, k) {
			return m[key], true
		}
	}
	return nil, false
}

func show(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// zeroField reports whether the JSON value data holds, at any depth, an
// object key equal to field ignoring case whose value is the zero value
// of a Go type (the samples fill every field with another).
func zeroField(data []byte, field string) bool {
	v, err := decodeJSON(data)
	return err == nil && hasZero(v, field)
}

func hasZero(v any, field string) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, fv := range v {
			if strings.EqualFold(k, field) && isZero(fv) || hasZero(fv, field) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasZero(e, field) {
				return true
			}
		}
	}
	return false
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == "" || v == "0001-01-01T00:00:00Z"
	case bool:
		return !v
	case json.Number:
		r, ok := new(big.Rat).SetString(string(v))
		return ok && r.Sign() == 0
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}
