package checkpointfile

import (
	"bytes"
	"encoding/json"
	"testing"
)

// entryLines are lines the reader meets: as the writer lays them out, and
// as other JSON writers might.
var entryLines = []string{
	`{"k":"vpc.a.route.r1","r":12,"c":"2025-01-02T03:04:05.0000006Z","v":{"cidr":"10.0.0.0/8"}}`,
	`{"k":"vpc.a.blob.b1","r":1,"c":"2025-01-02T03:04:05+02:00","b":"AAEC/w=="}`,
	`{"k":"k","r":0,"c":"0001-01-01T00:00:00Z","b":""}`,
	`{"k":"k","r":18446744073709551615,"c":"2025-01-02T03:04:05Z","v":1}`,
	`{"k":"k\"q","r":1,"c":"2025-01-02T03:04:05Z","v":1}`,
	`{"k":"k","r":01,"c":"2025-01-02T03:04:05Z","v":1}`,
	`{"k":"k","r":1,"c":"2025-01-02T03:04:05Z","v":1,"x":2}`,
	`{"r":1,"k":"k","c":"2025-01-02T03:04:05Z","v":1}`,
	`{"k":"k","r":1,"c":"2025-01-02T03:04:05Z","b":"not base64!"}`,
	`{"k":"k","r":1,"c":"2025-01-02T03:04:05Z","v":[1, 2]}`,
	`{"k":"ключ","r":1,"c":"2025-01-02T03:04:05.999999999-09:30","v":"é"}`,
	`{"k":"k","r":1,"c":"2025-01-02T03:04:05Z","v":1,"b":"AAEC"}`,
	`{"k":"k","r":1,"c":"2025-01-02T03:04:05Z","v":{"a":1},"v":{"b":2}}`,
	`{"k":"k","r":1,"c":"2025-01-02T03:04:05Z","b":"AA\rEC"}`,
	`{"k":"k\u0041","r":1,"c":"2025-01-02T03:04:05Z","b":"AAEC"}`,
	"{\"k\":\"k\x01\",\"r\":1,\"c\":\"2025-01-02T03:04:05Z\",\"b\":\"AAEC\"}",
	"{\"k\":\"k\xff\",\"r\":1,\"c\":\"2025-01-02T03:04:05Z\",\"b\":\"AAEC\"}",
	`{"k":"k","r":1,"c":"2025-01-02T3:04:05Z","b":"AAEC"}`,
	`{"k":"k","r":1,"c":"2025-01-02T03:04:05+24:00","b":"AAEC"}`,
	`{"k":"k","r":1,"c":"2025-01-02T03:04:05.Z","b":"AAEC"}`,
	`{"k":"k","r":1,"c":"2025-01-02T03:04:05Z","v": [ 1 ] }`,
	`{"k":"k","r":1,"c":"2025-01-02T03:04:05Z","b":"}`, // the value's quotes are one
	"{\"k\":\"k\",\"r\":1,\"c\":\"2025-01-02T03:04:05Z\",\"b\":\"AA\nEC\"}",
}

// parseEntry, the fast path, reads a line exactly as encoding/json does,
// or declines it.
func TestParseEntryAgreesWithEncodingJSON(t *testing.T) {
	for _, line := range entryLines {
		checkParseEntry(t, []byte(line+"\n"), true)
		checkParseEntry(t, []byte(line+"\n"), false)
	}
	// What the writer writes takes the fast path.
	h, entries := sample()
	for i, isJSON := range encodings(h) {
		line, err := appendEntry(nil, entries[i], isJSON)
		if err != nil {
			t.Fatal(err)
		}
		if !parseEntry(line, &fileEntry{}, isJSON) {
			t.Errorf("the fast path declined %q, as the writer lays it out", line)
		}
		checkParseEntry(t, line, isJSON)
	}
}

func FuzzParseEntry(f *testing.F) {
	for _, line := range entryLines {
		f.Add([]byte(line+"\n"), true)
		f.Add([]byte(line+"\n"), false)
	}
	f.Fuzz(checkParseEntry)
}

// checkParseEntry fails the test when parseEntry accepts line and reads
// it otherwise than encoding/json: a JSON value that is not JSON (what
// followed it on the line made it part of it) is for the codec to refuse.
func checkParseEntry(t *testing.T, line []byte, jsonValue bool) {
	var fast, slow fileEntry
	if !parseEntry(line, &fast, jsonValue) || (jsonValue && !json.Valid(fast.V)) {
		return
	}
	if err := json.Unmarshal(line, &slow); err != nil {
		t.Fatalf("the fast path read %q, which encoding/json refuses: %v", line, err)
	}
	var fastV, slowV bytes.Buffer
	json.Compact(&fastV, fast.V)
	json.Compact(&slowV, slow.V)
	if fast.K != slow.K || fast.R != slow.R || !fast.C.Equal(slow.C) || fast.C.Location().String() != slow.C.Location().String() ||
		!bytes.Equal(fastV.Bytes(), slowV.Bytes()) || (!jsonValue && !bytes.Equal(fast.B, slow.B)) {
		t.Fatalf("%q: the fast path read %+v, encoding/json %+v", line, fast, slow)
	}
}
