package checkpointfile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"time"
	"unicode/utf8"
)

// fileEntry is one entry line, as encoding/json reads it when the line is
// not laid out as appendEntry writes it (parseEntry declines it).
type fileEntry struct {
	K string          `json:"k"`
	R uint64          `json:"r"`
	C time.Time       `json:"c"`
	V json.RawMessage `json:"v,omitempty"`
	B []byte          `json:"b,omitempty"`
}

// appendEntry appends the line of one entry:
// {"k":key,"r":revision,"c":"created","v":value} (a JSON value as it is)
// or {…,"b":"base64"}, and a newline.
func appendEntry(buf []byte, e Entry, jsonValue bool) ([]byte, error) {
	buf = append(buf, `{"k":`...)
	buf = appendJSONString(buf, e.Key)
	buf = append(buf, `,"r":`...)
	buf = strconv.AppendUint(buf, e.Revision, 10)
	buf = append(buf, `,"c":"`...)
	buf = e.Created.AppendFormat(buf, time.RFC3339Nano)
	value := e.Value
	if jsonValue {
		buf = append(buf, `","v":`...)
		if !json.Valid(value) {
			return nil, errors.New("the codec's value is not valid JSON")
		}
		if bytes.IndexByte(value, '\n') >= 0 {
			var compact bytes.Buffer
			json.Compact(&compact, value) // a newline would end the line: compacted, there is none
			value = compact.Bytes()
		}
		buf = append(buf, value...)
	} else {
		buf = append(buf, `","b":"`...)
		buf = base64.StdEncoding.AppendEncode(buf, value)
		buf = append(buf, '"')
	}
	return append(buf, "}\n"...), nil
}

// appendJSONString appends s as a JSON string.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			quoted, _ := json.Marshal(s)
			return append(buf, quoted...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// parseEntry reads a line laid out as appendEntry writes it, with the
// value field of the kind's encoding ("v" when jsonValue is set, "b"
// otherwise); it returns false for any other (encoding/json then reads
// it). What it reads, encoding/json would read the same, but for a "v"
// that is not valid JSON (the line had more after it), which it leaves to
// the codec to refuse. fe.V is part of line.
func parseEntry(line []byte, fe *fileEntry, jsonValue bool) bool {
	s, ok := bytes.CutPrefix(line, []byte(`{"k":"`))
	if !ok {
		return false
	}
	i := bytes.IndexByte(s, '"')
	if i < 0 || !plainString(s[:i]) {
		return false
	}
	key := s[:i]
	if s, ok = bytes.CutPrefix(s[i+1:], []byte(`,"r":`)); !ok {
		return false
	}
	var rev uint64
	n := 0
	for ; n < len(s) && n < 20 && s[n] >= '0' && s[n] <= '9'; n++ {
		rev = rev*10 + uint64(s[n]-'0')
	}
	if n == 0 || n == 20 || (n > 1 && s[0] == '0') {
		return false
	}
	if s, ok = bytes.CutPrefix(s[n:], []byte(`,"c":"`)); !ok {
		return false
	}
	i = bytes.IndexByte(s, '"')
	if i < 0 {
		return false
	}
	var created time.Time
	if created.UnmarshalText(s[:i]) != nil { // the parser of time.Time's UnmarshalJSON
		return false
	}
	s = s[i+1:]
	switch {
	case jsonValue && bytes.HasPrefix(s, []byte(`,"v":`)) && bytes.HasSuffix(s, []byte("}\n")):
		fe.V = s[len(`,"v":`) : len(s)-2]
	case !jsonValue && len(s) >= len(`,"b":""}`+"\n") && // the quotes around the value are two
		bytes.HasPrefix(s, []byte(`,"b":"`)) && bytes.HasSuffix(s, []byte("\"}\n")):
		encoded := s[len(`,"b":"`) : len(s)-3]
		if bytes.ContainsAny(encoded, "\r\n") { // base64 skips them, JSON refuses them
			return false
		}
		b, err := base64.StdEncoding.AppendDecode(nil, encoded)
		if err != nil {
			return false
		}
		fe.B = b
	default:
		return false
	}
	fe.K, fe.R, fe.C = string(key), rev, created
	return true
}

// plainString reports whether s is the content of a JSON string that
// encoding/json reads as it is: valid UTF-8, without escapes or control
// characters.
func plainString(s []byte) bool {
	ascii := true
	for _, c := range s {
		if c < 0x20 || c == '\\' {
			return false
		}
		ascii = ascii && c < 0x80
	}
	return ascii || utf8.Valid(s)
}
