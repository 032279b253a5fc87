package kvwatchgen_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the golden files (golden/*/want, golden/*/stderr.txt)")

// TestGolden runs the kvwatchgen command in-process over every
// golden/<case>/kvwatch.yaml. A case with a want/ folder must generate
// exactly the files in it (the want/ packages are compiled by go vet ./...
// and go test ./...; their hand-written _test.go files are not output and
// stay); a case with stderr.txt must fail with exit code 1 and
// exactly that output. `go test -run Golden -update` rewrites both.
func TestGolden(t *testing.T) {
	cases, err := os.ReadDir("golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if !c.IsDir() || c.Name() == "compat" { // compat: TestCompatGolden's pairs
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			dir := filepath.Join("golden", c.Name())
			out := t.TempDir()
			var stdout, stderr bytes.Buffer
			code := cli.Run([]string{"-schema", filepath.Join(dir, "kvwatch.yaml"), "-out", out}, &stdout, &stderr)
			wantDir, stderrFile := filepath.Join(dir, "want"), filepath.Join(dir, "stderr.txt")
			switch code {
			case cli.ExitOK:
				if *update {
					removeOutput(t, wantDir)
					os.Remove(stderrFile)
					copyDir(t, out, wantDir)
				}
				compareDirs(t, out, wantDir)
				if _, err := os.Stat(stderrFile); err == nil {
					t.Errorf("generation succeeded but %s exists: the case expects errors", stderrFile)
				}
			case cli.ExitError:
				if *update {
					os.RemoveAll(wantDir)
					if err := os.WriteFile(stderrFile, stderr.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(stderrFile)
				if err != nil {
					t.Fatalf("generation failed (%s) and there is no %s:\n%s", dir, stderrFile, stderr.String())
				}
				if got := stderr.String(); got != string(want) {
					t.Errorf("stderr differs from %s\n--- got:\n%s--- want:\n%s", stderrFile, got, want)
				}
				if _, err := os.Stat(wantDir); err == nil {
					t.Errorf("generation failed but %s exists:\n%s", wantDir, stderr.String())
				}
			default:
				t.Fatalf("exit code %d: %s", code, stderr.String())
			}
		})
	}
}

// removeOutput removes the files of a want/ folder that are generator
// output: all but its hand-written tests.
func removeOutput(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "_test.go") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// compareDirs checks that two folders hold the same files, byte for byte.
func compareDirs(t *testing.T, got, want string) {
	t.Helper()
	gotFiles, wantFiles := readDir(t, got), readDir(t, want)
	for name, content := range wantFiles {
		g, ok := gotFiles[name]
		switch {
		case !ok:
			t.Errorf("%s: not generated", name)
		case !bytes.Equal(g, content):
			t.Errorf("%s differs from %s (run go test -run Golden -update and review the diff)", name, filepath.Join(want, name))
		}
	}
	for name := range gotFiles {
		if _, ok := wantFiles[name]; !ok {
			t.Errorf("%s: generated but not in %s", name, want)
		}
	}
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "_test.go") {
			continue // hand-written tests of a want/ package
		}
		content, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = content
	}
	return files
}
