// Package api_test keeps the exported API of the runtime packages, and of
// the example's generated package, in this folder: one file per package
// (runtime/kvwatch.txt for runtime/kvwatch), one line per exported name
// (internal/apidump). It fails on any difference between a file and its
// package, so that an API change lands only with its file and is seen in
// review. docs/compatibility.md says what the files promise.
package api_test

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/internal/apidump"
)

var update = flag.Bool("update", false, "record the current API in api/ (rewrite, add and remove the files)")

// patterns are the packages whose API is recorded, relative to the
// module's root:
//   - every package under runtime/ but the internal ones and folders that
//     hold only tests, which apidump.Load leaves out: a package added
//     under runtime/ is recorded with no change here;
//   - the example's generated package: what the generator gives users for
//     the README's schema, so that a generator change that alters it shows
//     here as well as in golden/.
var patterns = []string{"./runtime/...", "./examples/fleet/fleetkv"}

// updateCommand records the API; run from the module's root.
const updateCommand = "go test ./api -update"

func TestAPI(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := apidump.Load(root, patterns...)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatalf("no package matches %q", patterns)
	}
	current := map[string][]string{} // file in api/ -> lines
	for _, p := range pkgs {
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		current[filepath.ToSlash(rel)+".txt"] = p.Lines
	}
	recorded := readRecorded(t)
	var files []string
	for f := range current {
		files = append(files, f)
	}
	for f := range recorded {
		if _, ok := current[f]; !ok {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(file, ".txt"), func(t *testing.T) {
			checkFile(t, file, recorded[file], current[file])
		})
	}
}

// readRecorded returns the lines of every .txt file under api/, by path
// relative to it.
func readRecorded(t *testing.T) map[string][]string {
	recorded := map[string][]string{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".txt" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var lines []string
		if len(b) > 0 {
			lines = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		}
		recorded[filepath.ToSlash(path)] = lines
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return recorded
}

// checkFile compares the API recorded in file with the current one (nil:
// the package is gone) and, with -update, records the current one.
func checkFile(t *testing.T, file string, recorded, current []string) {
	changes := apidump.Compare(recorded, current)
	if len(changes) == 0 && slices.Equal(recorded, current) {
		return
	}
	if *update {
		if current == nil {
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
		} else {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(text(current)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("recorded api/%s:\n%s", file, list(changes))
		return
	}
	if len(changes) == 0 {
		t.Errorf("api/%s holds the API of its package, but not as %s writes it (sorted, one line each): run it to rewrite the file", file, updateCommand)
		return
	}
	t.Error(report(file, recorded, current, changes))
}

// text is the content of an API file: its lines, each ended by a newline.
func text(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// report says what differs, of which class, and what to do about it.
func report(file string, recorded, current []string, changes []apidump.Change) string {
	var b strings.Builder
	pkg := strings.TrimSuffix(file, ".txt")
	switch {
	case recorded == nil:
		fmt.Fprintf(&b, "the API of %s is not recorded (no api/%s):\n", pkg, file)
	case current == nil:
		fmt.Fprintf(&b, "api/%s records the API of %s, which no longer exists (or is internal or holds only tests):\n", file, pkg)
	default:
		fmt.Fprintf(&b, "the API of %s differs from api/%s:\n", pkg, file)
	}
	b.WriteString(list(changes))
	breaking := 0
	for _, c := range changes {
		if c.Class.Breaking() {
			breaking++
		}
	}
	if breaking > 0 {
		fmt.Fprintf(&b, "%d of %d changes are breaking: code written against the recorded API may no longer build. "+
			"docs/compatibility.md says when that is allowed (a deprecation first; for runtime/kvwatchimpl, the generated-code versions it builds) "+
			"and CHANGELOG.md must name each one.\n", breaking, len(changes))
	}
	fmt.Fprintf(&b, "If the change is intended, record it: %s (from the module's root), and commit api/ with it.", updateCommand)
	return b.String()
}

func list(changes []apidump.Change) string {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	return b.String()
}
