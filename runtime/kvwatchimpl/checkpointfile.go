package kvwatchimpl

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is durable checkpoints: WithCheckpointFile starts a watcher
// from a checkpoint file when the file can be trusted, and keeps the file
// up to date, written atomically, from a goroutine of its own.
//
// The file is JSON lines, format version 1:
//
//	{"format":"kvwatch-checkpoint","version":1,"bucket":…,"schema_bucket":…,"revision":…,
//	 "filters":[…],"stream_created":…,"saved":…,"kinds":[{"name":…,"key":…,"codec":…,
//	 "value_shape":…,"values":"json"|"base64","entries":N}, …]}
//	{"k":"vpc.a.route.r1","r":12,"c":"2025-…","v":{…}}   one line per entry, kind after kind
//	{"end":"kvwatch-checkpoint","entries":…,"crc32c":"…"}
//
// Keys are in their string form (the kind's FormatKey, read back with
// ParseKey), values as the kind's codec encodes them: raw JSON ("v") for
// the JSON codec, base64 ("b") for any other. The trailer's CRC-32C covers
// every byte before it: a file cut short or changed anywhere is refused.

const (
	checkpointFileFormat  = "kvwatch-checkpoint"
	checkpointFileVersion = 1

	// savePoll is how often the saver checks whether a save is due.
	savePoll = 250 * time.Millisecond
)

// CheckpointFileStats returns what the watcher's checkpoint file did:
// loaded or not, saves and failures. It is safe from any goroutine.
func (w *Watcher) CheckpointFileStats() kvwatch.CheckpointFileStats {
	f := w.ckptFile
	if f == nil {
		return kvwatch.CheckpointFileStats{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// checkpointFile is a watcher's checkpoint file: its options, what the
// file on disk holds, and the statistics.
type checkpointFile struct {
	path string
	cfg  config.CheckpointFile
	// loadErr is set by Start and reported by the event goroutine.
	loadErr error
	// onDisk is the head of the checkpoint the file holds (set by Start,
	// then by the saver goroutine only).
	onDisk checkpointHead

	mu    sync.Mutex
	stats kvwatch.CheckpointFileStats
}

// checkpointHead is what tells checkpoints of one watcher apart without
// their entries: a checkpoint with the same head holds the same state.
type checkpointHead struct {
	revision uint64
	created  time.Time
	filters  []string
	valid    bool
}

func (h checkpointHead) same(o checkpointHead) bool {
	return h.valid && o.valid && h.revision == o.revision && h.created.Equal(o.created) && slices.Equal(h.filters, o.filters)
}

// head returns the head of the checkpoint the watcher would take now.
func (w *Watcher) head() checkpointHead {
	w.state.mu.RLock()
	h := checkpointHead{revision: w.state.revision, created: w.state.streamCreated, valid: true}
	w.state.mu.RUnlock()
	h.filters = w.currentFilters()
	return h
}

// changeCount is the number of changes applied to the caches so far.
func (w *Watcher) changeCount() uint64 {
	n := w.stats.unknownKeys.Load()
	for _, b := range w.bindings {
		c := b.counters()
		n += c.puts.Load() + c.deletes.Load() + c.purges.Load() + c.dataErrors.Load()
	}
	return n
}

// loadCheckpointFile reads the checkpoint file, at Start before the caches
// are restored: a valid file becomes the checkpoint to resume from.
func (w *Watcher) loadCheckpointFile() {
	f := w.ckptFile
	if f == nil {
		return
	}
	log := w.cfg.Logger
	ctx := context.Background()
	f.removeTemps(log)
	if w.cfg.Resume != nil {
		log.LogAttrs(ctx, slog.LevelInfo, "kvwatch: Resume given: the checkpoint file is not read, only saved",
			slog.String("bucket", w.bucket), slog.String("path", f.path))
		return
	}
	cp, err := w.readCheckpointFile(f.path)
	switch {
	case err != nil:
		f.loadErr = &kvwatch.CheckpointFileError{Path: f.path, Op: "load", Err: err}
		log.LogAttrs(ctx, slog.LevelWarn, "kvwatch: checkpoint file ignored: reading the whole state",
			slog.String("bucket", w.bucket), slog.String("path", f.path), slog.Any("error", err))
	case cp == nil:
		log.LogAttrs(ctx, slog.LevelInfo, "kvwatch: no checkpoint file yet: reading the whole state",
			slog.String("bucket", w.bucket), slog.String("path", f.path))
	default:
		w.cfg.Resume = cp
		f.onDisk = checkpointHead{revision: cp.Revision, created: cp.StreamCreated, filters: cp.Filters, valid: true}
		log.LogAttrs(ctx, slog.LevelInfo, "kvwatch: checkpoint file loaded",
			slog.String("bucket", w.bucket), slog.String("path", f.path), slog.Uint64("revision", cp.Revision))
	}
	f.mu.Lock()
	f.stats.Loaded, f.stats.LoadError = cp != nil && err == nil, f.loadErr
	f.mu.Unlock()
}

// reportCheckpointFile passes the checkpoint file's load error to OnError;
// the event goroutine calls it before anything else.
func (w *Watcher) reportCheckpointFile() {
	if f := w.ckptFile; f != nil && f.loadErr != nil {
		w.notify(f.loadErr)
	}
}

// startCheckpointSaver starts the saver goroutine, once w.ctx is set.
func (w *Watcher) startCheckpointSaver() {
	if f := w.ckptFile; f != nil {
		w.bg.Go(func() { f.saveLoop(w) })
	}
}

// saveResult is the outcome of one save.
type saveResult struct {
	head     checkpointHead
	size     int64
	duration time.Duration
	err      error
}

// saveLoop is the saver goroutine: it waits for the watcher to be synced,
// then saves when a save is due, and once more when the watch ends.
func (f *checkpointFile) saveLoop(w *Watcher) {
	select {
	case <-w.synced:
	case <-w.ctx.Done():
		return // never synced: the file stays as it was
	}
	poll := savePoll
	if f.cfg.Interval > 0 {
		poll = min(poll, max(f.cfg.Interval, 10*time.Millisecond))
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var (
		running   chan saveResult // non-nil while a save runs
		attempted bool            // a save was tried since the watcher was synced
		since     time.Time       // when the last save was tried
		base      uint64          // changeCount when it was
	)
	for {
		if running == nil && w.ctx.Err() == nil && !f.onDisk.same(w.head()) {
			changes := w.changeCount()
			due := !attempted ||
				(f.cfg.Every > 0 && changes-base >= uint64(f.cfg.Every)) ||
				(f.cfg.Interval > 0 && time.Since(since) >= f.cfg.Interval)
			if due {
				if running = f.begin(w); running != nil {
					attempted, since, base = true, time.Now(), changes
				}
			}
		}
		select {
		case <-w.ctx.Done():
			f.last(w, running)
			return
		case r := <-running:
			running = nil
			f.finish(w, r)
		case <-tick.C:
		}
	}
}

// last makes the final save, when the watch ends: after the save in
// progress, if any, and only if the file does not hold the state yet, all
// within the save timeout.
func (f *checkpointFile) last(w *Watcher, running chan saveResult) {
	timer := time.NewTimer(f.cfg.Timeout)
	defer timer.Stop()
	if running != nil {
		select {
		case r := <-running:
			f.finish(w, r)
			if r.err != nil {
				return // the disk fails: no second try at Stop
			}
		case <-timer.C:
			f.abandon(w)
			return
		}
	}
	if f.onDisk.same(w.head()) {
		return
	}
	if running = f.begin(w); running == nil {
		return // SetScopes in progress: the file stays as it was
	}
	select {
	case r := <-running:
		f.finish(w, r)
	case <-timer.C:
		f.abandon(w)
	}
}

// begin takes the watcher's checkpoint and writes it on a new goroutine,
// whose result arrives on the channel returned; nil when the watcher has
// no checkpoint to take now (SetScopes in progress).
func (f *checkpointFile) begin(w *Watcher) chan saveResult {
	cp, err := w.Checkpoint()
	if err != nil {
		return nil
	}
	done := make(chan saveResult, 1) // never blocks: an abandoned save ends alone
	go func() {
		start := time.Now()
		size, err := writeFileAtomic(f.path, f.cfg.Fault, func(out io.Writer) error { return w.encodeCheckpointFile(out, cp) })
		done <- saveResult{head: checkpointHead{revision: cp.Revision, created: cp.StreamCreated, filters: cp.Filters, valid: true},
			size: size, duration: time.Since(start), err: err}
	}()
	return done
}

// finish records a save's result.
func (f *checkpointFile) finish(w *Watcher, r saveResult) {
	log := w.cfg.Logger
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.err != nil {
		err := &kvwatch.CheckpointFileError{Path: f.path, Op: "save", Err: r.err}
		f.stats.Failures++
		f.stats.LastError = err
		log.LogAttrs(context.Background(), slog.LevelWarn, "kvwatch: checkpoint file not saved: the previous one stays",
			slog.String("bucket", w.bucket), slog.String("path", f.path), slog.Any("error", r.err))
		return
	}
	f.onDisk = r.head
	f.stats.Saves++
	f.stats.LastSave, f.stats.LastRevision, f.stats.LastSize, f.stats.LastDuration = time.Now(), r.head.revision, r.size, r.duration
	f.stats.LastError = nil
	log.LogAttrs(context.Background(), slog.LevelDebug, "kvwatch: checkpoint file saved",
		slog.String("bucket", w.bucket), slog.String("path", f.path), slog.Uint64("revision", r.head.revision),
		slog.Int64("bytes", r.size), slog.Duration("took", r.duration))
}

// abandon logs a last save that did not end within the save timeout.
func (f *checkpointFile) abandon(w *Watcher) {
	w.cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn,
		"kvwatch: checkpoint file: the last save did not end within the save timeout: left running in the background",
		slog.String("bucket", w.bucket), slog.String("path", f.path), slog.Duration("timeout", f.cfg.Timeout))
}

// tempPrefix is the name prefix of path's temporary files.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// removeTemps removes the temporary files a save interrupted by a crash
// left next to the file.
func (f *checkpointFile) removeTemps(log *slog.Logger) {
	dir, prefix := filepath.Dir(f.path), tempPrefix(f.path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, e.Name())); err == nil {
				log.LogAttrs(context.Background(), slog.LevelInfo, "kvwatch: removed a checkpoint file's leftover temporary file",
					slog.String("path", filepath.Join(dir, e.Name())))
			}
		}
	}
}

// writeFileAtomic writes path with encode: into a temporary file in the
// same directory, fsynced, renamed over path, then the directory fsynced.
// On error before the rename, path is untouched and the temporary file
// removed. It returns the file's size.
func writeFileAtomic(path string, fault func(string) error, encode func(io.Writer) error) (size int64, err error) {
	at := func(stage string) error {
		if fault == nil {
			return nil
		}
		return fault(stage)
	}
	if err := at("create"); err != nil {
		return 0, err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, tempPrefix(path)+"*")
	if err != nil {
		return 0, err
	}
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	cw := &countingWriter{w: tmp}
	bw := bufio.NewWriterSize(cw, 256<<10)
	if err := encode(bw); err != nil {
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	if err := at("write"); err != nil {
		return 0, err
	}
	if err := tmp.Sync(); err != nil {
		return 0, err
	}
	if err := at("sync"); err != nil {
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	if err := at("rename"); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return 0, err
	}
	renamed = true
	if err := syncDir(dir); err != nil {
		return cw.n, fmt.Errorf("the file is in place, but syncing its directory failed (the rename may not survive a crash): %w", err)
	}
	return cw.n, nil
}

// syncDir fsyncs a directory, making a rename in it durable (not possible
// on Windows, where a rename is durable once it returns).
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// fileHeader is the first line of a checkpoint file.
type fileHeader struct {
	Format        string     `json:"format"`
	Version       int        `json:"version"`
	Bucket        string     `json:"bucket"`
	SchemaBucket  string     `json:"schema_bucket"`
	Revision      uint64     `json:"revision"`
	Filters       []string   `json:"filters"`
	StreamCreated time.Time  `json:"stream_created"`
	Saved         time.Time  `json:"saved"`
	Kinds         []fileKind `json:"kinds"`
}

// fileKind describes one kind's entries in a checkpoint file: what a
// reader must have to decode them as they were meant.
type fileKind struct {
	Name string `json:"name"`
	Key  string `json:"key"` // the key template
	// Codec is the codec's type (without type arguments); ValueShape is a
	// digest of the value type's shape (fields, JSON tags, types): a
	// value type that changed may decode the same bytes to other values.
	Codec      string `json:"codec"`
	ValueShape string `json:"value_shape"`
	Values     string `json:"values"` // "json" (raw, in "v") or "base64" (in "b")
	Entries    int    `json:"entries"`
}

// fileEntry is one entry line, as encoding/json reads it when the line is
// not laid out as appendFileEntry writes it (parseFileEntry declines it).
type fileEntry struct {
	K string          `json:"k"`
	R uint64          `json:"r"`
	C time.Time       `json:"c"`
	V json.RawMessage `json:"v,omitempty"`
	B []byte          `json:"b,omitempty"`
}

// fileTrailer is the last line: it says the file is whole.
type fileTrailer struct {
	End     string `json:"end"`
	Entries int    `json:"entries"`
	CRC32C  string `json:"crc32c"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileBinding is what a binding does for checkpoint files; *Binding
// implements it (below).
type fileBinding interface {
	fileKind(key string) fileKind
	countEntries(entries any) int
	encodeFileEntries(out io.Writer, entries any, k fileKind) error
	decodeFileEntries(lr *lineReader, k fileKind) (any, error)
}

// fileBindingOf returns b as a fileBinding.
func fileBindingOf(b AnyBinding) (fileBinding, error) {
	fb, ok := b.(fileBinding)
	if !ok {
		return nil, fmt.Errorf("kind %s: binding %T cannot be saved", b.kindName(), b)
	}
	return fb, nil
}

// encodeCheckpointFile writes cp, a checkpoint the watcher took, to out.
func (w *Watcher) encodeCheckpointFile(out io.Writer, cp Checkpoint) error {
	if len(cp.Kinds) != len(w.bindings) || len(cp.KindNames) != len(w.bindings) {
		return fmt.Errorf("the checkpoint has %d kinds, the watcher %d", len(cp.Kinds), len(w.bindings))
	}
	hdr := fileHeader{Format: checkpointFileFormat, Version: checkpointFileVersion, Bucket: w.bucket, SchemaBucket: w.spec.Bucket,
		Revision: cp.Revision, Filters: cp.Filters, StreamCreated: cp.StreamCreated, Saved: time.Now().UTC()}
	if hdr.Filters == nil {
		hdr.Filters = []string{}
	}
	fbs := make([]fileBinding, len(w.bindings))
	total := 0
	for i, b := range w.bindings {
		if cp.KindNames[i] != b.kindName() {
			return fmt.Errorf("the checkpoint's kind #%d is %s, the watcher's %s", i, cp.KindNames[i], b.kindName())
		}
		fb, err := fileBindingOf(b)
		if err != nil {
			return err
		}
		fbs[i] = fb
		k := fb.fileKind(w.templates[i].String())
		k.Entries = fb.countEntries(cp.Kinds[i])
		total += k.Entries
		hdr.Kinds = append(hdr.Kinds, k)
	}
	crc := crc32.New(castagnoli)
	hashed := io.MultiWriter(out, crc)
	line, err := json.Marshal(&hdr)
	if err != nil {
		return err
	}
	if _, err := hashed.Write(append(line, '\n')); err != nil {
		return err
	}
	for i, fb := range fbs {
		if err := fb.encodeFileEntries(hashed, cp.Kinds[i], hdr.Kinds[i]); err != nil {
			return err
		}
	}
	end, err := json.Marshal(fileTrailer{End: checkpointFileFormat, Entries: total, CRC32C: fmt.Sprintf("%08x", crc.Sum32())})
	if err != nil {
		return err
	}
	_, err = out.Write(append(end, '\n'))
	return err
}

// errTruncated marks a file that ends before its trailer.
var errTruncated = errors.New("the file is cut short (no complete trailer)")

// readCheckpointFile reads and checks the checkpoint file at path: nil,
// nil when there is none.
func (w *Watcher) readCheckpointFile(path string) (*Checkpoint, error) {
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	lr := &lineReader{r: bufio.NewReaderSize(file, 256<<10), crc: crc32.New(castagnoli)}
	line, err := lr.next(true)
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
	if err := json.Unmarshal(line, &probe); err != nil || probe.Format != checkpointFileFormat {
		return nil, errors.New("not a kvwatch checkpoint file")
	}
	if probe.Version != checkpointFileVersion {
		return nil, fmt.Errorf("format version %d; this runtime reads version %d", probe.Version, checkpointFileVersion)
	}
	var hdr fileHeader
	if err := json.Unmarshal(line, &hdr); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	if hdr.Bucket != w.bucket || hdr.SchemaBucket != w.spec.Bucket {
		return nil, fmt.Errorf("written for bucket %s (schema bucket %s); this watcher watches %s (schema bucket %s)",
			hdr.Bucket, hdr.SchemaBucket, w.bucket, w.spec.Bucket)
	}
	fbs, err := w.matchFileKinds(hdr.Kinds)
	if err != nil {
		return nil, err
	}
	cp := &Checkpoint{Revision: hdr.Revision, Filters: hdr.Filters, StreamCreated: hdr.StreamCreated}
	total := 0
	for i, k := range hdr.Kinds {
		if k.Entries < 0 {
			return nil, fmt.Errorf("kind %s: %d entries", k.Name, k.Entries)
		}
		entries, err := fbs[i].decodeFileEntries(lr, k)
		if err != nil {
			return nil, err
		}
		cp.Kinds = append(cp.Kinds, entries)
		cp.KindNames = append(cp.KindNames, k.Name)
		total += k.Entries
	}
	line, err = lr.next(false)
	if err == io.EOF {
		return nil, errTruncated
	}
	if err != nil {
		return nil, err
	}
	var end fileTrailer
	if err := json.Unmarshal(line, &end); err != nil || end.End != checkpointFileFormat {
		return nil, fmt.Errorf("line %d: not the trailer: more entries than the header says, or a corrupt line", lr.line)
	}
	if end.Entries != total {
		return nil, fmt.Errorf("the trailer counts %d entries, the header %d", end.Entries, total)
	}
	if sum := fmt.Sprintf("%08x", lr.crc.Sum32()); end.CRC32C != sum {
		return nil, fmt.Errorf("checksum mismatch: the trailer says %s, the content is %s (corrupt)", end.CRC32C, sum)
	}
	if _, err := lr.next(false); err != io.EOF {
		return nil, errors.New("data after the trailer")
	}
	return cp, nil
}

// matchFileKinds returns the binding of each kind of a file: the file must
// hold exactly the watcher's kinds, as the watcher has them.
func (w *Watcher) matchFileKinds(kinds []fileKind) ([]fileBinding, error) {
	if len(kinds) != len(w.bindings) {
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = k.Name
		}
		return nil, fmt.Errorf("the file holds kinds %v, the watcher watches %d kinds", names, len(w.bindings))
	}
	out := make([]fileBinding, len(kinds))
	used := make([]bool, len(w.bindings))
	for i, k := range kinds {
		for j, b := range w.bindings {
			if b.kindName() != k.Name || used[j] {
				continue
			}
			fb, err := fileBindingOf(b)
			if err != nil {
				return nil, err
			}
			mine := fb.fileKind(w.templates[j].String())
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
			out[i], used[j] = fb, true
		}
		if out[i] == nil {
			return nil, fmt.Errorf("the file holds kind %s, which the watcher does not watch (or holds it twice)", k.Name)
		}
	}
	return out, nil
}

// lineReader reads a checkpoint file line by line, each with its newline,
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

// The methods below make *Binding a fileBinding.

// fileKind describes the binding's kind in a checkpoint file.
func (b *Binding[K, V]) fileKind(key string) fileKind {
	values := "base64"
	if b.jsonValues() {
		values = "json"
	}
	return fileKind{Name: b.kind.Name, Key: key, Codec: typeName(reflect.TypeOf(b.kind.Codec)),
		ValueShape: typeShape(reflect.TypeFor[V]()), Values: values}
}

// jsonValues reports whether the kind's codec makes JSON: its values are
// then stored as they are, not in base64.
func (b *Binding[K, V]) jsonValues() bool {
	_, ok := b.kind.Codec.(JSON[V])
	return ok
}

func (b *Binding[K, V]) countEntries(entries any) int {
	list, _ := entries.([]kvwatch.Entry[K, V])
	return len(list)
}

// encodeFileEntries writes one line per entry.
func (b *Binding[K, V]) encodeFileEntries(out io.Writer, entries any, k fileKind) error {
	list, _ := entries.([]kvwatch.Entry[K, V])
	var line []byte
	for _, e := range list {
		data, err := b.kind.Codec.Encode(e.Value)
		if err != nil {
			return fmt.Errorf("kind %s: encoding the value of %s: %w", b.kind.Name, b.kind.FormatKey(e.Key), err)
		}
		line, err = appendFileEntry(line[:0], b.kind.FormatKey(e.Key), e.Revision, e.Created, data, k.Values == "json")
		if err != nil {
			return fmt.Errorf("kind %s: key %s: %w", b.kind.Name, b.kind.FormatKey(e.Key), err)
		}
		if _, err := out.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// decodeFileEntries reads k.Entries lines as entries of the binding's
// kind: keys parsed (and in their canonical form), values decoded by the
// kind's codec.
func (b *Binding[K, V]) decodeFileEntries(lr *lineReader, k fileKind) (any, error) {
	list := make([]kvwatch.Entry[K, V], 0, min(k.Entries, 1<<16)) // the count is not checked yet
	for range k.Entries {
		line, err := lr.next(true)
		if err == io.EOF {
			return nil, errTruncated
		}
		if err != nil {
			return nil, err
		}
		var fe fileEntry
		if !parseFileEntry(line, &fe) {
			if err := json.Unmarshal(line, &fe); err != nil {
				return nil, fmt.Errorf("line %d: %w", lr.line, err)
			}
		}
		key, err := b.kind.ParseKey(fe.K)
		if err != nil {
			return nil, fmt.Errorf("line %d: kind %s: key %q: %w", lr.line, b.kind.Name, fe.K, err)
		}
		if raw := b.kind.FormatKey(key); raw != fe.K {
			return nil, fmt.Errorf("line %d: kind %s: key %q is not in its canonical form %q", lr.line, b.kind.Name, fe.K, raw)
		}
		data := []byte(fe.B)
		if k.Values == "json" {
			data = fe.V
		}
		v, err := b.kind.Codec.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("line %d: kind %s: key %s: %w", lr.line, b.kind.Name, fe.K, err)
		}
		list = append(list, kvwatch.Entry[K, V]{Key: key, Value: v, Revision: fe.R, Created: fe.C})
	}
	return list, nil
}

// appendFileEntry appends the line of one entry:
// {"k":key,"r":revision,"c":"created","v":value} (a JSON value as it is)
// or {…,"b":"base64"}, and a newline.
func appendFileEntry(buf []byte, key string, rev uint64, created time.Time, value []byte, jsonValue bool) ([]byte, error) {
	buf = append(buf, `{"k":`...)
	buf = appendJSONString(buf, key)
	buf = append(buf, `,"r":`...)
	buf = strconv.AppendUint(buf, rev, 10)
	buf = append(buf, `,"c":"`...)
	buf = created.AppendFormat(buf, time.RFC3339Nano)
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

// parseFileEntry reads a line laid out as appendFileEntry writes it; it
// returns false for any other (encoding/json then reads it). fe.V is
// part of line.
func parseFileEntry(line []byte, fe *fileEntry) bool {
	s, ok := bytes.CutPrefix(line, []byte(`{"k":"`))
	if !ok {
		return false
	}
	i := bytes.IndexByte(s, '"')
	if i < 0 || bytes.IndexByte(s[:i], '\\') >= 0 {
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
	created, err := time.Parse(time.RFC3339Nano, string(s[:i]))
	if err != nil {
		return false
	}
	s = s[i+1:]
	switch {
	case bytes.HasPrefix(s, []byte(`,"v":`)) && bytes.HasSuffix(s, []byte("}\n")):
		fe.V = s[len(`,"v":`) : len(s)-2]
	case bytes.HasPrefix(s, []byte(`,"b":"`)) && bytes.HasSuffix(s, []byte("\"}\n")):
		b, err := base64.StdEncoding.AppendDecode(nil, s[len(`,"b":"`):len(s)-3])
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

// typeName is a type's package path and name, without type arguments:
// "github.com/…/JSON".
func typeName(t reflect.Type) string {
	if t == nil {
		return "<nil>"
	}
	name, _, _ := strings.Cut(t.Name(), "[")
	if name == "" {
		return t.String()
	}
	return t.PkgPath() + "." + name
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// typeShape is a digest of what encoding/json sees of t: exported fields
// with their tags and types, element and key types, down to the types that
// encode themselves (time.Time and other marshalers), which count by name.
func typeShape(t reflect.Type) string {
	var sb strings.Builder
	writeShape(&sb, t, map[reflect.Type]bool{})
	sum := sha256.Sum256([]byte(sb.String()))
	return hex.EncodeToString(sum[:8])
}

func writeShape(sb *strings.Builder, t reflect.Type, seen map[reflect.Type]bool) {
	if t.Name() != "" {
		sb.WriteString(t.PkgPath() + "." + t.Name())
		if seen[t] {
			return
		}
		seen[t] = true
		pt := reflect.PointerTo(t)
		if t.Implements(jsonMarshalerType) || pt.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) || pt.Implements(textMarshalerType) {
			return
		}
		sb.WriteString("=")
	}
	switch t.Kind() {
	case reflect.Struct:
		sb.WriteString("struct{")
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			sb.WriteString(f.Name)
			if f.Anonymous {
				sb.WriteString("(embedded)")
			}
			sb.WriteString(" ")
			writeShape(sb, f.Type, seen)
			sb.WriteString(" " + strconv.Quote(string(f.Tag)) + ";")
		}
		sb.WriteString("}")
	case reflect.Pointer:
		sb.WriteString("*")
		writeShape(sb, t.Elem(), seen)
	case reflect.Slice:
		sb.WriteString("[]")
		writeShape(sb, t.Elem(), seen)
	case reflect.Array:
		sb.WriteString("[" + strconv.Itoa(t.Len()) + "]")
		writeShape(sb, t.Elem(), seen)
	case reflect.Map:
		sb.WriteString("map[")
		writeShape(sb, t.Key(), seen)
		sb.WriteString("]")
		writeShape(sb, t.Elem(), seen)
	default:
		sb.WriteString(t.Kind().String())
	}
}
