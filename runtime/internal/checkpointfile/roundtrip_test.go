package checkpointfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
	"testing"
	"time"
)

// A checkpoint read back is the one written: header, and entries of each
// encoding, whatever their keys, revisions, times and values.
func TestRoundTrip(t *testing.T) {
	h, entries := sample()
	cases := []struct {
		name    string
		h       Header
		entries []Entry
	}{
		{"both encodings", h, entries},
		{"JSON values of every kind", header(kinds(6, 0)...), []Entry{
			{Key: "k.object", Revision: 1, Created: at, Value: []byte(`{"a":[1,2.5,-3e10],"b":{"c":null,"d":true},"e":"é\u2028\"\\"}`)},
			{Key: "k.spans.lines", Revision: 2, Created: at, Value: []byte("{\n  \"a\": [\n    1\n  ]\n}")},
			{Key: "k.string", Revision: 3, Created: at, Value: []byte(`"line one\nline two"`)},
			{Key: "k.number", Revision: 4, Created: at, Value: []byte(`12345678901234567890`)},
			{Key: "k.null", Revision: 5, Created: at, Value: []byte(`null`)},
			{Key: "k.array", Revision: 6, Created: at, Value: []byte(` [ ] `)},
		}},
		{"base64 values of every kind", header(kinds(0, 4)...), []Entry{
			{Key: "k.empty", Revision: 1, Created: at, Value: nil},
			{Key: "k.binary", Revision: 2, Created: at, Value: []byte{0, 0xff, 0xfe, '\n', '"', '\\'}},
			{Key: "k.text", Revision: 3, Created: at, Value: []byte("plain text, \"quoted\"\r\n")},
			{Key: "k.large", Revision: 4, Created: at, Value: bytes.Repeat([]byte{0xa5, '\n'}, 300<<10)}, // lines longer than the read buffer
		}},
		{"keys, revisions and times at their limits", header(kinds(5, 0)...), []Entry{
			{Key: `k."quoted\"`, Revision: 0, Created: time.Time{}, Value: []byte(`1`)},
			{Key: "k.ключ.日本", Revision: 1, Created: at.UTC(), Value: []byte(`2`)},
			{Key: "k.\x01\t", Revision: 10, Created: at.In(time.FixedZone("", -(9*3600 + 30*60))), Value: []byte(`3`)},
			{Key: "k.max", Revision: math.MaxUint64, Created: at, Value: []byte(`4`)},
			{Key: "", Revision: 99999999999999999, Created: at.Truncate(time.Second), Value: []byte(`5`)},
		}},
		{"kinds without entries around others", header(Kind{Name: "None", Key: "n.{x}", Values: JSON}, kinds(1, 0)[0],
			Kind{Name: "Zero", Key: "z.{x}", Values: Base64}, kinds(0, 1)[1], Kind{Name: "Last", Key: "l.{x}", Values: Base64}),
			[]Entry{{Key: "k.a", Revision: 1, Created: at, Value: []byte(`{}`)}, {Key: "k.b", Revision: 2, Created: at, Value: []byte("b")}}},
		{"no entries", header(kinds(0, 0)...), nil},
		{"no kinds, no filters", Header{Bucket: "b"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := encode(t, c.h, c.entries)
			got, gotEntries, err := decode(data)
			if err != nil {
				t.Fatalf("reading back what was written: %v\n%s", err, data)
			}
			checkSame(t, c.h, c.entries, got, gotEntries)
		})
	}
}

// Version 1 is this layout, byte for byte: a file written by an older
// runtime reads the same, and a change to the layout shows here.
func TestVersion1Layout(t *testing.T) {
	h := Header{Bucket: "network", SchemaBucket: "net", Revision: 12, Filters: []string{"$KV.network.>"},
		StreamCreated: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Saved: time.Date(2025, 1, 2, 3, 4, 6, 7, time.UTC),
		Kinds: []Kind{
			{Name: "Route", Key: "vpc.{vpc}.route.{id}", Codec: "c/kv.JSON", ValueShape: "00ff", Values: JSON, Entries: 1},
			{Name: "Label", Key: "vpc.{vpc}.label.{id}", Codec: "c/kv.String", ValueShape: "ff00", Values: Base64, Entries: 1},
		}}
	created := time.Date(2025, 1, 2, 3, 4, 5, 600, time.UTC)
	got := encode(t, h, []Entry{
		{Key: "vpc.a.route.r1", Revision: 11, Created: created, Value: []byte(`{"cidr": "10.0.0.0/8"}`)},
		{Key: "vpc.a.label.l1", Revision: 12, Created: created, Value: []byte("hi\n")},
	})
	body := `{"format":"kvwatch-checkpoint","version":1,"bucket":"network","schema_bucket":"net","revision":12,` +
		`"filters":["$KV.network.\u003e"],` + // encoding/json escapes <, > and & in strings
		`"stream_created":"2025-01-02T03:04:05Z","saved":"2025-01-02T03:04:06.000000007Z",` +
		`"kinds":[{"name":"Route","key":"vpc.{vpc}.route.{id}","codec":"c/kv.JSON","value_shape":"00ff","values":"json","entries":1},` +
		`{"name":"Label","key":"vpc.{vpc}.label.{id}","codec":"c/kv.String","value_shape":"ff00","values":"base64","entries":1}]}` + "\n" +
		`{"k":"vpc.a.route.r1","r":11,"c":"2025-01-02T03:04:05.0000006Z","v":{"cidr": "10.0.0.0/8"}}` + "\n" +
		`{"k":"vpc.a.label.l1","r":12,"c":"2025-01-02T03:04:05.0000006Z","b":"aGkK"}` + "\n"
	want := body + fmt.Sprintf(`{"end":"kvwatch-checkpoint","entries":2,"crc32c":"%08x"}`,
		crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))) + "\n"
	if string(got) != want {
		t.Errorf("written\n%s\nwant\n%s", got, want)
	}
}

// The file is JSON lines that any JSON tool can rewrite: each line
// re-encoded by encoding/json (keys sorted, numbers as they were), with
// the CRC-32C recomputed, reads the same.
func TestReadsLinesRewrittenByAJSONTool(t *testing.T) {
	h, entries := sample()
	data := encode(t, h, entries)
	lines := strings.SplitAfter(string(data), "\n")
	lines = lines[:len(lines)-1]
	var out bytes.Buffer
	for _, line := range lines[:len(lines)-1] {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		again, err := json.MarshalIndent(m, "", "") // keys sorted, a newline only where MarshalIndent puts one
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(bytes.ReplaceAll(again, []byte("\n"), []byte(" ")), '\n'))
	}
	fmt.Fprintf(&out, `{"crc32c":"%08x","entries":%d,"end":"kvwatch-checkpoint"}`+"\n",
		crc32.Checksum(out.Bytes(), crc32.MakeTable(crc32.Castagnoli)), len(entries))
	got, gotEntries, err := decode(out.Bytes())
	if err != nil {
		t.Fatalf("rewritten file: %v\n%s", err, out.Bytes())
	}
	checkSame(t, h, entries, got, gotEntries)
}

// The writer makes only files the reader accepts: it refuses kinds the
// format cannot hold, entries the header does not count, and a JSON
// value that is not JSON.
func TestWriterRefuses(t *testing.T) {
	one := Entry{Key: "k", Revision: 1, Created: at, Value: []byte(`1`)}
	cases := []struct {
		name    string
		kinds   []Kind
		entries []Entry
		want    string
	}{
		{"a negative count", []Kind{{Name: "A", Values: JSON, Entries: -1}}, nil, "kind A: -1 entries"},
		{"an unknown encoding", []Kind{{Name: "A", Values: "hex"}}, nil, `kind A: values stored as "hex"`},
		{"no encoding", []Kind{{Name: "A"}}, nil, `kind A: values stored as ""`},
		{"more entries than counted", kinds(1, 0), []Entry{one, one}, "the header counts 1 entries, all written"},
		{"fewer entries than counted", kinds(1, 2), []Entry{one, one}, "1 of the 3 entries the header counts not written"},
		{"a JSON value that is not JSON", kinds(1, 0), []Entry{{Key: "k.bad", Value: []byte(`{"a":`)}}, "kind Route: key k.bad: the codec's value is not valid JSON"},
		{"an empty JSON value", kinds(1, 0), []Entry{{Key: "k.empty"}}, "not valid JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := func() error {
				w, err := NewWriter(&bytes.Buffer{}, header(c.kinds...))
				if err != nil {
					return err
				}
				for _, e := range c.entries {
					if err := w.Add(e); err != nil {
						return err
					}
				}
				return w.Close()
			}()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}

// The reader reads as many entries as the header counts, no more, and
// reads the trailer only after them; Line numbers the lines from the
// header's, 1.
func TestReaderCountsEntries(t *testing.T) {
	h, entries := sample()
	data := encode(t, h, entries)
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if r.Line() != 1 {
		t.Errorf("after the header: Line %d, want 1", r.Line())
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if err := r.End(); err == nil || !strings.Contains(err.Error(), "4 of the 5 entries the header counts not read") {
		t.Errorf("End with entries left: %v", err)
	}
	for range 4 {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if r.Line() != 6 {
		t.Errorf("after the last entry: Line %d, want 6", r.Line())
	}
	if _, err := r.Next(); err == nil || !strings.Contains(err.Error(), "the header counts 5 entries, all read") {
		t.Errorf("Next past the last entry: %v", err)
	}
	if err := r.End(); err != nil {
		t.Errorf("End: %v", err)
	}
}
