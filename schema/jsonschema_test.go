package schema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
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
	"json_values": "valid",

	"bad_recovery": "invalid", // a bucket without bucket:, lower-case names

	"bad_codecs": "invalid", "bad_fields": "invalid", "bad_header": "invalid", "bad_names": "invalid",
	"bad_templates": "invalid", "bad_types": "invalid", "empty_file": "invalid", "missing_top_level": "invalid",
	"wrong_shapes": "invalid",

	"bad_scopes":      "invalid",  // scope name "lower" is not an exported name
	"duplicates":      "not YAML", // duplicate mapping keys: YAML decoders reject them too
	"name_collisions": "valid-shape", "overlapping_templates": "valid-shape",
	"scope_param_conflict": "valid-shape",

	"yaml_syntax": "not YAML",
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

func TestJSONSchemaAgainstGoldens(t *testing.T) {
	s := compileJSONSchema(t)
	cases, err := os.ReadDir("../golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
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
