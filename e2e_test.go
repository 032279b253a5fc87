package kvwatchgen_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/gen"
	"github.com/kvwatchgen/kvwatchgen/internal/cli"
)

// appMain uses the generated package the way a user's program does, so
// that building it checks the generated API, not only that it compiles.
const appMain = `package main

import (
	"context"
	"fmt"

	"example.com/app/fleetkv"
	"github.com/nats-io/nats.go/jetstream"
)

func watch(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue) error {
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"a"}}, fleetkv.NetworkHandlers{
		OnRoute: func(ev fleetkv.RouteEvent) { fmt.Println(ev.Key.VPC, ev.Value.CIDR, ev.Op, ev.Initial) },
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		return err
	}
	_, _ = w.RouteCache().Get(fleetkv.RouteKey{VPC: "a", RouteID: "r1"})
	_, err = fleetkv.NewNetworkBucket(kv).PutFirewallRule(ctx, fleetkv.FirewallRuleKey{VPC: "a", Priority: 1}, fleetkv.FirewallRule{})
	return err
}

func main() { _ = watch }
`

// TestGeneratedModule generates the example schema into a fresh module that
// depends on this one, builds and vets it with the go command, then builds
// it against runtimes that are too old and too new, where the version
// guard must stop the build with a message naming the fix.
func TestGeneratedModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds modules with the go command")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	app := t.TempDir()
	schema, err := os.ReadFile("examples/fleet/fleetkv/kvwatch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(app, "fleetkv", "kvwatch.yaml"), string(schema))
	var stderr bytes.Buffer
	if code := cli.Run([]string{"-schema", filepath.Join(app, "fleetkv", "kvwatch.yaml")}, &stderr, &stderr); code != 0 {
		t.Fatalf("kvwatchgen: exit %d: %s", code, stderr.String())
	}
	writeFile(t, filepath.Join(app, "main.go"), appMain)

	useModule := func(dir string) {
		writeFile(t, filepath.Join(app, "go.mod"), "module example.com/app\n\ngo 1.26\n\n"+
			"require github.com/kvwatchgen/kvwatchgen v0.0.0\n\nreplace github.com/kvwatchgen/kvwatchgen => "+dir+"\n")
		copyFile(t, filepath.Join(root, "go.sum"), filepath.Join(app, "go.sum"))
	}
	goCmd := func(args ...string) (string, error) {
		cmd := exec.Command(goBin, args...)
		cmd.Dir = app
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	useModule(root)
	for _, args := range [][]string{{"build", "./..."}, {"vet", "./..."}} {
		if out, err := goCmd(args...); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	for _, c := range []struct {
		name, min, max, want string
	}{
		// A runtime one version behind the generator, and one that dropped
		// the generator's version.
		{"runtime too old", "1", strconv.Itoa(gen.GenVersion - 1), "constant -1 overflows kvwatchimpl.RuntimeTooOld_UpgradeModule"},
		{"runtime too new", strconv.Itoa(gen.GenVersion + 1), strconv.Itoa(gen.GenVersion + 1), "constant -1 overflows kvwatchimpl.GeneratedCodeTooOld_Regenerate"},
	} {
		useModule(fakeRuntime(t, root, c.min, c.max))
		out, err := goCmd("build", "./...")
		if err == nil {
			t.Errorf("%s: the build succeeded", c.name)
			continue
		}
		if !strings.Contains(out, c.want) || !strings.Contains(out, "fleetkv/kvwatch.go") {
			t.Errorf("%s: the build failed, but not with the guard naming the fix (%s):\n%s", c.name, c.want, out)
		}
	}

	// Code of the previous version, which this runtime still builds
	// (MinVersion 5).
	useModule(root)
	asVersion5(t, filepath.Join(app, "fleetkv"))
	if out, err := goCmd("build", "./..."); err != nil {
		t.Errorf("version 5 code against this runtime: %v\n%s", err, out)
	}
}

// version5Schema is the field of a bucket's spec that version 6 added
// (kvwatchimpl.SchemaID), on one line or several.
var version5Schema = regexp.MustCompile(`(?s)\n\tSchema: +kvwatchimpl\.SchemaID\{.*?\},?\n`)

// asVersion5 rewrites the generated package in dir into what version 5
// of the generator wrote, but for doc comments: its guard says 5, and its
// specs have no Schema.
func asVersion5(t *testing.T, dir string) {
	t.Helper()
	if gen.GenVersion != 6 {
		t.Fatalf("generated-code version %d: update asVersion5 (or drop it with MinVersion 5)", gen.GenVersion)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	specs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.NewReplacer("(6 - kvwatchimpl.MinVersion)", "(5 - kvwatchimpl.MinVersion)",
			"(kvwatchimpl.MaxVersion - 6)", "(kvwatchimpl.MaxVersion - 5)").Replace(string(b))
		specs += len(version5Schema.FindAllStringIndex(text, -1))
		text = version5Schema.ReplaceAllString(text, "\n")
		writeFile(t, f, text)
	}
	if specs == 0 {
		t.Fatal("asVersion5 found no Schema field to remove")
	}
}

// fakeRuntime copies this module's runtime package into a new module with
// other supported versions.
func fakeRuntime(t *testing.T, root, min, max string) string {
	t.Helper()
	dir := t.TempDir()
	copyFile(t, filepath.Join(root, "go.mod"), filepath.Join(dir, "go.mod"))
	copyFile(t, filepath.Join(root, "go.sum"), filepath.Join(dir, "go.sum"))
	// The runtime and the module's packages it imports.
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./runtime/kvwatchimpl").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []string
	for line := range strings.Lines(string(out)) {
		if rel, ok := strings.CutPrefix(strings.TrimSpace(line), "github.com/kvwatchgen/kvwatchgen/"); ok {
			pkgs = append(pkgs, rel)
		}
	}
	if !slices.Contains(pkgs, "runtime/kvwatchimpl") {
		t.Fatalf("go list found no runtime/kvwatchimpl: %q", out)
	}
	for _, pkg := range pkgs {
		src := filepath.Join(root, filepath.FromSlash(pkg))
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dir, filepath.FromSlash(pkg), e.Name()))
		}
	}
	version := filepath.Join(dir, "runtime", "kvwatchimpl", "version.go")
	b, err := os.ReadFile(version)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "MinVersion = 5", "MinVersion = "+min, 1)
	text = strings.Replace(text, "MaxVersion = GenVersion", "MaxVersion = "+max, 1)
	if !strings.Contains(text, "MinVersion = "+min) || !strings.Contains(text, "MaxVersion = "+max) {
		t.Fatal("kvwatchimpl/version.go no longer declares MinVersion = 5 / MaxVersion = GenVersion; update this test")
	}
	writeFile(t, version, text)
	return dir
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}
