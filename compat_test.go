package kvwatchgen_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/internal/cli"
)

// TestCompatGolden runs kvwatchgen -compat in-process over every pair of
// schemas golden/compat/<case>/{old,new}.yaml, and compares its exit code,
// stdout and stderr with the case's want.txt (`go test -run CompatGolden
// -update` rewrites it). The corpus holds a case for every rule of the
// check and every message; internal/compat's end-to-end test runs the
// same pairs against a real server.
func TestCompatGolden(t *testing.T) {
	cases, err := filepath.Glob("golden/compat/*/new.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("no golden/compat/*/new.yaml")
	}
	for _, newPath := range cases {
		dir := filepath.Dir(newPath)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := cli.Run([]string{"-compat", filepath.Join(dir, "old.yaml"), "-schema", newPath}, &stdout, &stderr)
			got := fmt.Sprintf("exit %d\n-- stdout --\n%s-- stderr --\n%s", code, stdout.String(), stderr.String())
			wantFile := filepath.Join(dir, "want.txt")
			if *update {
				if err := os.WriteFile(wantFile, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(wantFile)
			if err != nil {
				t.Fatalf("%v (go test -run CompatGolden -update records it)", err)
			}
			if got != string(want) {
				t.Errorf("kvwatchgen -compat differs from %s\n--- got:\n%s--- want:\n%s", wantFile, got, want)
			}
		})
	}
}
