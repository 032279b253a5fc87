package schema

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestCamelCase(t *testing.T) {
	for in, want := range map[string]string{
		"vpc": "VPC", "route_id": "RouteID", "next_hop": "NextHop", "vpcID": "VPCID", "node-state": "NodeState",
		"http_url": "HTTPURL", "type": "Type", "x": "X", "already_Camel": "AlreadyCamel", "ip4": "Ip4", "lag_ms": "LagMs",
	} {
		if got := camelCase(in); got != want {
			t.Errorf("camelCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"valeu", "value", 1}, {"prefx", "prefix", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"same", "same", 0}} {
		if got := editDistance(c.a, c.b); got != c.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if got := closest("codex", []string{"codec", "doc"}); got != "codec" {
		t.Errorf("closest = %q", got)
	}
	if got := suggest("codec"); got != ` (did you mean "codec"?)` {
		t.Errorf("suggest = %q", got)
	}
	if got := closest("vpc", []string{"codec", "value"}); got != "" {
		t.Errorf("closest suggested %q for a word close to nothing", got)
	}
	if got := suggest(""); got != "" {
		t.Errorf("suggest without a candidate = %q", got)
	}
}

func TestCanonicalInt(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "7": true, "-7": true, "007": false, "-0": false, "+1": false, "": false, "-": false,
		"9223372036854775807": true, "9223372036854775808": false, "-9223372036854775808": true, "1x": false,
	} {
		if got := canonicalInt(s, true); got != want {
			t.Errorf("canonicalInt(%q, signed) = %v, want %v", s, got, want)
		}
	}
	for s, want := range map[string]bool{"-1": false, "18446744073709551615": true, "18446744073709551616": false} {
		if got := canonicalInt(s, false); got != want {
			t.Errorf("canonicalInt(%q, unsigned) = %v, want %v", s, got, want)
		}
	}
}

// Bucket file names are never skipped, refused or constrained to one
// platform by Go tools: no '_' (a GOOS or GOARCH suffix, or an ignored
// file), no leading '-'.
func TestFileStems(t *testing.T) {
	for bucket, want := range map[string]string{
		"network": "network", "Net": "net", "_hidden": "hidden", "-dash": "dash", "__x": "x",
		"edge_windows": "edge-windows", "x_amd64": "x-amd64", "x_linux_arm64": "x-linux-arm64",
		"a-b_c": "a-b-c", "_": "bucket", "-_-": "bucket",
	} {
		if got := fileStem(bucket); got != want {
			t.Errorf("fileStem(%q) = %q, want %q", bucket, got, want)
		}
	}
	s, err := Load("kvwatch.yaml", []byte(`version: 1
package: p
buckets:
  - bucket: _hidden
    keys: [{name: A, key: a, value: string, codec: string}]
  - bucket: edge_windows
    keys: [{name: B, key: b, value: string, codec: string}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{s.Buckets[0].Names.File, s.Buckets[1].Names.File}; got[0] != "hidden.kvwatch.go" || got[1] != "edge-windows.kvwatch.go" {
		t.Errorf("file names %q", got)
	}
	// Two buckets whose names differ only in '_' and '-' would write one
	// file: reported.
	_, err = Load("kvwatch.yaml", []byte(`version: 1
package: p
buckets:
  - bucket: a_b
    name: AB
    keys: [{name: A, key: a, value: string, codec: string}]
  - bucket: a-b
    name: AB2
    keys: [{name: B, key: b, value: string, codec: string}]
`))
	if err == nil || !strings.Contains(err.Error(), "both produce the file a-b.kvwatch.go") {
		t.Errorf("buckets a_b and a-b: got %v, want a file collision", err)
	}
}

// External packages are imported under names the generated code does not
// declare or import otherwise, deterministically (in path order), with the
// standard library's own names written bare.
func TestImportNames(t *testing.T) {
	s, err := Load("kvwatch.yaml", []byte(`version: 1
package: p
buckets:
  - bucket: b
    keys:
      - {name: A, key: a, value: "[]example.com/x/v.T"}
      - {name: B, key: b, value: example.com/y/v.T}
      - {name: C, key: c, value: example.com/cp.T}
      - {name: D, key: d, value: net/netip.Addr}
      - {name: E, key: e, value: time.Duration}
      - {name: F, key: f, value: example.com/yaml/v3.T}
      - {name: G, key: g, value: example.com/kv.T}
      - {name: H, key: h, value: example.com/Go-Any.T}
      - {name: I, key: i, value: example.com/jetstream.T}
      - {name: J, key: j, value: math/rand/v2.T}
      - {name: K, key: k, value: example.com/x/v2pkg.T}
      - {name: L, key: l, value: example.com/9.T}
`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, im := range s.Imports {
		got = append(got, fmt.Sprintf("%s=%s,%v", im.Path, im.Name, im.Explicit))
	}
	want := []string{
		"example.com/9=pkg,true",
		"example.com/Go-Any=goany,true",
		"example.com/cp=cppkg,true",
		"example.com/jetstream=jetstreampkg,true",
		"example.com/kv=kvpkg,true",
		"example.com/x/v=vpkg,true",
		"example.com/x/v2pkg=v2pkg,true",
		"example.com/y/v=vpkg2,true",
		"example.com/yaml/v3=yaml,true",
		"math/rand/v2=rand,false",
		"net/netip=netip,false",
		"time=time,false",
	}
	if !slices.Equal(got, want) {
		t.Errorf("imports:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, im := range s.Imports {
		if IsLocalName(im.Name) {
			t.Errorf("%s is imported as %s, a name generated code declares", im.Path, im.Name)
		}
	}
}

// A type's NeedsClone is found once per type: a chain of 60 types, each
// holding the next twice, would take 2^60 steps to walk naively when it
// ends in a plain value.
func TestNeedsCloneDeepChain(t *testing.T) {
	for _, last := range []string{"string", `"[]string"`} {
		var src strings.Builder
		src.WriteString("version: 1\npackage: p\nbuckets:\n  - bucket: b\n    keys: [{name: A, key: a, value: T0}]\ntypes:\n")
		const n = 60
		for i := range n {
			fmt.Fprintf(&src, "  T%d:\n    fields:\n      a: T%d\n      b: T%d\n", i, i+1, i+1)
		}
		fmt.Fprintf(&src, "  T%d:\n    fields:\n      x: %s\n", n, last)
		s, err := Load("kvwatch.yaml", []byte(src.String()))
		if err != nil {
			t.Fatal(err)
		}
		want := last != "string"
		for _, typ := range s.Types {
			if typ.NeedsClone != want {
				t.Errorf("last field %s: %s.NeedsClone = %v", last, typ.Name, typ.NeedsClone)
			}
		}
	}
}
