package schema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// shapeVerdicts says, for every golden case, what the JSON Schema must say
// of its kvwatch.yaml: cases that generate are valid; invalid cases are
// split into those whose problem is one of shape (the JSON Schema rejects
// them, so an editor flags them as you type) and those only kvwatchgen can
// see (references, overlaps, collisions: valid shape).
var shapeVerdicts = map[string]string{
	"codecs": "valid", "docs_and_names": "valid", "external_types": "valid", "fleet": "valid", "generated_member_names": "valid",
	"initialisms": "valid", "int_scopes": "valid", "keywords_as_params": "valid", "literal_keys": "valid",
	"multi_bucket": "valid", "nested_scopes": "valid", "nested_types": "valid", "no_scopes": "valid",
	"typed_params": "valid", "yaml_anchors": "valid", "file_names": "valid", "import_names": "valid",
	"json_values": "valid", "bucket_config": "valid", "indexes": "valid",
	"schema_revision": "valid", // revision:, in every spec's SchemaID

	"bad_recovery": "invalid", // a bucket without bucket:, lower-case names

	"bad_codecs": "invalid", "bad_fields": "invalid", "bad_header": "invalid", "bad_names": "invalid",
	"bad_templates": "invalid", "bad_types": "invalid", "empty_file": "invalid", "missing_top_level": "invalid",
	"wrong_shapes": "invalid", "bad_bucket_config": "invalid",
	"bad_indexes": "invalid", // index name "byRack", unknown field "feild"

	"bad_scopes":      "invalid",  // scope name "lower" is not an exported name
	"duplicates":      "not YAML", // duplicate mapping keys: YAML decoders reject them too
	"name_collisions": "valid-shape", "overlapping_templates": "valid-shape",
	"scope_param_conflict": "valid-shape",

	"yaml_syntax": "not YAML", // a key one space less than its siblings
	"yaml_tab":    "not YAML", // a tab in the indentation
	// YAML indentation and the other mistakes the line hints explain
	"yaml_indent_under_value": "not YAML", "yaml_indent_between": "not YAML",
	"yaml_indent_dash_column": "not YAML", "yaml_indent_item_among_keys": "not YAML",
	"yaml_list_on_key_line": "not YAML", "yaml_missing_space": "not YAML",
	"yaml_colon_in_value": "not YAML", "yaml_value_over_lines": "not YAML",
	"yaml_reserved_character": "not YAML",
}

func compileJSONSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	f, err := os.Open("kvwatch.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("kvwatch.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("kvwatch.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// yamlToJSONValue decodes YAML into the value a JSON document with the same
// content would decode to.
func yamlToJSONValue(src []byte) (any, error) {
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// TestJSONSchemaAgainstCompatPairs checks that the JSON Schema accepts
// both schemas of every pair of kvwatchgen -compat's corpus: they load,
// and use revision: and compat: accept:.
func TestJSONSchemaAgainstCompatPairs(t *testing.T) {
	s := compileJSONSchema(t)
	files, err := filepath.Glob("../golden/compat/*/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no compat pairs: %v", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		v, err := yamlToJSONValue(src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if err := s.Validate(v); err != nil {
			t.Errorf("%s: the JSON Schema rejects it: %v", f, err)
		}
	}
}

func TestJSONSchemaAgainstGoldens(t *testing.T) {
	s := compileJSONSchema(t)
	cases, err := os.ReadDir("../golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.Name() == "compat" {
			continue // TestJSONSchemaAgainstCompatPairs
		}
		verdict, ok := shapeVerdicts[c.Name()]
		if !ok {
			t.Errorf("golden case %s has no JSON Schema verdict in shapeVerdicts: add one", c.Name())
			continue
		}
		src, err := os.ReadFile(filepath.Join("../golden", c.Name(), "kvwatch.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		v, err := yamlToJSONValue(src)
		if verdict == "not YAML" {
			if err == nil {
				t.Errorf("%s: parsed as YAML, want a syntax error", c.Name())
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.Name(), err)
			continue
		}
		err = s.Validate(v)
		switch verdict {
		case "valid", "valid-shape":
			if err != nil {
				t.Errorf("%s: the JSON Schema rejects it: %v", c.Name(), err)
			}
		case "invalid":
			if err == nil {
				t.Errorf("%s: the JSON Schema accepts it, want a shape error", c.Name())
			}
		}
	}
}

// One bucket setting at a time: kvwatchgen reads it into the model or
// reports it with its position, and the JSON Schema agrees on its shape
// (shapeOK: what an editor accepts; a duration's lower bound, say, only
// kvwatchgen checks).
func TestBucketConfigSettings(t *testing.T) {
	s := compileJSONSchema(t)
	cases := []struct {
		setting string // "key: value" under config:
		want    schema.BucketConfig
		err     string // kvwatchgen's message, at line 7
		shapeOK bool
	}{
		{setting: "history: 64", want: schema.BucketConfig{History: 64}, shapeOK: true},
		{setting: "history: 0x10", want: schema.BucketConfig{History: 16}, shapeOK: true},
		{setting: "history: 65", err: "7:16: history must be between 1 and 64 (values kept per key), not 65"},
		{setting: "history: 0", err: "7:16: history must be between 1 and 64 (values kept per key), not 0"},
		{setting: `history: "5"`, err: `7:16: history must be a whole number (values kept per key), not the string "5"`},
		{setting: "history: 2.5", err: "7:16: history must be a whole number (values kept per key), not the number 2.5"},
		{setting: "ttl: 24h", want: schema.BucketConfig{TTL: 24 * time.Hour}, shapeOK: true},
		{setting: "ttl: 1h30m", want: schema.BucketConfig{TTL: 90 * time.Minute}, shapeOK: true},
		{setting: "ttl: 100ms", want: schema.BucketConfig{TTL: 100 * time.Millisecond}, shapeOK: true},
		{setting: "ttl: 99ms", err: "7:12: ttl must be at least 100ms (the server's shortest max age), not 99ms", shapeOK: true},
		{setting: "ttl: 30", err: `7:12: ttl must be a duration with a unit, such as "30s" or "24h", not the number 30`},
		{setting: "ttl: 1 day", err: `7:12: ttl must be a duration such as "30s" or "24h", not "1 day"`},
		{setting: "ttl: -1s", err: "7:12: ttl must be at least 100ms (the server's shortest max age), not -1s"},
		{setting: "max_value_size: 2147483647", want: schema.BucketConfig{MaxValueSize: 2147483647}, shapeOK: true},
		{setting: "max_value_size: 2147483648", err: "7:23: max_value_size must be between 1 and 2147483647 (bytes), not 2147483648"},
		{setting: "max_bytes: 1073741824", want: schema.BucketConfig{MaxBytes: 1 << 30}, shapeOK: true},
		{setting: "max_bytes: 0", err: "7:18: max_bytes must be at least 1 (bytes), not 0"},
		{setting: "storage: memory", want: schema.BucketConfig{Storage: schema.StorageMemory}, shapeOK: true},
		{setting: "storage: file", want: schema.BucketConfig{Storage: schema.StorageFile}, shapeOK: true},
		{setting: "storage: memroy", err: `7:16: unknown storage "memroy": use file or memory (did you mean "memory"?)`},
		{setting: "replicas: 5", want: schema.BucketConfig{Replicas: 5}, shapeOK: true},
		{setting: "replicas: 6", err: "7:17: replicas must be between 1 and 5 (copies of the stream in a cluster), not 6"},
		{setting: "max_consumers: 100000", want: schema.BucketConfig{MaxConsumers: 100000}, shapeOK: true},
		{setting: "max_consumers: -1", err: "7:22: max_consumers must be at least 1 (consumers of the stream: one per watcher), not -1"},
		{setting: "limit_marker_ttl: 1s", want: schema.BucketConfig{LimitMarkerTTL: time.Second}, shapeOK: true},
		{setting: "atomic_batches: true", want: schema.BucketConfig{AtomicBatches: true}, shapeOK: true},
		{setting: "atomic_batches: yes please", err: "7:23: atomic_batches must be true or false, not the string \"yes please\"", shapeOK: false},
		{setting: "limit_marker_ttl: 999ms", err: "7:25: limit_marker_ttl must be at least 1s (the server's shortest delete-marker TTL), not 999ms", shapeOK: true},
		{setting: "description: Routes of a VPC.", want: schema.BucketConfig{Description: "Routes of a VPC."}, shapeOK: true},
		{setting: "description: [a]", err: "7:20: description must be a single value, not a list"},
		{setting: "histroy: 5", err: `7:7: unknown field "histroy" in the config of bucket b (did you mean "history"?)`},
		{setting: "compression: true", err: `7:7: unknown field "compression" in the config of bucket b`},
	}
	for _, tc := range cases {
		src := fmt.Sprintf("version: 1\npackage: p\nbuckets:\n  - bucket: b\n    keys: [{name: K, key: k, value: string}]\n    config:\n      %s\n", tc.setting)
		got, err := schema.Load("f.yaml", []byte(src))
		switch {
		case tc.err != "":
			if want := "f.yaml:" + tc.err; err == nil || err.Error() != want {
				t.Errorf("%s: error %v, want %s", tc.setting, err, want)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.setting, err)
		default:
			c := *got.Buckets[0].Config
			c.Pos, c.SettingPos = schema.Pos{}, nil
			if !reflect.DeepEqual(c, tc.want) {
				t.Errorf("%s: config %+v, want %+v", tc.setting, c, tc.want)
			}
		}
		v, err := yamlToJSONValue([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if shapeErr := s.Validate(v); (shapeErr == nil) != (tc.err == "" || tc.shapeOK) {
			t.Errorf("%s: the JSON Schema says %v; kvwatchgen says %q", tc.setting, shapeErr, tc.err)
		}
	}
}

// Every problem of a config is reported, not the first only.
func TestBucketConfigErrorsAllAtOnce(t *testing.T) {
	src := "version: 1\npackage: p\nbuckets:\n  - bucket: b\n    keys: [{name: K, key: k, value: string}]\n" +
		"    config: {history: 0, ttl: 1, storage: disk, replicas: 9, extra: 1}\n"
	_, err := schema.Load("f.yaml", []byte(src))
	var list schema.ErrorList
	if !errors.As(err, &list) || len(list) != 5 {
		t.Fatalf("got %v, want 5 errors", err)
	}
}

// Editors show a JSON Schema's messages and descriptions (the YAML
// language server reads patternErrorMessage, errorMessage and
// markdownDescription; editor_test.go runs it). Every pattern has a readable
// message, so that no editor shows a raw regular expression, and every
// main field a markdownDescription with its syntax and an example.
func TestJSONSchemaEditorText(t *testing.T) {
	src, err := os.ReadFile("kvwatch.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(src, &root); err != nil {
		t.Fatal(err)
	}
	patterns := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if p, ok := v["pattern"].(string); ok {
				patterns++
				msg, _ := v["patternErrorMessage"].(string)
				switch {
				case msg == "":
					t.Errorf("%s: pattern %s has no patternErrorMessage", path, p)
				case strings.Contains(msg, p) || strings.Contains(msg, "^"):
					t.Errorf("%s: patternErrorMessage shows the pattern: %s", path, msg)
				}
			}
			for k, c := range v {
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range v {
				walk(fmt.Sprintf("%s/%d", path, i), c)
			}
		}
	}
	walk("#", root)
	if patterns < 6 {
		t.Errorf("%d patterns in kvwatch.schema.json, want at least 6 (package, names, bucket, template, type, duration)", patterns)
	}
	for _, path := range []string{
		"properties/version", "properties/package", "properties/buckets", "properties/types",
		"$defs/bucket/properties/bucket", "$defs/bucket/properties/name", "$defs/bucket/properties/keys",
		"$defs/bucket/properties/scopes", "$defs/bucket/properties/config",
		"$defs/key/properties/name", "$defs/key/properties/key", "$defs/key/properties/value", "$defs/key/properties/codec",
		"$defs/scope/properties/name", "$defs/scope/properties/prefix",
		"$defs/type/properties/fields",
		"$defs/bucketConfig/properties/history", "$defs/bucketConfig/properties/ttl",
		"$defs/bucketConfig/properties/max_value_size", "$defs/bucketConfig/properties/max_bytes",
		"$defs/bucketConfig/properties/storage", "$defs/bucketConfig/properties/replicas",
		"$defs/bucketConfig/properties/max_consumers", "$defs/bucketConfig/properties/limit_marker_ttl",
		"$defs/bucketConfig/properties/atomic_batches", "$defs/bucketConfig/properties/description",
	} {
		var v any = root
		for _, k := range strings.Split(path, "/") {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		m, _ := v.(map[string]any)
		if m == nil {
			t.Errorf("%s: not in kvwatch.schema.json", path)
			continue
		}
		md, _ := m["markdownDescription"].(string)
		if md == "" {
			t.Errorf("%s: no markdownDescription", path)
		} else if !strings.Contains(md, "`") {
			t.Errorf("%s: markdownDescription has no example in code: %q", path, md)
		}
		if d, _ := m["description"].(string); d == "" {
			t.Errorf("%s: no description (editors that do not read markdownDescription show it)", path)
		}
	}
}
