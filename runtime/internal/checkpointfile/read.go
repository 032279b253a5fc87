package checkpointfile

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// errTruncated marks a file that ends before its trailer.
var errTruncated = errors.New("the file is cut short (no complete trailer)")

// Reader reads a checkpoint: NewReader reads the header, Next each entry,
// End the trailer. Only a file End accepts is whole: until then, what
// was read may be corrupt, and must be thrown away if any call fails.
type Reader struct {
	lr    lineReader
	h     Header
	cur   cursor
	total int
}

// NewReader reads the header of the checkpoint in, and refuses a file
// that is empty, not a checkpoint, of another format version, or whose
// header is malformed or counts a negative number of entries or values in
// an unknown encoding.
func NewReader(in io.Reader) (*Reader, error) {
	r := &Reader{lr: lineReader{r: bufio.NewReaderSize(in, 256<<10), crc: crc32.New(castagnoli())}}
	line, err := r.lr.next(true)
	if err == io.EOF {
		return nil, errors.New("the file is empty")
	}
	if err != nil {
		return nil, err
	}
	var probe struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(line, &probe); err != nil || probe.Format != format {
		return nil, errors.New("not a kvwatch checkpoint file")
	}
	if probe.Version != version {
		return nil, fmt.Errorf("format version %d; this runtime reads version %d", probe.Version, version)
	}
	if err := json.Unmarshal(line, &r.h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if err := checkKinds(r.h.Kinds); err != nil {
		return nil, err
	}
	r.cur = newCursor(r.h.Kinds)
	for _, k := range r.h.Kinds {
		r.total += k.Entries
	}
	return r, nil
}

// Header returns the file's header. Its Kinds are the Reader's: the
// caller must not change them.
func (r *Reader) Header() Header { return r.h }

// Line returns the number of the line read last, the header being line
// 1: for the caller's errors about the entry Next returned.
func (r *Reader) Line() int { return r.lr.line }

// Next reads the next entry: those of Header().Kinds[0] first, then those
// of each following kind, as many as each counts. The entry's Value is
// valid until the following call; a JSON kind's Value is not checked to
// be JSON, which the codec decoding it does. Next fails when the header
// counts no more entries, when the file ends, and on a line that is not
// an entry.
func (r *Reader) Next() (Entry, error) {
	k, ok := r.cur.next()
	if !ok {
		return Entry{}, fmt.Errorf("the header counts %d entries, all read", r.total)
	}
	line, err := r.lr.next(true)
	if err == io.EOF {
		return Entry{}, errTruncated
	}
	if err != nil {
		return Entry{}, err
	}
	var fe fileEntry
	if !parseEntry(line, &fe, k.Values == JSON) {
		if err := json.Unmarshal(line, &fe); err != nil {
			return Entry{}, fmt.Errorf("line %d: %w", r.lr.line, err)
		}
	}
	e := Entry{Key: fe.K, Revision: fe.R, Created: fe.C, Value: fe.B}
	if k.Values == JSON {
		e.Value = fe.V
	}
	return e, nil
}

// End reads the trailer, once Next has returned every entry the header
// counts, and checks the file is whole: the trailer counts as many
// entries as the header, its checksum is that of every line before it,
// and nothing follows it.
func (r *Reader) End() error {
	if n := r.cur.remaining(); n > 0 {
		return fmt.Errorf("%d of the %d entries the header counts not read", n, r.total)
	}
	line, err := r.lr.next(false)
	if err == io.EOF {
		return errTruncated
	}
	if err != nil {
		return err
	}
	end, ok := parseTrailer(line)
	if !ok {
		return fmt.Errorf("line %d: not the trailer: more entries than the header says, or a corrupt line", r.lr.line)
	}
	if end.Entries != r.total {
		return fmt.Errorf("the trailer counts %d entries, the header %d", end.Entries, r.total)
	}
	if sum := fmt.Sprintf("%08x", r.lr.crc.Sum32()); end.CRC32C != sum {
		return fmt.Errorf("checksum mismatch: the trailer says %s, the content is %s (corrupt)", end.CRC32C, sum)
	}
	if _, err := r.lr.next(false); err != io.EOF {
		return errors.New("data after the trailer")
	}
	return nil
}

// trailer is the last line: it says the file is whole.
type trailer struct {
	End     string `json:"end"`
	Entries int    `json:"entries"`
	CRC32C  string `json:"crc32c"`
}

// parseTrailer reads a trailer line. The checksum does not cover it, so
// it is read strictly: exactly the trailer's three names, spelled as they
// are (encoding/json alone would take "End" for "end", and a name it does
// not know for a missing one, zero).
func parseTrailer(line []byte) (trailer, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil || len(fields) != 3 {
		return trailer{}, false
	}
	var t trailer
	for name, dst := range map[string]any{"end": &t.End, "entries": &t.Entries, "crc32c": &t.CRC32C} {
		raw, ok := fields[name]
		if !ok || json.Unmarshal(raw, dst) != nil {
			return trailer{}, false
		}
	}
	return t, t.End == format
}

// lineReader reads a checkpoint line by line, each with its newline,
// hashing what it is asked to.
type lineReader struct {
	r    *bufio.Reader
	crc  hash.Hash32
	buf  []byte
	line int
}

// next returns the next line, valid until the following call; io.EOF at
// the end of the file, errTruncated for a last line without a newline.
func (lr *lineReader) next(hashed bool) ([]byte, error) {
	chunk, err := lr.r.ReadSlice('\n')
	line := chunk
	if err == bufio.ErrBufferFull {
		lr.buf = append(lr.buf[:0], chunk...)
		for err == bufio.ErrBufferFull {
			chunk, err = lr.r.ReadSlice('\n')
			lr.buf = append(lr.buf, chunk...)
		}
		line = lr.buf
	}
	switch {
	case err == io.EOF && len(line) == 0:
		return nil, io.EOF
	case err == io.EOF:
		return nil, errTruncated
	case err != nil:
		return nil, err
	}
	lr.line++
	if hashed {
		lr.crc.Write(line)
	}
	return line, nil
}
