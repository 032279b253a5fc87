package checkpointfile

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// at is a fixed time in another zone than UTC, with nanoseconds.
var at = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("UTC+2", 2*3600))

// kinds returns a kind of each encoding, counting n JSON and m base64
// entries.
func kinds(n, m int) []Kind {
	return []Kind{
		{Name: "Route", Key: "vpc.{vpc}.route.{route_id}", Codec: "example.com/kv.JSON", ValueShape: "0123456789abcdef", Values: JSON, Entries: n},
		{Name: "Blob", Key: "vpc.{vpc}.blob.{name}", Codec: "example.com/kv.Bytes", ValueShape: "fedcba9876543210", Values: Base64, Entries: m},
	}
}

// header returns a header of bucket "network" with ks.
func header(ks ...Kind) Header {
	return Header{Bucket: "network", SchemaBucket: "network", Revision: 42, Filters: []string{"$KV.network.vpc.a.>"},
		StreamCreated: at.Add(-time.Hour), Saved: at, Kinds: ks}
}

// sample is a checkpoint of both encodings: its header and its entries,
// two routes then three blobs.
func sample() (Header, []Entry) {
	return header(kinds(2, 3)...), []Entry{
		{Key: "vpc.a.route.r1", Revision: 7, Created: at, Value: []byte(`{"cidr":"10.0.0.0/8","next_hop":"r1"}`)},
		{Key: "vpc.a.route.r2", Revision: 9, Created: at.Add(time.Second), Value: []byte(`{"cidr":"10.1.0.0/16","next_hop":"r2"}`)},
		{Key: "vpc.a.blob.b1", Revision: 3, Created: at, Value: []byte{0, 1, 2, '\n', 0xff, '{'}},
		{Key: "vpc.a.blob.b2", Revision: 4, Created: at, Value: []byte{}},
		{Key: "vpc.a.blob.b3", Revision: 41, Created: at, Value: []byte("line one\nline \"two\"")},
	}
}

// encode writes a checkpoint of h and entries.
func encode(t *testing.T, h Header, entries []Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatalf("NewWriter: %v", err)
	}
	for _, e := range entries {
		if err := w.Add(e); err != nil {
			t.Fatalf("Add(%s): %v", e.Key, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return buf.Bytes()
}

// decode reads a whole checkpoint: its header and every entry, values
// copied.
func decode(data []byte) (Header, []Entry, error) {
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return Header{}, nil, err
	}
	var entries []Entry
	for _, k := range r.Header().Kinds {
		for range k.Entries {
			e, err := r.Next()
			if err != nil {
				return Header{}, nil, err
			}
			e.Value = bytes.Clone(e.Value)
			entries = append(entries, e)
		}
	}
	if err := r.End(); err != nil {
		return Header{}, nil, err
	}
	return r.Header(), entries, nil
}

// sameHeader reports whether a and b are equal, times compared as
// instants.
func sameHeader(a, b Header) bool {
	return a.Bucket == b.Bucket && a.SchemaBucket == b.SchemaBucket && a.Revision == b.Revision &&
		slices.Equal(a.Filters, b.Filters) && a.StreamCreated.Equal(b.StreamCreated) && a.Saved.Equal(b.Saved) &&
		slices.Equal(a.Kinds, b.Kinds)
}

// sameEntry reports whether a and b are equal, times compared as instants
// and values as JSON compacts them when jsonValue is set.
func sameEntry(a, b Entry, jsonValue bool) bool {
	if a.Key != b.Key || a.Revision != b.Revision || !a.Created.Equal(b.Created) {
		return false
	}
	if !jsonValue {
		return bytes.Equal(a.Value, b.Value)
	}
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a.Value) == nil && json.Compact(&cb, b.Value) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// encodings says, for each entry h counts, in order, whether its value
// is JSON.
func encodings(h Header) []bool {
	var out []bool
	for _, k := range h.Kinds {
		for range k.Entries {
			out = append(out, k.Values == JSON)
		}
	}
	return out
}

// checkSame fails the test unless got is h with entries.
func checkSame(t *testing.T, h Header, entries []Entry, got Header, gotEntries []Entry) {
	t.Helper()
	if h.Filters == nil {
		h.Filters = []string{}
	}
	if !sameHeader(got, h) {
		t.Errorf("header\n%+v\nwant\n%+v", got, h)
	}
	if len(gotEntries) != len(entries) {
		t.Fatalf("%d entries, want %d", len(gotEntries), len(entries))
	}
	for i, isJSON := range encodings(h) {
		if !sameEntry(gotEntries[i], entries[i], isJSON) {
			t.Errorf("entry %d\n%+v (%q)\nwant\n%+v (%q)", i, gotEntries[i], gotEntries[i].Value, entries[i], entries[i].Value)
		}
	}
}
