package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Fingerprint identifies what a bucket's part of the schema means to the
// data and the code: the bucket's name, its kinds (name, key template,
// codec, value type with every struct type spelled out field by field),
// its scopes and its config, in the order written. Docs, indexes and the
// order of the types section do not change it. It is the first 16 hex
// digits of a SHA-256 of that description: CreateOrUpdate records it in
// the bucket's stream metadata and every watcher carries its own, so that
// an operator sees which nodes run code of another schema.
func (b *Bucket) Fingerprint() string {
	var s strings.Builder
	fmt.Fprintf(&s, "bucket %s\n", b.Name)
	for _, k := range b.Kinds {
		fmt.Fprintf(&s, "kind %s %s %s ", k.GoName, k.Template.Raw, k.Codec)
		writeTypeDescription(&s, k.Value, map[*Type]bool{})
		s.WriteString("\n")
	}
	for _, sc := range b.Scopes {
		fmt.Fprintf(&s, "scope %s %s\n", sc.GoName, sc.Prefix.Raw)
	}
	if c := b.Config; c != nil {
		fmt.Fprintf(&s, "config %d %d %d %d %q %d %d %d %t %q\n", c.History, c.TTL, c.MaxValueSize, c.MaxBytes,
			c.Storage, c.Replicas, c.MaxConsumers, c.LimitMarkerTTL, c.AtomicBatches, c.Description)
	}
	sum := sha256.Sum256([]byte(s.String()))
	return hex.EncodeToString(sum[:8])
}

// writeTypeDescription spells t out: a struct type by its name and its
// fields, once (a type met again, through a slice or map of itself, by
// its name alone).
func writeTypeDescription(s *strings.Builder, t *TypeRef, seen map[*Type]bool) {
	switch t.Kind {
	case TypeSlice:
		s.WriteString("[]")
		writeTypeDescription(s, t.Elem, seen)
	case TypeMap:
		s.WriteString("map[string]")
		writeTypeDescription(s, t.Elem, seen)
	case TypeNamed:
		s.WriteString(t.Named.Name)
		if seen[t.Named] {
			return
		}
		seen[t.Named] = true
		s.WriteString("{")
		for i, f := range t.Named.Fields {
			if i > 0 {
				s.WriteString(";")
			}
			fmt.Fprintf(s, "%q:", f.JSONName)
			writeTypeDescription(s, f.Type, seen)
		}
		s.WriteString("}")
	default:
		s.WriteString(typeString(t))
	}
}
