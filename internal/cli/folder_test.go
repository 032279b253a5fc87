package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const smallSchema = `version: 1
package: netkv
buckets:
  - bucket: config
    keys:
      - {name: Setting, key: "svc.{service}", value: string, codec: string}
`

func writeTestFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A folder that holds Go files of another package than the schema's is
// refused at generation time, naming the files and the ways out, with
// nothing written (go build would only say "found packages").
func TestFolderOfAnotherPackage(t *testing.T) {
	dir := t.TempDir()
	schemaPath := filepath.Join(dir, "kvwatch.yaml")
	writeTestFile(t, schemaPath, smallSchema)
	writeTestFile(t, filepath.Join(dir, "generate.go"), "package network\n\n//go:generate go tool kvwatchgen\n")
	for _, args := range [][]string{{"-schema", schemaPath}, {"-check", "-schema", schemaPath}} {
		var stdout, stderr bytes.Buffer
		if code := Run(args, &stdout, &stderr); code != ExitError {
			t.Errorf("%v: exit %d, want %d", args, code, ExitError)
		}
		want := "kvwatchgen: " + dir + " holds generate.go (package network), but the schema's package: is netkv, " +
			"and go build refuses a folder of two packages: give the schema their package, or give those files package netkv, " +
			"or generate into another folder with -out\n"
		if stderr.String() != want {
			t.Errorf("%v: stderr\n%s\nwant\n%s", args, stderr.String(), want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "kvwatch.go")); err == nil {
		t.Error("kvwatch.go was written all the same")
	}
}

// Without a schema, the message names -schema.
func TestNoSchemaNamesTheFlag(t *testing.T) {
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := Run(nil, &stdout, &stderr); code != ExitError {
		t.Errorf("exit %d, want %d", code, ExitError)
	}
	want := "kvwatchgen: no schema: open kvwatch.yaml: no such file or directory; give its path with -schema FILE (default kvwatch.yaml, in the current folder)\n"
	if stderr.String() != want {
		t.Errorf("stderr\n%s\nwant\n%s", stderr.String(), want)
	}
}

// The generated package comment names the schema file, and is left out
// when a file of the user's documents the package.
func TestGeneratedPackageComment(t *testing.T) {
	dir := t.TempDir()
	schemaPath := filepath.Join(dir, "net.yaml")
	writeTestFile(t, schemaPath, smallSchema)
	var stdout, stderr bytes.Buffer
	if code := Run([]string{"-schema", schemaPath}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "kvwatch.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\n// Package netkv is the typed access to the NATS JetStream KV bucket config") ||
		!strings.Contains(strings.Join(strings.Fields(string(b)), " "), "from the schema net.yaml") {
		t.Errorf("no package comment naming net.yaml:\n%.1200s", b)
	}
	writeTestFile(t, filepath.Join(dir, "doc.go"), "// Package netkv is my own.\npackage netkv\n")
	if code := Run([]string{"-schema", schemaPath}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if b, err = os.ReadFile(filepath.Join(dir, "kvwatch.go")); err != nil || strings.Contains(string(b), "// Package netkv") {
		t.Errorf("the package documents itself, but kvwatch.go has a package comment too (%v):\n%.1200s", err, b)
	}
	if code := Run([]string{"-check", "-schema", schemaPath}, &stdout, &stderr); code != ExitOK {
		t.Errorf("-check after generating: exit %d: %s", code, stderr.String())
	}
}
