// Package interp reads a bucket's keys and values through a schema at run
// time, with no generated code: which kind a key is, its parameters, and
// its value decoded as the generated code decodes it (values.go). The
// live-bucket subcommands (internal/live) use it; the generator never
// loads it.
package interp

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kvwatchgen/kvwatchgen/internal/keys"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// Bucket is a schema's bucket, ready to read entries with. It is
// immutable once made and safe for concurrent use.
type Bucket struct {
	Schema *schema.Bucket
	Kinds  []*Kind // in the schema's order
}

// Kind is one kind of entry of a Bucket.
type Kind struct {
	Schema   *schema.Kind
	Template *kvwatchimpl.Template
	value    *jsonType // nil unless the codec is json
}

// Param is one parameter of a key: its name and its token.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// NewBucket prepares b, a bucket of a schema of package pkg, for reading.
// pkg names the generated types in decoding errors, as the generated
// code's errors do.
func NewBucket(pkg string, b *schema.Bucket) (*Bucket, error) {
	out := &Bucket{Schema: b}
	for _, k := range b.Kinds {
		t, err := kvwatchimpl.CompileTemplate(k.Template.Raw)
		if err != nil {
			return nil, fmt.Errorf("kind %s: %w", k.GoName, err)
		}
		kind := &Kind{Schema: k, Template: t}
		if k.Codec == schema.CodecJSON {
			if kind.value, err = newJSONType(pkg, k.Value); err != nil {
				return nil, fmt.Errorf("kind %s: %w", k.GoName, err)
			}
		}
		out.Kinds = append(out.Kinds, kind)
	}
	return out, nil
}

// Name is the kind's Go name.
func (k *Kind) Name() string { return k.Schema.GoName }

// Classify returns the kind whose template key has the shape of, and the
// key's parameters; nil and no error when it matches no template. The
// error, as the generated parser's (*kvwatch.ParamError), says why a key
// of a kind's shape does not parse: a typed parameter that is not a
// canonical decimal.
func (b *Bucket) Classify(key string) (*Kind, []Param, error) {
	for _, k := range b.Kinds {
		if !k.Template.Match(key) {
			continue
		}
		params, err := k.ParseKey(key)
		return k, params, err
	}
	return nil, nil, nil
}

// ParseKey parses key as the kind's generated parser does: the
// *kvwatch.KeyMismatchError or *kvwatch.ParamError it returns.
func (k *Kind) ParseKey(key string) ([]Param, error) {
	names := k.Template.Params()
	values := make([]string, len(names))
	if err := k.Template.Split(key, values); err != nil {
		return nil, err
	}
	params := make([]Param, len(names))
	for i, name := range names {
		params[i] = Param{Name: name, Value: values[i]}
	}
	for _, p := range k.Schema.Template.Params {
		i := slices.Index(names, p.Name)
		var err error
		switch p.Type {
		case schema.ParamInt:
			_, err = keys.ParseInt(values[i])
		case schema.ParamUint:
			_, err = keys.ParseUint(values[i])
		}
		if err != nil {
			return nil, &kvwatch.ParamError{Key: key, Param: p.Name, Err: err}
		}
	}
	return params, nil
}

// Coverage says how completely Decode checks the kind's values.
func (k *Kind) Coverage() Coverage {
	switch {
	case k.value != nil && len(k.value.unknown) > 0:
		return JSONOnly
	case (k.Schema.Codec == schema.CodecText || k.Schema.Codec == schema.CodecBinary) && k.Schema.Value.Kind == schema.TypeExternal:
		return Unchecked
	}
	return Full
}

// Unknown names the external types whose values the kind checks as JSON
// only (JSONOnly), or the one it does not check (Unchecked).
func (k *Kind) Unknown() []string {
	if k.value != nil {
		return k.value.unknown
	}
	if k.Coverage() == Unchecked {
		return []string{k.Schema.Value.String()}
	}
	return nil
}

// Decode decodes a value as the kind's generated codec does, with its
// error. The value is what json.Marshal writes as the generated value's
// JSON: a struct built at run time, a string (codec string), []byte
// (bytes), time.Time (time with text or binary). A value of an unchecked
// external type is returned as a Raw.
func (k *Kind) Decode(data []byte) (any, error) {
	switch k.Schema.Codec {
	case schema.CodecJSON:
		return k.value.decode(data)
	case schema.CodecString:
		return string(data), nil
	case schema.CodecBytes:
		return slices.Clone(data), nil
	}
	if k.Schema.Value.Kind != schema.TypeBuiltin { // external: not checked
		return Raw(slices.Clone(data)), nil
	}
	var t time.Time // the one builtin text and binary take
	if k.Schema.Codec == schema.CodecText {
		if err := t.UnmarshalText(data); err != nil {
			return nil, fmt.Errorf("text: %w", err)
		}
		return t, nil
	}
	if err := t.UnmarshalBinary(data); err != nil {
		return nil, fmt.Errorf("binary: %w", err)
	}
	return t, nil
}

// Raw is a value the command cannot decode (an external type with codec
// text or binary): its JSON is the bytes as a string when they are UTF-8
// text, and base64 otherwise, as []byte's.
type Raw []byte

// MarshalJSON writes r as a JSON string of its text, or of its base64
// when it is not UTF-8.
func (r Raw) MarshalJSON() ([]byte, error) {
	if utf8.Valid(r) {
		return json.Marshal(string(r))
	}
	return json.Marshal([]byte(r))
}

// Describe writes the kind for messages: "Route (vpc.{vpc}.route.{route_id})".
func (k *Kind) Describe() string {
	return k.Name() + " (" + k.Template.String() + ")"
}

// Scope is a schema scope with its compiled prefix.
type Scope struct {
	Schema *schema.Scope
	Prefix *kvwatchimpl.Template
}

// Scopes returns the bucket's scopes.
func (b *Bucket) Scopes() ([]Scope, error) {
	out := make([]Scope, len(b.Schema.Scopes))
	for i, s := range b.Schema.Scopes {
		t, err := kvwatchimpl.CompileTemplate(s.Prefix.Raw)
		if err != nil {
			return nil, fmt.Errorf("scope %s: %w", s.GoName, err)
		}
		out[i] = Scope{Schema: s, Prefix: t}
	}
	return out, nil
}

// ScopeNames lists the bucket's scope names for messages.
func (b *Bucket) ScopeNames() string {
	names := make([]string, len(b.Schema.Scopes))
	for i, s := range b.Schema.Scopes {
		names[i] = s.GoName + " (" + s.Prefix.Raw + ")"
	}
	return cmp.Or(strings.Join(names, ", "), "none")
}

func sortStrings(s []string) { slices.Sort(s) }
