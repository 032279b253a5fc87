// Package benchschema builds large schemas for the generator benchmarks
// (gen's go test -bench and the bench command's generator scenario).
package benchschema

import (
	"fmt"
	"strings"
)

// Large returns a schema of buckets × kinds: each kind with two key
// parameters (one typed) and a struct value, each bucket with two scopes,
// five shared value types.
func Large(buckets, kinds int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\npackage: large\nbuckets:\n")
	for i := range buckets {
		fmt.Fprintf(&b, "  - bucket: bucket%d\n    keys:\n", i)
		for k := range kinds {
			fmt.Fprintf(&b, "      - name: B%dKind%d\n        key: tenant.{tenant}.k%d.{id:uint}\n        value: Value%d\n", i, k, k, k%5)
		}
		b.WriteString("    scopes:\n      - name: Tenant\n        prefix: tenant.{tenant}\n")
		b.WriteString("      - name: First\n        prefix: tenant.{tenant}.k0.{id}\n")
	}
	b.WriteString("types:\n")
	for v := range 5 {
		fmt.Fprintf(&b, "  Value%d:\n    fields:\n      name: string\n      count: int\n      tags: \"[]string\"\n      at: time\n", v)
	}
	return []byte(b.String())
}
