package compat

import (
	"fmt"

	"github.com/kvwatchgen/kvwatchgen/internal/duration"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file compares the buckets of two schemas (matched by bucket name)
// and their kinds (matched by Go name; a kind gone under one name and
// come under another with the same keys is renamed).

// buckets compares every bucket.
func (c *comparison) buckets() {
	for _, nb := range c.new.Buckets {
		ob := findBucket(c.old, nb.Name)
		if ob == nil {
			c.add(c.inNew(nb.Pos), GoAPI, Safe, "bucket-added", nb.Name, "bucket %s added", nb.Name)
			continue
		}
		c.bucket(ob, nb)
	}
	for _, ob := range c.old.Buckets {
		if findBucket(c.new, ob.Name) == nil {
			c.add(c.inOld(ob.Pos), GoAPI, Breaking, "bucket-removed", ob.Name,
				"bucket %s removed: code using %s, %s or %s no longer compiles", ob.Name, ob.Names.Watch, ob.Names.Client, ob.Names.Scopes)
		}
	}
}

func findBucket(s *schema.Schema, name string) *schema.Bucket {
	for _, b := range s.Buckets {
		if b.Name == name {
			return b
		}
	}
	return nil
}

func findKind(b *schema.Bucket, name string) *schema.Kind {
	for _, k := range b.Kinds {
		if k.GoName == name {
			return k
		}
	}
	return nil
}

// bucket compares one bucket's Go name, kinds, scopes and config.
func (c *comparison) bucket(ob, nb *schema.Bucket) {
	if ob.GoName != nb.GoName {
		c.add(c.inNew(nb.Pos), GoAPI, Breaking, "bucket-name", nb.Name,
			"bucket %s's Go name changed from %s to %s: code using %s or %s no longer compiles", nb.Name, ob.GoName, nb.GoName, ob.Names.Watch, ob.Names.Client)
	}
	keeps := keepsOld(ob)
	// Pair the kinds: by name, then the renamed ones by their keys.
	pairOf := map[*schema.Kind]*schema.Kind{} // new kind -> old kind
	paired := map[*schema.Kind]bool{}         // old kinds paired
	for _, nk := range nb.Kinds {
		if ok := findKind(ob, nk.GoName); ok != nil {
			pairOf[nk], paired[ok] = ok, true
		}
	}
	for _, nk := range nb.Kinds {
		if pairOf[nk] != nil {
			continue
		}
		for _, ok := range ob.Kinds {
			if !paired[ok] && findKind(nb, ok.GoName) == nil && templateReads(nk.Template, ok.Template) && templateReads(ok.Template, nk.Template) {
				pairOf[nk], paired[ok] = ok, true
				c.add(c.inNew(nk.Pos), GoAPI, Breaking, "kind-renamed", ok.GoName,
					"kind %s renamed %s (same keys): code using %s, %s or %s no longer compiles", ok.GoName, nk.GoName, ok.Names.Key, ok.Names.Event, ok.Names.Put)
				break
			}
		}
	}
	for _, nk := range nb.Kinds {
		if ok := pairOf[nk]; ok != nil {
			c.kind(ob, nb, ok, nk, keeps)
		}
	}
	c.crossKinds(ob, nb, pairOf)
	for _, nk := range nb.Kinds {
		if pairOf[nk] == nil && !meetsAny(nk, ob.Kinds) {
			c.add(c.inNew(nk.Pos), OldReaders, Notice, "kind-added", nk.GoName,
				"kind %s added: old watchers whose scopes hold its keys (such as %s) skip them, each key reported once (UnknownKeyError) and every write counted (Stats().UnknownKeys)",
				nk.GoName, unreadKey(nk.Template, nk.Template))
		}
	}
	for _, ok := range ob.Kinds {
		if paired[ok] {
			continue
		}
		c.add(c.inOld(ok.Pos), GoAPI, Breaking, "kind-removed", ok.GoName,
			"kind %s removed: code using %s, %s, %s or %s no longer compiles", ok.GoName, ok.Names.Key, ok.Names.Event, ok.Names.Cache, ok.Names.Put)
		if !meetsAny(ok, nb.Kinds) {
			c.add(c.inOld(ok.Pos), NewReaders, Notice, "kind-removed", ok.GoName,
				"kind %s removed: new watchers skip the keys old writers still write and the bucket holds (such as %s), each key reported once (UnknownKeyError) and every write counted (Stats().UnknownKeys); %s",
				ok.GoName, unreadKey(ok.Template, ok.Template), keeps)
		}
	}
	c.scopes(ob, nb)
	c.config(ob, nb)
}

// meetsAny reports whether some key of k has the shape of a template of
// kinds (the runtime then gives it to that kind).
func meetsAny(k *schema.Kind, kinds []*schema.Kind) bool {
	for _, o := range kinds {
		if shapesMeet(k.Template, o.Template) {
			return true
		}
	}
	return false
}

// kind compares a kind of bucket nb with its old self of ob.
func (c *comparison) kind(ob, nb *schema.Bucket, ok, nk *schema.Kind, keeps string) {
	where := c.inNew(nk.Pos)
	switch {
	case ok.Codec != nk.Codec && rawCodec(ok.Codec) && rawCodec(nk.Codec):
		c.add(where, NewReaders, Safe, "codec", nk.GoName,
			"codec of %s changed from %s to %s: both store the value's bytes as they are", nk.GoName, ok.Codec, nk.Codec)
	case ok.Codec != nk.Codec:
		c.add(where, OldReaders, Breaking, "codec", nk.GoName,
			"codec of %s changed from %s to %s: old watchers reading what new writers write: %s", nk.GoName, ok.Codec, nk.Codec, codecEffect(ok.Codec))
		c.add(where, NewReaders, Breaking, "codec", nk.GoName,
			"codec of %s changed from %s to %s: new watchers reading old values: %s; %s", nk.GoName, ok.Codec, nk.Codec, codecEffect(nk.Codec), keeps)
	case nk.Codec == schema.CodecJSON:
		c.walkValues(ok.Value, nk.Value, "value-type", nk.GoName, "the value of "+nk.GoName, where, keeps)
	case !sameType(ok.Value, nk.Value):
		c.add(where, OldReaders, Breaking, "value-type", nk.GoName,
			"the value of %s changed from %s to %s under codec %s: old watchers cannot be shown to decode what new writers write", nk.GoName, ok.Value, nk.Value, nk.Codec)
		c.add(where, NewReaders, Breaking, "value-type", nk.GoName,
			"the value of %s changed from %s to %s under codec %s: new watchers cannot be shown to decode old values; %s", nk.GoName, ok.Value, nk.Value, nk.Codec, keeps)
	}
	if goType(ok.Value) != goType(nk.Value) {
		c.add(where, GoAPI, Breaking, "value-type", nk.GoName,
			"the value of %s changed from %s to %s: code using %s's values no longer compiles", nk.GoName, goType(ok.Value), goType(nk.Value), nk.GoName)
	}
	c.keys(ob, nb, ok, nk, keeps)
	c.indexes(ok, nk)
}

// codecEffect says what a reader of codec r does with the bytes of
// another codec: string and bytes take any bytes as they are (the other
// codec's encoding becomes the value), json and the others decode them and
// fail where they are not their encoding.
func codecEffect(r schema.Codec) string {
	if rawCodec(r) {
		return "they hold the other codec's encoding itself (JSON text, say) as the value: another value"
	}
	return "values not in its encoding fail to decode (DataError)"
}

// rawCodec reports whether a codec stores a value's bytes as they are:
// string and bytes write the same bytes for the same value.
func rawCodec(codec schema.Codec) bool {
	return codec == schema.CodecString || codec == schema.CodecBytes
}

// keys compares a kind's key template with its old one. Which watchers
// report the keys they cannot read depends on their scopes (reach).
func (c *comparison) keys(ob, nb *schema.Bucket, ok, nk *schema.Kind, keeps string) {
	where := c.inNew(nk.Template.Pos)
	oldReaders, newReaders := templateReads(nk.Template, ok.Template), templateReads(ok.Template, nk.Template)
	if !oldReaders {
		see, miss := reach("old", ob, nk.Template, ok.Template)
		c.add(where, OldReaders, Breaking, "key-template", nk.GoName,
			"key template of %s changed from %s to %s: %s %s keys new writers write, such as %s (%s)%s",
			nk.GoName, ok.Template.Raw, nk.Template.Raw, see, keyEffect(nk.Template, ok.Template), unreadKey(nk.Template, ok.Template), keyError(nk.Template, ok.Template), miss)
	}
	if !newReaders {
		see, miss := reach("new", nb, ok.Template, nk.Template)
		c.add(where, NewReaders, Breaking, "key-template", nk.GoName,
			"key template of %s changed from %s to %s: %s %s keys old writers wrote, such as %s (%s)%s; %s",
			nk.GoName, ok.Template.Raw, nk.Template.Raw, see, keyEffect(ok.Template, nk.Template), unreadKey(ok.Template, nk.Template), keyError(ok.Template, nk.Template), miss, keeps)
	}
	if oldReaders && newReaders && ok.Template.Raw != nk.Template.Raw && keyFields(ok.Template) == keyFields(nk.Template) {
		c.add(where, NewReaders, Safe, "key-template", nk.GoName,
			"key template of %s changed from %s to %s: the same keys", nk.GoName, ok.Template.Raw, nk.Template.Raw)
	}
	switch of, nf := keyFields(ok.Template), keyFields(nk.Template); {
	case len(lostKeyFields(ok.Template, nk.Template)) > 0:
		c.add(where, GoAPI, Breaking, "key-fields", nk.GoName,
			"%s's fields changed from %s to %s: code using them no longer compiles", nk.Names.Key, of, nf)
	case of != nf:
		c.add(where, GoAPI, Safe, "key-fields", nk.GoName,
			"%s's fields changed from %s to %s: fields added only (unkeyed literals of it no longer compile)", nk.Names.Key, of, nf)
	}
}

// keyEffect says what a reader of template r does with the keys a writer
// of w writes that it does not read, and keyError the error it reports:
// keys of r's shape reach r's parser, which refuses a parameter; others
// match no kind.
func keyEffect(w, r *schema.Template) string {
	if shapeReads(w, r) {
		return "fail to parse"
	}
	return "do not read"
}

func keyError(w, r *schema.Template) string {
	if shapeReads(w, r) {
		return "DataError: a parameter does not parse"
	}
	return "UnknownKeyError"
}

// crossKinds reports keys one version reads as another kind than the
// other version writes them as: a new kind whose keys old code parses as
// an old kind of another name, and the reverse.
func (c *comparison) crossKinds(ob, nb *schema.Bucket, pairOf map[*schema.Kind]*schema.Kind) {
	for _, nk := range nb.Kinds {
		for _, ok := range ob.Kinds {
			if pairOf[nk] == ok || !shapesMeet(nk.Template, ok.Template) {
				continue
			}
			where, subject, key := c.inNew(nk.Template.Pos), nk.GoName+"/"+ok.GoName, sharedKey(nk.Template, ok.Template)
			c.add(where, OldReaders, Breaking, "key-overlap", subject,
				"keys of %s such as %s have the shape of %s's to old code: old watchers give them to %s, whose parser refuses them (DataError) or decodes %s values as %s",
				nk.GoName, key, ok.GoName, ok.GoName, nk.GoName, ok.GoName)
			c.add(where, NewReaders, Breaking, "key-overlap", subject,
				"keys of old kind %s such as %s have the shape of %s's to new code: new watchers give them to %s, whose parser refuses them (DataError) or decodes old %s values as %s",
				ok.GoName, key, nk.GoName, nk.GoName, ok.GoName, nk.GoName)
		}
	}
}

// indexes reports the indexes a kind's cache lost.
func (c *comparison) indexes(ok, nk *schema.Kind) {
	for _, oi := range ok.Indexes {
		found := false
		for _, ni := range nk.Indexes {
			found = found || ni.Name == oi.Name && goType(ni.Field.Type) == goType(oi.Field.Type)
		}
		if !found {
			c.add(c.inOld(oi.Pos), GoAPI, Breaking, "index", nk.GoName+"."+oi.Name,
				"index %s of %s removed or changed: code calling %s().%s no longer compiles", oi.Name, nk.GoName, nk.Names.Cache, oi.Name)
		}
	}
}

// keepsOld says how long the bucket holds values old writers wrote, for
// the messages about new readers.
func keepsOld(b *schema.Bucket) string {
	history, ttl := 1, ""
	if b.Config != nil {
		history = max(b.Config.History, 1)
		if b.Config.TTL > 0 {
			ttl = duration.Format(b.Config.TTL)
		}
	}
	s := "the bucket keeps old values until they are overwritten"
	if ttl != "" {
		s = fmt.Sprintf("the bucket keeps old values until overwritten or for its ttl of %s", ttl)
	}
	if history > 1 {
		s += fmt.Sprintf(", and %d revisions of each key for History()", history)
	}
	return s
}
