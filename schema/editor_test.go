package schema_test

// TestEditor* run the real YAML language server (yaml-language-server, the
// server of VS Code's YAML extension and of other editors) on schema files
// that use kvwatch.schema.json as the README says, and check what an editor
// shows: readable messages for names and templates, not raw regular
// expressions, and hover text with the syntax. They need Node.js and the
// server, so they run only when asked:
//
//	npm install --prefix /tmp/yls yaml-language-server@1.25.0
//	KVWATCH_EDITOR_TEST=/tmp/yls/node_modules/yaml-language-server go test -run Editor -v ./schema
//
// KVWATCH_EDITOR_TEST is the server's package folder, its bin script, or
// the folder npm installed it under (/tmp/yls). Without it, or without
// node on PATH, they skip.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// yamlLanguageServer returns node and the server's script, or skips.
func yamlLanguageServer(t *testing.T) (node, server string) {
	t.Helper()
	dir := os.Getenv("KVWATCH_EDITOR_TEST")
	if dir == "" {
		t.Skip("the editor test runs the real YAML language server: npm install --prefix /tmp/yls yaml-language-server@1.25.0, " +
			"then KVWATCH_EDITOR_TEST=/tmp/yls/node_modules/yaml-language-server go test -run Editor ./schema")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("KVWATCH_EDITOR_TEST is set but node is not on PATH (%v): the YAML language server needs Node.js", err)
	}
	for _, p := range []string{
		dir,
		filepath.Join(dir, "bin", "yaml-language-server"),
		filepath.Join(dir, "node_modules", "yaml-language-server", "bin", "yaml-language-server"),
	} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			if p, err = filepath.Abs(p); err != nil {
				t.Fatal(err)
			}
			return node, p
		}
	}
	t.Fatalf("KVWATCH_EDITOR_TEST=%s: no yaml-language-server script there (want the package folder, its bin/yaml-language-server, or the folder npm installed it under)", dir)
	return "", ""
}

// fileURI is the file: URI of a path.
func fileURI(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + filepath.ToSlash(abs)
}

// jsonSchemaAt returns the JSON Schema object at a path of keys into
// kvwatch.schema.json ("$defs", "key", "properties", "key").
func jsonSchemaAt(t *testing.T, path ...string) map[string]any {
	t.Helper()
	src, err := os.ReadFile("kvwatch.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(src, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("kvwatch.schema.json: no object at %s", strings.Join(path, "/"))
		}
		v = m[k]
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("kvwatch.schema.json: no object at %s", strings.Join(path, "/"))
	}
	return m
}

// locate returns the 0-based line of doc that is text once indentation is
// trimmed, and the 0-based column where at starts in it.
func locate(t *testing.T, doc, text, at string) (line, col int) {
	t.Helper()
	for i, l := range strings.Split(doc, "\n") {
		if strings.TrimSpace(l) == text {
			if c := strings.Index(l, at); c >= 0 {
				return i, c
			}
		}
	}
	t.Fatalf("no line %q holding %q in the document", text, at)
	return 0, 0
}

// A schema file with a mistake of each pattern of the JSON Schema: each one
// gets that pattern's readable message, at its value, and no diagnostic
// shows a raw regular expression.
func TestEditorDiagnostics(t *testing.T) {
	node, server := yamlLanguageServer(t)
	// The document sits beside the JSON Schema, as README's modeline wants
	// it (a path relative to the document); its text is sent, not read.
	uri := fileURI(t, "editortest.kvwatch.yaml")
	const doc = `# yaml-language-server: $schema=kvwatch.schema.json
version: 1
package: Bad-Pkg
buckets:
  - bucket: net.work
    keys:
      - name: route
        key: vpc.*.route
        value: map[int]string
      - name: Good
        key: vpc.{vpc}
        value: string
    scopes:
      - name: VPC
        prefix: vpc.{vpc
    config:
      ttl: 1 day
types:
  lower:
    fields:
      cidr: string
`
	want := []struct {
		line, at string   // the line (indentation trimmed), and where on it the diagnostic starts
		schema   []string // where its pattern is in kvwatch.schema.json
	}{
		{"package: Bad-Pkg", "Bad-Pkg", []string{"properties", "package"}},
		{"- bucket: net.work", "net.work", []string{"$defs", "bucket", "properties", "bucket"}},
		{"- name: route", "route", []string{"$defs", "goName"}},
		{"key: vpc.*.route", "vpc.*.route", []string{"$defs", "template"}},
		{"value: map[int]string", "map[int]string", []string{"$defs", "typeExpr"}},
		{"prefix: vpc.{vpc", "vpc.{vpc", []string{"$defs", "template"}},
		{"ttl: 1 day", "1 day", []string{"$defs", "duration"}},
		{"lower:", "lower", []string{"$defs", "goName"}},
	}
	c := startLSP(t, node, server)
	c.initialize(fileURI(t, "."))
	c.open(uri, doc)
	diags := c.diagnostics(uri, func(ds []lspDiagnostic) bool { return len(ds) >= len(want) })
	for _, d := range diags {
		if strings.Contains(d.Message, "pattern") || strings.Contains(d.Message, "^") {
			t.Errorf("%d:%d: the message shows the raw pattern: %s", d.Range.Start.Line+1, d.Range.Start.Character+1, d.Message)
		}
	}
	for _, w := range want {
		msg, _ := jsonSchemaAt(t, w.schema...)["patternErrorMessage"].(string)
		if msg == "" {
			t.Errorf("%s: kvwatch.schema.json has no patternErrorMessage at %s", w.line, strings.Join(w.schema, "/"))
			continue
		}
		line, col := locate(t, doc, w.line, w.at)
		found := false
		for _, d := range diags {
			if d.Range.Start.Line == line && d.Range.Start.Character == col && d.Message == msg {
				found = true
			}
		}
		if !found {
			t.Errorf("%d:%d (%s): no diagnostic %q", line+1, col+1, w.line, msg)
		}
	}
	if len(diags) != len(want) {
		t.Errorf("%d diagnostics, want %d", len(diags), len(want))
	}
	if t.Failed() {
		t.Logf("the diagnostics:\n%s", formatDiagnostics(diags))
	}
}

// Hover on a field shows its markdownDescription: the syntax and an example.
func TestEditorHover(t *testing.T) {
	node, server := yamlLanguageServer(t)
	uri := fileURI(t, "editortest.kvwatch.yaml")
	const doc = `# yaml-language-server: $schema=kvwatch.schema.json
version: 1
package: fleetkv
buckets:
  - bucket: network
    name: Net
    keys:
      - name: Route
        key: vpc.{vpc}.route.{route_id}
        value: Route
        codec: json
    scopes:
      - name: VPC
        prefix: vpc.{vpc}
    config:
      history: 5
      ttl: 24h
      storage: file
      replicas: 3
      max_consumers: 2000
      limit_marker_ttl: 1s
      atomic_batches: true
      max_value_size: 65536
      max_bytes: 1073741824
      description: Routes.
types:
  Route:
    fields:
      cidr: string
`
	cases := []struct {
		line, field string   // the line (indentation trimmed), and the field on it
		schema      []string // where its description is in kvwatch.schema.json
	}{
		{"version: 1", "version", []string{"properties", "version"}},
		{"package: fleetkv", "package", []string{"properties", "package"}},
		{"buckets:", "buckets", []string{"properties", "buckets"}},
		{"- bucket: network", "bucket", []string{"$defs", "bucket", "properties", "bucket"}},
		{"name: Net", "name", []string{"$defs", "bucket", "properties", "name"}},
		{"keys:", "keys", []string{"$defs", "bucket", "properties", "keys"}},
		{"- name: Route", "name", []string{"$defs", "key", "properties", "name"}},
		{"key: vpc.{vpc}.route.{route_id}", "key", []string{"$defs", "key", "properties", "key"}},
		{"value: Route", "value", []string{"$defs", "key", "properties", "value"}},
		{"codec: json", "codec", []string{"$defs", "key", "properties", "codec"}},
		{"scopes:", "scopes", []string{"$defs", "bucket", "properties", "scopes"}},
		{"- name: VPC", "name", []string{"$defs", "scope", "properties", "name"}},
		{"prefix: vpc.{vpc}", "prefix", []string{"$defs", "scope", "properties", "prefix"}},
		{"config:", "config", []string{"$defs", "bucket", "properties", "config"}},
		{"history: 5", "history", []string{"$defs", "bucketConfig", "properties", "history"}},
		{"ttl: 24h", "ttl", []string{"$defs", "bucketConfig", "properties", "ttl"}},
		{"max_value_size: 65536", "max_value_size", []string{"$defs", "bucketConfig", "properties", "max_value_size"}},
		{"max_bytes: 1073741824", "max_bytes", []string{"$defs", "bucketConfig", "properties", "max_bytes"}},
		{"storage: file", "storage", []string{"$defs", "bucketConfig", "properties", "storage"}},
		{"replicas: 3", "replicas", []string{"$defs", "bucketConfig", "properties", "replicas"}},
		{"max_consumers: 2000", "max_consumers", []string{"$defs", "bucketConfig", "properties", "max_consumers"}},
		{"limit_marker_ttl: 1s", "limit_marker_ttl", []string{"$defs", "bucketConfig", "properties", "limit_marker_ttl"}},
		{"atomic_batches: true", "atomic_batches", []string{"$defs", "bucketConfig", "properties", "atomic_batches"}},
		{"description: Routes.", "description", []string{"$defs", "bucketConfig", "properties", "description"}},
		{"types:", "types", []string{"properties", "types"}},
		{"fields:", "fields", []string{"$defs", "type", "properties", "fields"}},
	}
	c := startLSP(t, node, server)
	c.initialize(fileURI(t, "."))
	c.open(uri, doc)
	// The server has the schema once it has validated the document.
	if ds := c.diagnostics(uri, func([]lspDiagnostic) bool { return true }); len(ds) != 0 {
		t.Errorf("diagnostics for a valid document:\n%s", formatDiagnostics(ds))
	}
	for _, tc := range cases {
		md, _ := jsonSchemaAt(t, tc.schema...)["markdownDescription"].(string)
		if md == "" {
			t.Errorf("%s: kvwatch.schema.json has no markdownDescription at %s", tc.line, strings.Join(tc.schema, "/"))
			continue
		}
		line, col := locate(t, doc, tc.line, tc.field+":")
		got := c.hover(uri, line, col+1) // on the field's name, past its first letter
		if !strings.Contains(got, md) {
			t.Errorf("hover on %s (%d:%d):\n%s\nwant it to hold\n%s", tc.field, line+1, col+2, got, md)
		}
	}
}

// The README's setup: the fleet example's modeline, a path relative to the
// schema file, finds the JSON Schema, which accepts the example.
func TestEditorFleetExample(t *testing.T) {
	node, server := yamlLanguageServer(t)
	path := "../examples/fleet/fleetkv/kvwatch.yaml"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := startLSP(t, node, server)
	c.initialize(fileURI(t, ".."))
	uri := fileURI(t, path)
	c.open(uri, string(src))
	if ds := c.diagnostics(uri, func([]lspDiagnostic) bool { return true }); len(ds) != 0 {
		t.Errorf("diagnostics for %s:\n%s", path, formatDiagnostics(ds))
	}
	line, col := locate(t, string(src), "key: vpc.{vpc}.route.{route_id}", "key")
	md, _ := jsonSchemaAt(t, "$defs", "key", "properties", "key")["markdownDescription"].(string)
	if got := c.hover(uri, line, col+1); md == "" || !strings.Contains(got, md) {
		t.Errorf("hover on key: in %s:\n%s\nwant the key template's markdownDescription", path, got)
	}
}
