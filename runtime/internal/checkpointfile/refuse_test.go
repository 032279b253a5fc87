package checkpointfile

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
)

// A file cut short anywhere is refused: at every byte offset, as empty at
// 0 and as cut short at any other.
func TestRefusesAFileCutShort(t *testing.T) {
	h, entries := sample()
	data := encode(t, h, entries)
	for n := range len(data) {
		want := "the file is cut short"
		if n == 0 {
			want = "the file is empty"
		}
		if _, _, err := decode(data[:n]); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cut at byte %d of %d: %v, want an error saying %q", n, len(data), err, want)
		}
	}
}

// A file with any one bit flipped, anywhere, is refused: in the lines the
// checksum covers, and in the trailer, which is read strictly.
func TestRefusesAFlippedBit(t *testing.T) {
	for _, c := range []struct {
		name    string
		h       Header
		entries []Entry
	}{
		{"entries of both encodings", func() Header { h, _ := sample(); return h }(), func() []Entry { _, e := sample(); return e }()},
		{"no entries", header(kinds(0, 0)...), nil},
	} {
		data := encode(t, c.h, c.entries)
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for i := range data {
				for bit := range 8 {
					flipped := bytes.Clone(data)
					flipped[i] ^= 1 << bit
					if _, _, err := decode(flipped); err == nil {
						t.Errorf("byte %d (%q) flipped to %q: read as a whole checkpoint", i, data[i], flipped[i])
					}
				}
			}
		})
	}
}

// withCRC ends body, the lines before a trailer, with a trailer counting
// n entries and holding body's checksum: the file is whole, whatever
// body says.
func withCRC(body string, n int) []byte {
	sum := crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli))
	return fmt.Appendf(nil, "%s{\"end\":\"kvwatch-checkpoint\",\"entries\":%d,\"crc32c\":\"%08x\"}\n", body, n, sum)
}

// Each check refuses what it is there for, with an error saying why.
func TestRefusesWhatIsNotAWholeCheckpoint(t *testing.T) {
	h, entries := sample()
	valid := string(encode(t, h, entries))
	lines := strings.SplitAfter(valid, "\n")
	hdr, body, end := lines[0], strings.Join(lines[:6], ""), lines[6]
	const kind = `{"name":"A","key":"a.{x}","codec":"c","value_shape":"s","values":"json","entries":1}`
	entry := `{"k":"a.b","r":1,"c":"2025-01-01T00:00:00Z","v":1}` + "\n"
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "the file is empty"},
		{"garbage", []byte("\x00\x01garbage\n"), "not a kvwatch checkpoint file"},
		{"JSON but not a checkpoint", []byte(`{"a":1}` + "\n"), "not a kvwatch checkpoint file"},
		{"another format's name", []byte(strings.Replace(valid, `"format":"kvwatch-checkpoint"`, `"format":"kvwatch-snapshot"`, 1)), "not a kvwatch checkpoint file"},
		{"a header that is not an object", []byte(`["kvwatch-checkpoint",1]` + "\n"), "not a kvwatch checkpoint file"},
		{"format version 2", []byte(strings.Replace(valid, `"version":1`, `"version":2`, 1)), "format version 2; this runtime reads version 1"},
		{"no format version", []byte(strings.Replace(valid, `"version":1,`, ``, 1)), "format version 0"},
		{"a malformed header", []byte(`{"format":"kvwatch-checkpoint","version":1,"kinds":{}}` + "\n"), "header: json:"},
		{"a negative count", withCRC(`{"format":"kvwatch-checkpoint","version":1,"kinds":[`+strings.Replace(kind, `"entries":1`, `"entries":-1`, 1)+`]}`+"\n", -1), "kind A: -1 entries"},
		{"an unknown encoding", withCRC(`{"format":"kvwatch-checkpoint","version":1,"kinds":[`+strings.Replace(kind, `"json"`, `"hex"`, 1)+`]}`+"\n"+entry, 1), `kind A: values stored as "hex"`},
		{"a line that is not an entry", withCRC(`{"format":"kvwatch-checkpoint","version":1,"kinds":[`+kind+`]}`+"\n"+"[1,2]\n", 1), "line 2: json:"},
		{"an entry of the wrong types", withCRC(`{"format":"kvwatch-checkpoint","version":1,"kinds":[`+kind+`]}`+"\n"+`{"k":1,"r":"1"}`+"\n", 1), "line 2: json:"},
		{"an entry cut in its base64 value", withCRC(`{"format":"kvwatch-checkpoint","version":1,"kinds":[`+strings.Replace(kind, `"json"`, `"base64"`, 1)+`]}`+"\n"+`{"k":"a.b","r":1,"c":"2025-01-01T00:00:00Z","b":"}`+"\n", 1), "line 2: invalid character"},
		{"an entry with a bad time", withCRC(`{"format":"kvwatch-checkpoint","version":1,"kinds":[`+kind+`]}`+"\n"+strings.Replace(entry, "2025-01-01", "2025-13-01", 1), 1), "line 2: parsing time"},
		{"more entries than the header counts", withCRC(body+lines[5], 6), "line 7: not the trailer"},
		{"fewer entries than the header counts", withCRC(strings.Join(lines[:5], ""), 4), "the file is cut short"},
		{"a trailer counting other entries", withCRC(body, 4), "the trailer counts 4 entries, the header 5"},
		{"a trailer of another format", []byte(body + strings.Replace(end, `"end":"kvwatch-checkpoint"`, `"end":"kvwatch-snapshot"`, 1)), "line 7: not the trailer"},
		{"a trailer that is not JSON", []byte(body + "end\n"), "line 7: not the trailer"},
		{"a changed byte", []byte(strings.Replace(valid, `"next_hop":"r2"`, `"next_hop":"r7"`, 1)), "checksum mismatch: the trailer says"},
		{"a changed header", []byte(strings.Replace(valid, `"revision":42`, `"revision":43`, 1)), "checksum mismatch"},
		{"a line taken out and the counts made to agree", []byte(strings.Replace(strings.Replace(valid, lines[5], "", 1), `"entries":3}]`, `"entries":2}]`, 1)), "the trailer counts 5 entries, the header 4"},
		{"no checksum", []byte(body + `{"end":"kvwatch-checkpoint","entries":5}` + "\n"), "line 7: not the trailer"},
		{"a trailer's name in capitals", []byte(body + strings.Replace(end, `"end"`, `"End"`, 1)), "line 7: not the trailer"},
		{"a trailer's name misspelled, counting none", []byte(strings.Replace(string(encode(t, header(), nil)), `"entries":0`, `"entrees":0`, 1)), "line 2: not the trailer"},
		{"a trailer with a name more", []byte(body + strings.Replace(end, `{`, `{"x":1,`, 1)), "line 7: not the trailer"},
		{"a trailer's count as a string", []byte(body + strings.Replace(end, `"entries":5`, `"entries":"5"`, 1)), "line 7: not the trailer"},
		{"data after the trailer", []byte(valid + "\n"), "data after the trailer"},
		{"a second trailer", []byte(valid + end), "data after the trailer"},
		{"a header only", []byte(hdr), "the file is cut short"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := decode(c.data); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error saying %q\n%s", err, c.want, c.data)
			}
		})
	}
}

// Match accepts a file written for the watcher, its kinds in any order,
// and refuses one of another bucket or with other kinds, saying what
// differs.
func TestMatch(t *testing.T) {
	mine := kinds(0, 0)
	changed := func(i int, f func(*Kind)) []Kind {
		ks := kinds(3, 4) // counts are not compared
		f(&ks[i])
		return ks
	}
	route, blob := mine[0], mine[1]
	// in is a file written for bucket, of the schema bucket "network".
	in := func(bucket string, ks ...Kind) Header {
		h := header(ks...)
		h.Bucket = bucket
		return h
	}
	cases := []struct {
		name                 string
		file                 Header
		bucket, schemaBucket string // the watcher's
		want                 string // "" for a match
		match                []int
	}{
		{"the same kinds", header(kinds(5, 6)...), "network", "network", "", []int{0, 1}},
		{"in another order", header(blob, route), "network", "network", "", []int{1, 0}},
		{"the watcher given another bucket", in("net2", mine...), "net2", "network", "", []int{0, 1}},
		{"another bucket", header(mine...), "other", "network", "written for bucket network (schema bucket network); this watcher watches other (schema bucket network)", nil},
		{"another schema's bucket", header(mine...), "network", "other", "written for bucket network (schema bucket network); this watcher watches network (schema bucket other)", nil},
		{"a kind fewer", header(route), "network", "network", "the file holds kinds [Route], the watcher watches 2 kinds", nil},
		{"a kind more", header(route, blob, Kind{Name: "Extra"}), "network", "network", "the file holds kinds [Route Blob Extra], the watcher watches 2 kinds", nil},
		{"no kinds", header(), "network", "network", "the file holds kinds [], the watcher watches 2 kinds", nil},
		{"a kind the watcher lacks", header(route, Kind{Name: "Other", Key: blob.Key}), "network", "network", "the file holds kind Other, which the watcher does not watch (or holds it twice)", nil},
		{"a kind twice", header(route, route), "network", "network", "the file holds kind Route, which the watcher does not watch (or holds it twice)", nil},
		{"another key template", header(changed(0, func(k *Kind) { k.Key = "vpc.{vpc}.rt.{route_id}" })...), "network", "network", "kind Route: key template vpc.{vpc}.rt.{route_id} in the file, vpc.{vpc}.route.{route_id} in the watcher", nil},
		{"another codec", header(changed(1, func(k *Kind) { k.Codec = "example.com/kv.String" })...), "network", "network", "kind Blob: codec example.com/kv.String in the file, example.com/kv.Bytes in the watcher", nil},
		{"another value type", header(changed(0, func(k *Kind) { k.ValueShape = "0000000000000000" })...), "network", "network", "kind Route: its value type changed since the file was written (shape 0000000000000000, now 0123456789abcdef)", nil},
		{"another encoding", header(changed(1, func(k *Kind) { k.Values = JSON })...), "network", "network", "kind Blob: values stored as json, the watcher's as base64", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.file.Match(c.bucket, c.schemaBucket, mine)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Match: %v, want a match", err)
			case c.want == "" && fmt.Sprint(got) != fmt.Sprint(c.match):
				t.Errorf("Match = %v, want %v", got, c.match)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Errorf("Match: %v (%v), want the error %q", err, got, c.want)
			}
		})
	}
}

// Reading stops at the first error, wherever the file is bad: a reader
// given a file that fails partway holds no checkpoint.
func TestReaderStopsAtTheFirstBadLine(t *testing.T) {
	h, entries := sample()
	data := encode(t, h, entries)
	bad := bytes.Replace(data, []byte(`{"k":"vpc.a.blob.b1"`), []byte(`{"k":"vpc.a.blob.b1",`), 1)
	r, err := NewReader(bytes.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err = r.Next(); err != nil {
			if i != 2 || r.Line() != 4 {
				t.Errorf("entry %d, line %d: %v; want the error at the third entry, line 4", i, r.Line(), err)
			}
			return
		}
	}
	t.Error("a malformed entry was read")
}
