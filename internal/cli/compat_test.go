package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompatAgainstAGitRevision compares a schema with itself as the
// repository has it at a revision: -compat git:REV.
func TestCompatAgainstAGitRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on PATH")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	src := "version: 1\npackage: p\nrevision: 1\nbuckets:\n  - bucket: b\n    keys:\n      - name: K\n        key: k.{id}\n        value: V\ntypes:\n  V:\n    fields:\n      n: int\n"
	path := filepath.Join(dir, "schemas", "kvwatch.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-qm", "schema")
	changed := strings.Replace(strings.Replace(src, "n: int", "n: string", 1), "revision: 1", "revision: 2", 1)
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	if code := Run([]string{"-compat", "git:HEAD", "-schema", path}, &stdout, &stderr); code != ExitError {
		t.Fatalf("exit %d, want %d: %s%s", code, ExitError, stdout.String(), stderr.String())
	}
	if want := path + ":13:7: breaking (old readers of new writes): field n of V changed from int to string"; !strings.Contains(stdout.String(), want) {
		t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
	}
	if want := "over " + path + "@HEAD"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
	}

	stdout.Reset()
	stderr.Reset()
	if code := Run([]string{"-compat", "git:no-such-rev", "-schema", path}, &stdout, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), "git show no-such-rev:./kvwatch.yaml") {
		t.Errorf("an unknown revision: exit %d, want %d with the git command named: %s", code, ExitUsage, stderr.String())
	}
	stderr.Reset()
	if code := Run([]string{"-compat", "git:HEAD", "-check", "-schema", path}, &stdout, &stderr); code != ExitUsage {
		t.Errorf("-compat with -check: exit %d, want %d", code, ExitUsage)
	}
}
