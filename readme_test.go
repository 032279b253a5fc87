package kvwatchgen_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// adoptBlock is the README's adoption path: the fenced shell block between
// the adopt:begin and adopt:end markers of "In your own module".
var adoptBlock = regexp.MustCompile("(?s)<!-- adopt:begin[^>]*-->\\s*```sh\\n(.*?)```\\s*<!-- adopt:end -->")

// generateBlock is the README's Go file of step 3, whose first line names
// its path.
var generateBlock = regexp.MustCompile("(?s)```go\\n\\s*// (netkv/generate\\.go)\\n(.*?)```")

// readmeAdoption returns the commands of the README's adoption path, one a
// line, and the Go file of step 3 (its path and text).
func readmeAdoption(t *testing.T) (commands []string, genPath, genText string) {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := adoptBlock.FindSubmatch(b)
	if m == nil {
		t.Fatal("README.md has no ```sh block between <!-- adopt:begin --> and <!-- adopt:end -->")
	}
	for line := range strings.Lines(string(m[1])) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			commands = append(commands, line)
		}
	}
	g := generateBlock.FindSubmatch(b)
	if g == nil {
		t.Fatal("README.md has no ```go block starting // netkv/generate.go")
	}
	var text strings.Builder
	for line := range strings.Lines(string(g[2])) {
		text.WriteString(strings.TrimPrefix(line, "   ")) // the block is indented under its list item
	}
	return commands, string(g[1]), text.String()
}

// TestReadmeAdoption runs the README's "In your own module" as a new user
// does: a fresh module beside a clone of this repository (../kvwatchgen,
// here a link to this checkout), each line of the adoption block run as
// written, then a schema, the README's generate.go, go generate, go mod
// tidy, go build and -check. The module itself is not published: the path
// must work without the proxy knowing it.
func TestReadmeAdoption(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command, which may download the runtime's dependencies")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	commands, genPath, genText := readmeAdoption(t)
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(root, filepath.Join(dir, "kvwatchgen")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(dir, "app")
	writeFile(t, filepath.Join(app, "go.mod"), "module example.com/app\n\ngo 1.26\n")
	run := func(line string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	for _, line := range commands {
		run(line)
	}
	writeFile(t, filepath.Join(app, "netkv", "kvwatch.yaml"), `version: 1
package: netkv
buckets:
  - bucket: config
    keys:
      - name: Setting
        key: svc.{service}.{name}
        value: Setting
    scopes:
      - name: Service
        prefix: svc.{service}
types:
  Setting:
    fields:
      value: string
`)
	writeFile(t, filepath.Join(app, filepath.FromSlash(genPath)), genText)
	for _, line := range []string{
		"go generate ./...",
		"go mod tidy",
		"go build ./...",
		"go tool kvwatchgen -check -schema netkv/kvwatch.yaml",
	} {
		run(line)
	}
	if _, err := os.Stat(filepath.Join(app, "netkv", "config.kvwatch.go")); err != nil {
		t.Errorf("go generate wrote no config.kvwatch.go: %v", err)
	}
}
