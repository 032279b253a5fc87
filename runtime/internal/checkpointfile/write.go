package checkpointfile

import (
	"encoding/json"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// Writer writes a checkpoint: NewWriter the header, Add each entry, Close
// the trailer. It makes only files Reader accepts: the entries must come
// kind after kind, as many of each as the header counts. After an error,
// what was written is not a checkpoint.
type Writer struct {
	out    io.Writer
	hashed io.Writer // out and crc
	crc    hash.Hash32
	cur    cursor
	total  int
	line   []byte
}

// NewWriter writes h as the header of a checkpoint to out, with the
// format's name and version. It refuses kinds that count a negative
// number of entries or name an unknown encoding.
func NewWriter(out io.Writer, h Header) (*Writer, error) {
	if err := checkKinds(h.Kinds); err != nil {
		return nil, err
	}
	if h.Filters == nil {
		h.Filters = []string{}
	}
	w := &Writer{out: out, crc: crc32.New(castagnoli()), cur: newCursor(h.Kinds)}
	w.hashed = io.MultiWriter(out, w.crc)
	for _, k := range h.Kinds {
		w.total += k.Entries
	}
	line, err := json.Marshal(struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
		Header
	}{format, version, h})
	if err != nil {
		return nil, err
	}
	if _, err := w.hashed.Write(append(line, '\n')); err != nil {
		return nil, err
	}
	return w, nil
}

// Add writes e as the next entry, of the kind whose entries come now: the
// first kind that has entries left, in the header's order. A JSON kind's
// value must be valid JSON. Add fails when the header counts no more
// entries.
func (w *Writer) Add(e Entry) error {
	k, ok := w.cur.next()
	if !ok {
		return fmt.Errorf("key %s: the header counts %d entries, all written", e.Key, w.total)
	}
	line, err := appendEntry(w.line[:0], e, k.Values == JSON)
	if err != nil {
		return fmt.Errorf("kind %s: key %s: %w", k.Name, e.Key, err)
	}
	w.line = line
	_, err = w.hashed.Write(line)
	return err
}

// Close writes the trailer, once Add has written every entry the header
// counts: the count and the checksum of every line before it. It does
// not close the io.Writer.
func (w *Writer) Close() error {
	if n := w.cur.remaining(); n > 0 {
		return fmt.Errorf("%d of the %d entries the header counts not written", n, w.total)
	}
	end, err := json.Marshal(trailer{End: format, Entries: w.total, CRC32C: fmt.Sprintf("%08x", w.crc.Sum32())})
	if err != nil {
		return err
	}
	_, err = w.out.Write(append(end, '\n'))
	return err
}
