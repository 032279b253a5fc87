package kvwatchimpl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/internal/checkpointfile"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is what a checkpoint file holds of the watcher: its bucket,
// each of its kinds described (key template, codec, value shape) and
// matched to its binding, and each kind's entries, keys in their string
// form (the kind's FormatKey, read back with ParseKey) and values as its
// codec encodes them (raw JSON for the JSON codec, base64 for any other).

// fileBinding is what a binding does for checkpoint files; *Binding
// implements it (below).
type fileBinding interface {
	fileKind(key string) checkpointfile.Kind
	countEntries(entries any) int
	encodeFileEntries(out *checkpointfile.Writer, entries any) error
	decodeFileEntries(in *checkpointfile.Reader, n int) (any, error)
}

// fileBindingOf returns b as a fileBinding.
func fileBindingOf(b AnyBinding) (fileBinding, error) {
	fb, ok := b.(fileBinding)
	if !ok {
		return nil, fmt.Errorf("kind %s: binding %T cannot be saved", b.kindName(), b)
	}
	return fb, nil
}

// fileKinds returns the watcher's bindings as fileBindings, and their
// kinds as a checkpoint file describes them (without entry counts).
func (w *Watcher) fileKinds() ([]fileBinding, []checkpointfile.Kind, error) {
	fbs := make([]fileBinding, len(w.bindings))
	kinds := make([]checkpointfile.Kind, len(w.bindings))
	for i, b := range w.bindings {
		fb, err := fileBindingOf(b)
		if err != nil {
			return nil, nil, err
		}
		fbs[i], kinds[i] = fb, fb.fileKind(w.templates[i].String())
	}
	return fbs, kinds, nil
}

// encodeCheckpointFile writes cp, a checkpoint the watcher took, to out.
func (w *Watcher) encodeCheckpointFile(out io.Writer, cp Checkpoint) error {
	if len(cp.Kinds) != len(w.bindings) || len(cp.KindNames) != len(w.bindings) {
		return fmt.Errorf("the checkpoint has %d kinds, the watcher %d", len(cp.Kinds), len(w.bindings))
	}
	for i, b := range w.bindings {
		if cp.KindNames[i] != b.kindName() {
			return fmt.Errorf("the checkpoint's kind #%d is %s, the watcher's %s", i, cp.KindNames[i], b.kindName())
		}
	}
	fbs, kinds, err := w.fileKinds()
	if err != nil {
		return err
	}
	for i, fb := range fbs {
		kinds[i].Entries = fb.countEntries(cp.Kinds[i])
	}
	fw, err := checkpointfile.NewWriter(out, checkpointfile.Header{Bucket: w.bucket, SchemaBucket: w.spec.Bucket,
		Revision: cp.Revision, Filters: cp.Filters, StreamCreated: cp.StreamCreated, Saved: time.Now().UTC(), Kinds: kinds})
	if err != nil {
		return err
	}
	for i, fb := range fbs {
		if err := fb.encodeFileEntries(fw, cp.Kinds[i]); err != nil {
			return err
		}
	}
	return fw.Close()
}

// readCheckpointFile reads and checks the checkpoint file at path: nil,
// nil when there is none. The file must hold exactly the watcher's kinds,
// as the watcher has them; each kind's entries go to its binding.
func (w *Watcher) readCheckpointFile(path string) (*Checkpoint, error) {
	file, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer file.Close()
	fr, err := checkpointfile.NewReader(file)
	if err != nil {
		return nil, err
	}
	hdr := fr.Header()
	fbs, kinds, err := w.fileKinds()
	if err != nil {
		return nil, err
	}
	match, err := hdr.Match(w.bucket, w.spec.Bucket, kinds)
	if err != nil {
		return nil, err
	}
	cp := &Checkpoint{Revision: hdr.Revision, Filters: hdr.Filters, StreamCreated: hdr.StreamCreated}
	for i, k := range hdr.Kinds {
		entries, err := fbs[match[i]].decodeFileEntries(fr, k.Entries)
		if err != nil {
			return nil, err
		}
		cp.Kinds = append(cp.Kinds, entries)
		cp.KindNames = append(cp.KindNames, k.Name)
	}
	if err := fr.End(); err != nil {
		return nil, err
	}
	return cp, nil
}

// The methods below make *Binding a fileBinding.

// fileKind describes the binding's kind in a checkpoint file.
func (b *Binding[K, V]) fileKind(key string) checkpointfile.Kind {
	values := checkpointfile.Base64
	if b.jsonValues() {
		values = checkpointfile.JSON
	}
	return checkpointfile.Kind{Name: b.kind.Name, Key: key, Codec: checkpointfile.TypeName(reflect.TypeOf(b.kind.Codec)),
		ValueShape: checkpointfile.Shape(reflect.TypeFor[V]()), Values: values}
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

// encodeFileEntries writes each entry, its value encoded by the kind's
// codec.
func (b *Binding[K, V]) encodeFileEntries(out *checkpointfile.Writer, entries any) error {
	list, _ := entries.([]kvwatch.Entry[K, V])
	for _, e := range list {
		key := b.kind.FormatKey(e.Key)
		data, err := b.kind.Codec.Encode(e.Value)
		if err != nil {
			return fmt.Errorf("kind %s: encoding the value of %s: %w", b.kind.Name, key, err)
		}
		if err := out.Add(checkpointfile.Entry{Key: key, Revision: e.Revision, Created: e.Created, Value: data}); err != nil {
			return err
		}
	}
	return nil
}

// decodeFileEntries reads n entries of the binding's kind: keys parsed
// (and in their canonical form), values decoded by the kind's codec.
func (b *Binding[K, V]) decodeFileEntries(in *checkpointfile.Reader, n int) (any, error) {
	list := make([]kvwatch.Entry[K, V], 0, min(n, 1<<16)) // the count is not checked yet
	for range n {
		fe, err := in.Next()
		if err != nil {
			return nil, err
		}
		key, err := b.kind.ParseKey(fe.Key)
		if err != nil {
			return nil, fmt.Errorf("line %d: kind %s: key %q: %w", in.Line(), b.kind.Name, fe.Key, err)
		}
		if raw := b.kind.FormatKey(key); raw != fe.Key {
			return nil, fmt.Errorf("line %d: kind %s: key %q is not in its canonical form %q", in.Line(), b.kind.Name, fe.Key, raw)
		}
		v, err := b.kind.Codec.Decode(fe.Value)
		if err != nil {
			return nil, fmt.Errorf("line %d: kind %s: key %s: %w", in.Line(), b.kind.Name, fe.Key, err)
		}
		list = append(list, kvwatch.Entry[K, V]{Key: key, Value: v, Revision: fe.Revision, Created: fe.Created})
	}
	return list, nil
}
