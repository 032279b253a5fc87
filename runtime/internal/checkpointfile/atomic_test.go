package checkpointfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// stages are WriteFile's stages, in order.
var stages = []string{"create", "write", "sync", "rename"}

// checkpoints returns two different checkpoints, old and new.
func checkpoints(t *testing.T) (old, new []byte) {
	h, entries := sample()
	old = encode(t, h, entries)
	h.Revision++
	entries[0].Value = []byte(`{"cidr":"10.9.0.0/16"}`)
	return old, encode(t, h, entries)
}

// writeBytes is a write function for WriteFile that writes data.
func writeBytes(data []byte) func(io.Writer) error {
	return func(out io.Writer) error {
		_, err := out.Write(data)
		return err
	}
}

// dirHolds fails the test unless dir holds exactly names.
func dirHolds(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Errorf("the directory holds %v, want %v", got, names)
	}
}

// holds fails the test unless the file at path is want, byte for byte,
// and a whole checkpoint.
func holds(t *testing.T, path string, want []byte, what string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: the file is not the %s checkpoint\n%s", what, what, got)
	}
	if _, _, err := decode(got); err != nil {
		t.Errorf("%s: the file is not a whole checkpoint: %v", what, err)
	}
}

// WriteFile puts the new checkpoint in place, mode 0600, and returns its
// size; the temporary file is gone.
func TestWriteFile(t *testing.T) {
	old, new := checkpoints(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "cp")
	for _, data := range [][]byte{old, new} { // a first file, then one replaced
		size, err := WriteFile(path, nil, writeBytes(data))
		if err != nil || size != int64(len(data)) {
			t.Fatalf("WriteFile: %d bytes, %v; want %d, nil", size, err, len(data))
		}
		holds(t, path, data, "written")
		dirHolds(t, dir, "cp")
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
		}
	}
}

// A fault at each stage fails WriteFile with the fault's error, leaves
// the previous checkpoint whole (or no file, when there was none), and
// removes the temporary file; the stages come in order. A write function
// that fails does the same.
func TestWriteFileFaultAtEachStage(t *testing.T) {
	old, new := checkpoints(t)
	injected := errors.New("injected")
	for _, first := range []bool{false, true} {
		for _, stage := range append(slices.Clone(stages), "encode") {
			t.Run(fmt.Sprintf("%s, first file %v", stage, first), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "cp")
				if !first {
					if _, err := WriteFile(path, nil, writeBytes(old)); err != nil {
						t.Fatal(err)
					}
				}
				var seen []string
				fault := func(s string) error {
					seen = append(seen, s)
					if s == stage {
						return injected
					}
					return nil
				}
				write := func(out io.Writer) error {
					if _, err := out.Write(new[:len(new)/2]); err != nil || stage == "encode" {
						return errors.Join(err, injected)
					}
					_, err := out.Write(new[len(new)/2:])
					return err
				}
				if _, err := WriteFile(path, fault, write); !errors.Is(err, injected) {
					t.Errorf("WriteFile: %v, want the injected error", err)
				}
				if want := stages[:max(slices.Index(stages, stage)+1, 1)]; !slices.Equal(seen, want) {
					t.Errorf("stages seen %v, want %v", seen, want)
				}
				if first {
					dirHolds(t, dir)
					return
				}
				holds(t, path, old, "old")
				dirHolds(t, dir, "cp")
			})
		}
	}
}

// A path WriteFile cannot replace (a directory) fails the write, and
// leaves no temporary file.
func TestWriteFileOverADirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cp")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	_, new := checkpoints(t)
	if _, err := WriteFile(path, nil, writeBytes(new)); err == nil {
		t.Error("WriteFile over a directory succeeded")
	}
	dirHolds(t, dir, "cp")
	if _, err := WriteFile(filepath.Join(dir, "missing", "cp"), nil, writeBytes(new)); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}

// The child process of TestWriteFileCrashAtEachStage reads its settings
// from the environment: the stage at which it dies, the file it writes,
// and the file holding what it writes there.
const crashStage, crashPath, crashData = "CHECKPOINTFILE_CRASH_STAGE", "CHECKPOINTFILE_CRASH_PATH", "CHECKPOINTFILE_CRASH_DATA"

// TestMain is also the child process of TestWriteFileCrashAtEachStage:
// with crashStage set, it writes crashData's content over crashPath and
// dies (os.Exit: no deferred call runs) at that stage, or in the middle
// of writing ("encode").
func TestMain(m *testing.M) {
	if stage := os.Getenv(crashStage); stage != "" {
		crashWhileWriting(stage, os.Getenv(crashPath), os.Getenv(crashData))
	}
	os.Exit(m.Run())
}

func crashWhileWriting(stage, path, src string) {
	data, err := os.ReadFile(src)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	die := func(s string) error {
		if s == stage {
			os.Exit(3)
		}
		return nil
	}
	_, err = WriteFile(path, die, func(out io.Writer) error {
		out.Write(data[:len(data)/2])
		if f, ok := out.(interface{ Flush() error }); ok {
			f.Flush() // the first half reaches the temporary file
		}
		die("encode")
		_, err := out.Write(data[len(data)/2:])
		return err
	})
	fmt.Fprintln(os.Stderr, "WriteFile returned:", err)
	os.Exit(1)
}

// A process that dies at any stage of WriteFile, or while writing, leaves
// the previous checkpoint whole at path, and a temporary file that
// RemoveTemps removes (none when it died before making one); the next
// WriteFile succeeds.
func TestWriteFileCrashAtEachStage(t *testing.T) {
	old, new := checkpoints(t)
	src := filepath.Join(t.TempDir(), "new")
	if err := os.WriteFile(src, new, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"create", "encode", "write", "sync", "rename"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "cp")
			if _, err := WriteFile(path, nil, writeBytes(old)); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashStage+"="+stage, crashPath+"="+path, crashData+"="+src)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 3 {
				t.Fatalf("the child process did not die at %s: %v\n%s", stage, err, out)
			}
			holds(t, path, old, "old")
			temps := 1
			if stage == "create" {
				temps = 0
			}
			if removed := RemoveTemps(path); len(removed) != temps || (temps == 1 && !strings.HasPrefix(removed[0], filepath.Join(dir, ".cp.tmp-"))) {
				t.Errorf("RemoveTemps removed %v, want %d temporary file(s)", removed, temps)
			}
			dirHolds(t, dir, "cp")
			if _, err := WriteFile(path, nil, writeBytes(new)); err != nil {
				t.Fatal(err)
			}
			holds(t, path, new, "new")
		})
	}
}

// RemoveTemps removes the temporary files of path alone: not path, not
// another file's, not a directory, and nothing when there are none.
func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cp")
	keep := []string{"cp", ".cp.tmp", ".cp.tmp-dir", ".cpx.tmp-1", ".other.tmp-1", "cp.tmp-1"}
	remove := []string{".cp.tmp-1", ".cp.tmp-2345678"}
	for _, name := range append(slices.Clone(keep), remove...) {
		var err error
		if name == ".cp.tmp-dir" {
			err = os.Mkdir(filepath.Join(dir, name), 0o700)
		} else {
			err = os.WriteFile(filepath.Join(dir, name), []byte("half a checkpo"), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	removed := RemoveTemps(path)
	if want := []string{filepath.Join(dir, remove[0]), filepath.Join(dir, remove[1])}; !slices.Equal(removed, want) {
		t.Errorf("RemoveTemps removed %v, want %v", removed, want)
	}
	slices.Sort(keep)
	dirHolds(t, dir, keep...)
	if removed := RemoveTemps(path); removed != nil {
		t.Errorf("RemoveTemps again removed %v", removed)
	}
	if removed := RemoveTemps(filepath.Join(dir, "missing", "cp")); removed != nil {
		t.Errorf("RemoveTemps in a missing directory removed %v", removed)
	}
}
