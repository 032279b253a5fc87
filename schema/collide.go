package schema

import (
	"fmt"
	"strings"
)

// This file names what the generator will produce and checks those names:
// two things of the schema must never produce the same name in one Go
// namespace (the package, or the members of one generated type), or the
// generated code would not compile. The generator takes every name from
// the model, so this file (with imports.go, which names the packages of
// external types) is the single place where names are made.

// producer is what made a name, for the error that reports a collision.
// A fixed producer is a member the generator defines whatever the schema
// says (a key's String method, the handlers' OnSynced).
type producer struct {
	what  string
	pos   Pos
	fixed bool
}

// namespace records names and reports the second producer of a name.
type namespace struct {
	l     *loader
	scope string // "the package", "struct RouteKey", ...
	noun  string // what the names are: "the Go name", "the file" (+s)
	names map[string]producer
}

func (l *loader) namespace(scope string) *namespace {
	return &namespace{l: l, scope: scope, noun: "the Go name", names: map[string]producer{}}
}

func (ns *namespace) add(name, what string, p Pos) {
	if prev, ok := ns.names[name]; ok {
		ns.l.collide(collision{ns: ns, first: prev, second: producer{what: what, pos: p}}, name)
		return
	}
	ns.names[name] = producer{what: what, pos: p}
}

// fixed records a member the generator defines in every such namespace.
// Fixed members are recorded before the schema's names.
func (ns *namespace) fixed(name, what string, p Pos) {
	ns.names[name] = producer{what: what, pos: p, fixed: true}
}

// claim records name for a schema-made member and returns the name to
// emit. A name taken by a fixed member gets "_" appended, as protobuf-go
// does for a field named like a generated method: one rename, and only
// one candidate, so nothing is ambiguous and a schema shared with other
// languages needs no Go-only renames. A name taken by another of the
// schema's names, or whose "_" form is taken too, is a collision: which
// one to rename is the author's choice.
func (ns *namespace) claim(name, what string, p Pos) string {
	if prev, ok := ns.names[name]; ok && prev.fixed {
		if _, taken := ns.names[name+"_"]; !taken {
			ns.names[name+"_"] = producer{what: what, pos: p}
			return name + "_"
		}
	}
	ns.add(name, what, p)
	return name
}

// collision is two producers of one or more names in a namespace.
type collision struct {
	ns            *namespace
	first, second producer
}

// collide records that c produces name twice. Names of one pair are
// reported in one error (two buckets "Net" and "net" collide on a dozen
// names; one line says so).
func (l *loader) collide(c collision, name string) {
	for i := range l.collisions {
		if l.collisions[i].collision == c {
			l.collisions[i].names = append(l.collisions[i].names, name)
			return
		}
	}
	l.collisions = append(l.collisions, collisionNames{c, []string{name}})
}

type collisionNames struct {
	collision
	names []string
}

// reportCollisions turns the recorded collisions into errors.
func (l *loader) reportCollisions() {
	for _, c := range l.collisions {
		noun := c.ns.noun
		if len(c.names) > 1 {
			noun += "s"
		}
		l.add(c.second.pos, "%s and %s (%d:%d) both produce %s %s in %s; rename one",
			c.second.what, c.first.what, c.first.pos.Line, c.first.pos.Col, noun, strings.Join(c.names, ", "), c.ns.scope)
	}
}

// assignNames gives every type, bucket, kind and scope its generated
// names, names the packages of external types, and reports collisions.
func (l *loader) assignNames(s *Schema) {
	pkg := l.namespace("the package")
	for _, t := range s.Types {
		t.Names = TypeNames{Clone: "kvwClone" + t.Name, DecodeJSON: "kvwDecode" + t.Name}
		what := fmt.Sprintf("type %s", t.Name)
		pkg.add(t.Name, what, t.Pos)
		pkg.add(t.Names.Clone, what, t.Pos)
		pkg.add(t.Names.DecodeJSON, what, t.Pos)
	}
	assignImports(s)
	defer l.reportCollisions()
	files := l.namespace("the output folder")
	files.noun = "the file"
	for _, b := range s.Buckets {
		g := b.GoName
		what := fmt.Sprintf("bucket %s", b.Name)
		b.Names = BucketNames{
			Scopes: g + "Scopes", Handlers: g + "Handlers", Watcher: g + "Watcher", Watch: "Watch" + g,
			Client: g + "Bucket", NewClient: "New" + g + "Bucket", OpenClient: "Open" + g + "Bucket", Batch: g + "Batch", Checkpoint: g + "Checkpoint", Spec: "kvw" + g + "Spec",
			CreateOrUpdate: "CreateOrUpdate" + g + "Bucket",
			File:           fileStem(b.Name) + ".kvwatch.go",
		}
		files.add(b.Names.File, what, b.Pos)
		for _, name := range []string{b.Names.Scopes, b.Names.Handlers, b.Names.Watcher, b.Names.Watch, b.Names.Client, b.Names.NewClient, b.Names.OpenClient, b.Names.Batch, b.Names.Checkpoint, b.Names.Spec, b.Names.CreateOrUpdate} {
			pkg.add(name, what, b.Pos)
		}
		handlers := l.namespace("struct " + b.Names.Handlers)
		handlers.fixed("OnSynced", "the synced handler", b.Pos)
		handlers.fixed("OnError", "the error handler", b.Pos)
		watcher := l.namespace("struct " + b.Names.Watcher)
		for _, m := range []string{"Watcher", "SetScopes", "Checkpoint", "AddHandlers", "Events"} {
			watcher.fixed(m, "the watcher's "+m, b.Pos)
		}
		client := l.namespace("type " + b.Names.Client)
		client.fixed("KeyValue", "its KeyValue method", b.Pos)
		client.fixed("Batch", "its Batch method", b.Pos)
		checkpoint := l.namespace("struct " + b.Names.Checkpoint)
		for _, m := range []string{"Revision", "Filters", "StreamCreated", "Resume"} {
			checkpoint.fixed(m, "the checkpoint's "+m, b.Pos)
		}
		for _, k := range b.Kinds {
			n := k.GoName
			k.Names = KindNames{
				Key: n + "Key", Parse: "Parse" + n + "Key", Event: n + "Event", Handler: "On" + n,
				Cache: n + "Cache", BindingField: "bind" + n,
				Put: "Put" + n, Create: "Create" + n, Update: "Update" + n, Get: "Get" + n,
				GetRevision: "Get" + n + "Revision", Delete: "Delete" + n, Purge: "Purge" + n,
				History: n + "History", List: "List" + n, Keys: n + "Keys", Modify: "Modify" + n,
				KindVar: "kvw" + g + n + "Kind", Template: "kvw" + g + n + "Template",
			}
			kwhat := fmt.Sprintf("key %s", n)
			for _, name := range []string{k.Names.Key, k.Names.Parse, k.Names.Event, k.Names.KindVar, k.Names.Template} {
				pkg.add(name, kwhat, k.Pos)
			}
			k.Names.Handler = handlers.claim(k.Names.Handler, kwhat, k.Pos)
			k.Names.Cache = watcher.claim(k.Names.Cache, kwhat, k.Pos)
			watcher.add(k.Names.BindingField, kwhat, k.Pos)
			k.Names.CheckpointField = checkpoint.claim(k.GoName, kwhat, k.Pos)
			for _, m := range []*string{&k.Names.Put, &k.Names.Create, &k.Names.Update, &k.Names.Get, &k.Names.GetRevision,
				&k.Names.Delete, &k.Names.Purge, &k.Names.History, &k.Names.List, &k.Names.Keys, &k.Names.Modify} {
				*m = client.claim(*m, kwhat, k.Pos)
			}
			if len(k.Indexes) > 0 {
				k.Names.CacheType = n + "Cache"
				pkg.add(k.Names.CacheType, kwhat, k.Pos)
				cache := l.namespace("type " + k.Names.CacheType)
				for _, m := range []string{"Cache", "Get", "GetItem", "Len", "List", "ListFunc", "In", "All", "AllIn", "ByIndex"} {
					cache.fixed(m, "the cache's "+m, k.Pos)
				}
				for _, ix := range k.Indexes {
					ix.Name = cache.claim(ix.Name, fmt.Sprintf("index %s", ix.Name), ix.Pos)
				}
			}
			key := l.namespace("struct " + k.Names.Key)
			key.fixed("String", "its String method", k.Pos)
			for _, p := range k.Template.Params {
				p.GoName = key.claim(p.GoName, fmt.Sprintf("parameter {%s}", p.Name), k.Template.Pos)
			}
		}
		scopes := l.namespace("struct " + b.Names.Scopes)
		scopes.fixed("All", "the whole-bucket switch", b.Pos)
		scopes.fixed("KVWatchScopes", "its KVWatchScopes method", b.Pos)
		for _, sc := range b.Scopes {
			swhat := fmt.Sprintf("scope %s", sc.GoName)
			sc.Field = scopes.claim(sc.GoName, swhat, sc.Pos)
			if len(sc.Prefix.Params) > 1 {
				sc.Struct = g + sc.GoName + "Scope"
				pkg.add(sc.Struct, swhat, sc.Pos)
			}
		}
	}
}

// fileStem is the part of a bucket's file name before ".kvwatch.go": the
// bucket name in lower case (buckets "Net" and "net" are distinct in NATS
// but would write one file on a case-insensitive file system), with '_'
// written '-' and without leading '-'. Go tools would otherwise skip or
// constrain the file: go build ignores names starting with '_', the go
// command rejects a leading '-', and a '_' before the first '.' reads as a
// GOOS or GOARCH suffix ("edge_windows" builds on Windows only). A name of
// nothing but '_' and '-' gives "bucket".
func fileStem(bucket string) string {
	stem := strings.TrimLeft(strings.ReplaceAll(strings.ToLower(bucket), "_", "-"), "-")
	if stem == "" {
		return "bucket"
	}
	return stem
}
