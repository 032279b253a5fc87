// Package checkpointfile is the checkpoint file of a watcher: its format,
// version 1 (Writer writes it; Reader reads it back and refuses a file cut
// short or changed; Header.Match checks a file was written for the
// watcher reading it), and WriteFile, which replaces a file atomically. It knows nothing of caches, bindings or codecs: keys
// come as strings and values as the bytes a codec made, and it needs no
// server to test.
//
// The file is JSON lines:
//
//	{"format":"kvwatch-checkpoint","version":1,"bucket":…,"schema_bucket":…,"revision":…,
//	 "filters":[…],"stream_created":…,"saved":…,"kinds":[{"name":…,"key":…,"codec":…,
//	 "value_shape":…,"values":"json"|"base64","entries":N}, …]}
//	{"k":"vpc.a.route.r1","r":12,"c":"2025-…","v":{…}}   one line per entry, kind after kind
//	{"end":"kvwatch-checkpoint","entries":…,"crc32c":"…"}
//
// Keys are in their string form; values are as the kind's codec encodes
// them, raw JSON ("v") for a kind whose values are JSON, base64 ("b") for
// any other. The trailer's CRC-32C (Castagnoli) covers every byte before
// it: a file cut short or changed anywhere is refused. Any JSON tool may
// rewrite the lines (another key order, other spacing) as long as it
// recomputes the checksum.
package checkpointfile

import (
	"fmt"
	"hash/crc32"
	"sync"
	"time"
)

const (
	// format names the format, in the header and the trailer.
	format = "kvwatch-checkpoint"
	// version is the format version this package writes and reads.
	version = 1
)

// castagnoli is the CRC-32C table, made at the first checkpoint read or
// written rather than when a program starts, so that a program linking
// the runtime without checkpoint files (the kvwatchgen command among
// them) does not make it at start.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// Header is a checkpoint's first line, without the format's name and
// version (Writer adds them, Reader checks them).
type Header struct {
	// Bucket is the bucket the watcher watched; SchemaBucket the bucket
	// its schema names (they differ when the watcher was given another).
	Bucket       string `json:"bucket"`
	SchemaBucket string `json:"schema_bucket"`
	// Revision is the last revision the checkpoint holds.
	Revision uint64 `json:"revision"`
	// Filters are the watcher's subject filters; Writer writes nil as an
	// empty list.
	Filters []string `json:"filters"`
	// StreamCreated is when the bucket's stream was created.
	StreamCreated time.Time `json:"stream_created"`
	// Saved is when the checkpoint was written; NewWriter writes it as
	// given.
	Saved time.Time `json:"saved"`
	// Kinds describe the entries that follow, kind after kind, in order.
	Kinds []Kind `json:"kinds"`
}

// Kind describes one kind's entries in a checkpoint: what a reader must
// have to decode them as they were meant (see Header.Match), and how many
// there are.
type Kind struct {
	Name string `json:"name"`
	// Key is the kind's key template.
	Key string `json:"key"`
	// Codec names the codec's type (TypeName); ValueShape is Shape of the
	// value type: a value type that changed may decode the same bytes to
	// other values.
	Codec      string `json:"codec"`
	ValueShape string `json:"value_shape"`
	// Values is how the entries' values are written.
	Values Encoding `json:"values"`
	// Entries is how many entries of the kind follow; never negative.
	Entries int `json:"entries"`
}

// Encoding is how a kind's values are written in its entry lines.
type Encoding string

const (
	// JSON writes each value as it is, in "v": the values must be valid
	// JSON (one that spans lines is compacted).
	JSON Encoding = "json"
	// Base64 writes each value in standard base64, in "b": any bytes.
	Base64 Encoding = "base64"
)

// Entry is one key's entry in a checkpoint.
type Entry struct {
	// Key is the key in its string form.
	Key string
	// Revision and Created are the entry's revision and creation time.
	Revision uint64
	Created  time.Time
	// Value is the value as the kind's codec encodes it.
	Value []byte
}

// checkKinds refuses kinds a file cannot hold: a negative count, an
// encoding this package does not know.
func checkKinds(kinds []Kind) error {
	for _, k := range kinds {
		if k.Entries < 0 {
			return fmt.Errorf("kind %s: %d entries", k.Name, k.Entries)
		}
		if k.Values != JSON && k.Values != Base64 {
			return fmt.Errorf("kind %s: values stored as %q, neither %s nor %s", k.Name, k.Values, JSON, Base64)
		}
	}
	return nil
}

// Match checks that h was written for the watcher reading it: for bucket
// (whose schema names schemaBucket), with exactly the kinds of want (each
// once, in any order), each as want has it: same name, key template,
// codec, value shape and value encoding (Entries are not compared). It
// returns, for each kind of h in order, the index of the same kind in
// want; the error says what differs.
func (h Header) Match(bucket, schemaBucket string, want []Kind) ([]int, error) {
	if h.Bucket != bucket || h.SchemaBucket != schemaBucket {
		return nil, fmt.Errorf("written for bucket %s (schema bucket %s); this watcher watches %s (schema bucket %s)",
			h.Bucket, h.SchemaBucket, bucket, schemaBucket)
	}
	if len(h.Kinds) != len(want) {
		names := make([]string, len(h.Kinds))
		for i, k := range h.Kinds {
			names[i] = k.Name
		}
		return nil, fmt.Errorf("the file holds kinds %v, the watcher watches %d kinds", names, len(want))
	}
	out := make([]int, len(h.Kinds))
	used := make([]bool, len(want))
	for i, k := range h.Kinds {
		out[i] = -1
		for j, mine := range want {
			if mine.Name != k.Name || used[j] {
				continue
			}
			switch {
			case mine.Key != k.Key:
				return nil, fmt.Errorf("kind %s: key template %s in the file, %s in the watcher", k.Name, k.Key, mine.Key)
			case mine.Codec != k.Codec:
				return nil, fmt.Errorf("kind %s: codec %s in the file, %s in the watcher", k.Name, k.Codec, mine.Codec)
			case mine.ValueShape != k.ValueShape:
				return nil, fmt.Errorf("kind %s: its value type changed since the file was written (shape %s, now %s)", k.Name, k.ValueShape, mine.ValueShape)
			case mine.Values != k.Values:
				return nil, fmt.Errorf("kind %s: values stored as %s, the watcher's as %s", k.Name, k.Values, mine.Values)
			}
			out[i], used[j] = j, true
			break
		}
		if out[i] < 0 {
			return nil, fmt.Errorf("the file holds kind %s, which the watcher does not watch (or holds it twice)", k.Name)
		}
	}
	return out, nil
}

// cursor walks the entries a header counts, kind after kind.
type cursor struct {
	kinds []Kind
	kind  int // the kind of the next entry; len(kinds) when all came
	left  int // entries of kinds[kind] still to come
}

func newCursor(kinds []Kind) cursor {
	c := cursor{kinds: kinds, kind: -1}
	c.skip()
	return c
}

// skip moves to the next kind that has entries left.
func (c *cursor) skip() {
	for c.left == 0 && c.kind < len(c.kinds) {
		if c.kind++; c.kind < len(c.kinds) {
			c.left = c.kinds[c.kind].Entries
		}
	}
}

// next counts one entry and returns its kind; false when the header
// counts no more.
func (c *cursor) next() (Kind, bool) {
	if c.kind >= len(c.kinds) {
		return Kind{}, false
	}
	k := c.kinds[c.kind]
	c.left--
	c.skip()
	return k, true
}

// remaining is how many entries the header counts that have not come.
func (c *cursor) remaining() int {
	n := c.left
	for _, k := range c.kinds[min(c.kind+1, len(c.kinds)):] {
		n += k.Entries
	}
	return n
}
