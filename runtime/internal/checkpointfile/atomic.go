package checkpointfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// WriteFile replaces the file at path with what write writes, atomically:
// into a new temporary file in path's directory (mode 0600, named after
// path so that RemoveTemps finds it), buffered, fsynced, closed, renamed
// over path, then the directory fsynced. Whenever it fails or the
// process dies, path holds either its previous content, whole, or the new
// one, whole; a failure before the rename removes the temporary file
// (death leaves it, for RemoveTemps). It returns the new file's size.
//
// fault, when not nil, is called at each stage, in order: "create" (before
// the temporary file is made), "write" (after write's bytes reached it),
// "sync" (after the fsync), "rename" (after it is closed, before the
// rename). An error it returns fails WriteFile there; a call that blocks
// holds it there. It exists for tests.
func WriteFile(path string, fault func(stage string) error, write func(io.Writer) error) (size int64, err error) {
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
	if err := write(bw); err != nil {
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

// RemoveTemps removes the temporary files that WriteFile calls for path
// left when the process died during them, and returns the paths it
// removed. Call it when no WriteFile for path runs: it would remove that
// one's temporary file too.
func RemoveTemps(path string) []string {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			if p := filepath.Join(dir, e.Name()); os.Remove(p) == nil {
				removed = append(removed, p)
			}
		}
	}
	return removed
}

// tempPrefix is the name prefix of path's temporary files.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

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
