package gen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// emitScopes writes the bucket's scopes struct and its conversion for the
// runtime. A scope with one parameter is a slice of that parameter's type,
// with several a slice of a struct, with none a bool.
func emitScopes(f *jen.File, b *schema.Bucket) {
	n := b.Names
	for _, s := range b.Scopes {
		if s.Struct == "" {
			continue
		}
		f.Comment(wrap(fmt.Sprintf("%s is one value of scope %s of bucket %s (prefix %q; the scopes' field says what it watches).", s.Struct, s.GoName, b.Name, s.Prefix.Raw)))
		f.Type().Id(s.Struct).StructFunc(func(g *jen.Group) {
			for _, p := range s.Prefix.Params {
				g.Id(p.GoName).Add(paramType(p)).Comment("{" + p.Name + "}")
			}
		})
		f.Line()
	}

	f.Comment(wrap(fmt.Sprintf("%s selects what %s %s watches: every entry under any of the listed "+
		"scope values, as each field says (a key equal to a scope's prefix only where a key template equals that prefix). Overlapping values are fine: each "+
		"change is still delivered once. The zero value watches nothing, never the whole bucket; "+
		"set All for that. Values are checked before anything is sent: a value that is empty or "+
		"holds '.', '*', '>', whitespace or other characters outside [-/_=A-Za-z0-9] is a "+
		"*kvwatch.ScopeError.", n.Scopes, article(n.Watcher), n.Watcher)))
	f.Type().Id(n.Scopes).StructFunc(func(g *jen.Group) {
		g.Comment("All watches every entry of the bucket.")
		g.Id("All").Bool()
		for _, s := range b.Scopes {
			g.Comment(wrapIndented(scopeFieldDoc(b, s)))
			g.Id(s.Field).Add(scopeFieldType(s))
		}
	})
	f.Line()

	f.Comment(wrap("KVWatchScopes converts s for the runtime; with it a cache lists by scope (kvwatch.Cache.In)."))
	f.Func().Params(jen.Id("s").Id(n.Scopes)).Id("KVWatchScopes").Params().Add(rt("Scopes")).BlockFunc(func(g *jen.Group) {
		g.Id("out").Op(":=").Add(rt("Scopes")).Add(keyed(field{"All", jen.Id("s").Dot("All")}))
		for i, s := range b.Scopes {
			value := func(params ...jen.Code) jen.Code {
				return jen.Id("out").Dot("Values").Op("=").Append(jen.Id("out").Dot("Values"), rt("ScopeValue").Add(keyed(
					field{"Scope", jen.Lit(i)},
					field{"Params", jen.Index().String().Values(params...)},
				)))
			}
			switch len(s.Prefix.Params) {
			case 0:
				g.If(jen.Id("s").Dot(s.Field)).Block(value())
			case 1:
				g.For(jen.List(jen.Id("_"), jen.Id("v")).Op(":=").Range().Id("s").Dot(s.Field)).Block(
					value(paramString(s.Prefix.Params[0], jen.Id("v"))),
				)
			default:
				var params []jen.Code
				for _, p := range s.Prefix.Params {
					params = append(params, paramString(p, jen.Id("v").Dot(p.GoName)))
				}
				g.For(jen.List(jen.Id("_"), jen.Id("v")).Op(":=").Range().Id("s").Dot(s.Field)).Block(value(params...))
			}
		}
		g.Return(jen.Id("out"))
	})
	f.Line()
}

func scopeFieldType(s *schema.Scope) jen.Code {
	switch len(s.Prefix.Params) {
	case 0:
		return jen.Bool()
	case 1:
		return jen.Index().Add(paramType(s.Prefix.Params[0]))
	}
	return jen.Index().Id(s.Struct)
}

func scopeFieldDoc(b *schema.Bucket, s *schema.Scope) string {
	var each string
	switch len(s.Prefix.Params) {
	case 0:
	case 1:
		each = ", for each listed " + s.Prefix.Params[0].Name
	default:
		var names []string
		for _, p := range s.Prefix.Params {
			names = append(names, p.Name)
		}
		each = ", for each listed (" + strings.Join(names, ", ") + ")"
	}
	exact, deeper := scopeReach(b, s)
	switch {
	case len(exact) > 0 && deeper:
		return fmt.Sprintf("%s watches the entries under %q and the key %q itself (%s)%s.", s.Field, s.Prefix.Raw+".", s.Prefix.Raw, strings.Join(exact, ", "), each)
	case deeper:
		return fmt.Sprintf("%s watches the entries under %q%s; not the key %q itself, which no key template makes.", s.Field, s.Prefix.Raw+".", each, s.Prefix.Raw)
	}
	return fmt.Sprintf("%s watches the key %q (%s)%s; nothing under it, which no key template makes.", s.Field, s.Prefix.Raw, strings.Join(exact, ", "), each)
}

// scopeReach says what the runtime watches for a value of scope s (its
// compileScopes): the key equal to the prefix when a template equals it
// (exact: those kinds), the keys under it when a template extends it
// (deeper).
func scopeReach(b *schema.Bucket, s *schema.Scope) (exact []string, deeper bool) {
	for _, k := range b.Kinds {
		t := k.Template.Tokens
		if len(t) < len(s.Prefix.Tokens) || !tokensPrefix(s.Prefix.Tokens, t) {
			continue
		}
		if len(t) == len(s.Prefix.Tokens) {
			exact = append(exact, k.GoName)
		} else {
			deeper = true
		}
	}
	return exact, deeper
}

// tokensPrefix reports whether prefix is token for token the start of t:
// equal literals, parameters of the same name (internal/keys.IsPrefix).
func tokensPrefix(prefix, t []schema.Token) bool {
	for i, p := range prefix {
		u := t[i]
		if (p.Param == nil) != (u.Param == nil) || p.Param == nil && p.Literal != u.Literal || p.Param != nil && p.Param.Name != u.Param.Name {
			return false
		}
	}
	return true
}

// emitHandlers writes the handlers struct.
func emitHandlers(f *jen.File, b *schema.Bucket) {
	n := b.Names
	f.Comment(wrap(fmt.Sprintf("%s receives the events of %s %s; every field is optional. All handlers "+
		"run on one goroutine of their own, one call at a time: first the initial state "+
		"(events flagged Initial), then OnSynced, then live changes in stream order across all kinds. "+
		"The cache already holds a change when its handler runs (and may hold later ones). A handler "+
		"that blocks delays every later event (once a few hundred are queued the consumer stops pulling; "+
		"nothing is lost); one that panics is reported to OnError and the watch goes on. A handler may "+
		"call any method of the watcher: none waits for a handler, and no handler starts after Stop.",
		n.Handlers, article(n.Watcher), n.Watcher)))
	f.Type().Id(n.Handlers).StructFunc(func(g *jen.Group) {
		for _, k := range b.Kinds {
			g.Comment(fmt.Sprintf("%s receives changes of %s entries.", k.Names.Handler, k.GoName))
			g.Id(k.Names.Handler).Func().Params(jen.Id(k.Names.Event))
		}
		g.Comment("OnSynced is called once, after the last initial event.")
		g.Id("OnSynced").Func().Params()
		g.Comment(wrapIndented("OnError receives what the watch skipped and went on after: a value that does " +
			"not decode or a key that does not parse (*kvwatch.DataError), a key in scope that matches no " +
			"template (*kvwatch.UnknownKeyError, once per key: see its doc), a handler panic (*kvwatch.HandlerError); and the error " +
			"that ended the watch, if it ends on its own."))
		g.Id("OnError").Func().Params(jen.Error())
	})
	f.Line()
}

// emitWatcher writes the typed watcher, its cache accessors and its
// constructor.
func emitWatcher(f *jen.File, b *schema.Bucket) {
	n := b.Names
	f.Comment(wrap(fmt.Sprintf("%s watches bucket %s within a set of scopes, served by at most one "+
		"consumer at any moment however many scopes and kinds it covers. The embedded kvwatch.Watcher "+
		"provides WaitSynced, WaitRevision, Synced, Stats, Err, Done and Stop. Its methods are safe for concurrent use.", n.Watcher, b.Name)))
	if b.Doc != "" {
		f.Comment("//")
		f.Comment(wrap(b.Doc))
	}
	f.Type().Id(n.Watcher).StructFunc(func(g *jen.Group) {
		g.Add(rt("Watcher"))
		g.Id("impl").Op("*").Qual(implPath, "Watcher")
		for _, k := range b.Kinds {
			g.Id(k.Names.BindingField).Op("*").Add(rt("Binding")).Types(jen.Id(k.Names.Key), goType(k.Value))
		}
	})
	f.Line()
	for _, k := range b.Kinds {
		doc := fmt.Sprintf("%s returns the read-only cache of the %s entries in the watcher's "+
			"scopes: exact once the watcher is synced, updated before each handler call.", k.Names.Cache, k.GoName)
		cache := jen.Id("w").Dot(k.Names.BindingField).Dot("Cache").Call()
		if k.Names.CacheType == "" {
			f.Comment(wrap(doc))
			f.Func().Params(jen.Id("w").Op("*").Id(n.Watcher)).Id(k.Names.Cache).Params().
				Add(rt("Cache")).Types(jen.Id(k.Names.Key), goType(k.Value)).
				Block(jen.Return(cache))
		} else {
			f.Comment(wrap(doc + " Its indexes are kept up to date with every change."))
			f.Func().Params(jen.Id("w").Op("*").Id(n.Watcher)).Id(k.Names.Cache).Params().Id(k.Names.CacheType).
				Block(jen.Id("c").Op(":=").Add(cache), jen.Return(jen.Id(k.Names.CacheType).Values(jen.Id("c"), jen.Id("c"))))
		}
		f.Line()
		emitIndexedCache(f, k)
	}

	f.Comment(wrap(fmt.Sprintf("%s starts watching bucket %s within scopes and returns once the bucket "+
		"was found; the initial state is then read in the background (see WaitSynced). Scope values "+
		"are checked first (*kvwatch.ScopeError); empty scopes watch nothing, with no consumer. ctx "+
		"bounds the whole watch: cancelling it stops the watcher like Stop does.", n.Watch, b.Name)))
	f.Func().Id(n.Watch).Params(
		jen.Id("ctx").Qual("context", "Context"),
		jen.Id("js").Qual(jetstreamPath, "JetStream"),
		jen.Id("scopes").Id(n.Scopes),
		jen.Id("h").Id(n.Handlers),
		jen.Id("opts").Op("...").Add(rt("Option")),
	).Params(jen.Op("*").Id(n.Watcher), jen.Error()).BlockFunc(func(g *jen.Group) {
		var bindings []jen.Code
		for _, k := range b.Kinds {
			id := bindingVar(k)
			g.Id(id).Op(":=").Add(rt("Bind")).Call(jen.Op("&").Id(k.Names.KindVar), jen.Id("h").Dot(k.Names.Handler))
			bindings = append(bindings, jen.Id(id))
		}
		g.Id("opts").Op("=").Append(jen.Index().Add(rt("Option")).Values(
			rt("OnSynced").Call(jen.Id("h").Dot("OnSynced")),
			rt("OnError").Call(jen.Id("h").Dot("OnError")),
		), jen.Id("opts").Op("..."))
		g.List(jen.Id("w"), jen.Err()).Op(":=").Add(rt("Start")).Call(
			jen.Id("ctx"), jen.Id("js"), jen.Op("&").Id(n.Spec), jen.Id("scopes").Dot("KVWatchScopes").Call(),
			jen.Index().Add(rt("AnyBinding")).Values(bindings...), jen.Id("opts").Op("..."),
		)
		g.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err()))
		fields := []field{{"Watcher", jen.Id("w")}, {"impl", jen.Id("w")}}
		for _, k := range b.Kinds {
			fields = append(fields, field{k.Names.BindingField, jen.Id(bindingVar(k))})
		}
		g.Return(jen.Op("&").Id(n.Watcher).Add(keyed(fields...)), jen.Nil())
	})
	f.Line()
}

// emitAddHandlers writes the watcher's AddHandlers: more handlers on the
// running watcher, as client-go's SharedInformer takes them.
func emitAddHandlers(f *jen.File, b *schema.Bucket) {
	n := b.Names
	f.Comment(wrap("AddHandlers adds h to the running watcher, for another component of the " +
		"node: no second watcher, no second consumer. h gets every cached entry as an initial event, " +
		"then each change after them in stream order, with its OnSynced once the watcher is synced " +
		"(right after the replay if it is already), on a goroutine of its own; its OnError receives " +
		"its own handlers' panics. Its events' values are its own copies. AddHandlers returns at once, " +
		"from anywhere; the registration's WaitSynced waits for it, Remove takes h off again (see " +
		"kvwatch.Registration). It fails only once the watch has ended."))
	var handlers []jen.Code
	for _, k := range b.Kinds {
		handlers = append(handlers, rt("HandlerOf").Call(jen.Id("w").Dot(k.Names.BindingField), jen.Id("h").Dot(k.Names.Handler)))
	}
	f.Func().Params(jen.Id("w").Op("*").Id(n.Watcher)).Id("AddHandlers").Params(jen.Id("h").Id(n.Handlers)).
		Params(rt("Registration"), jen.Error()).Block(
		jen.List(jen.Id("r"), jen.Err()).Op(":=").Id("w").Dot("impl").Dot("AddHandlers").Call(
			jen.Index().Add(rt("AnyHandler")).Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, handlers...),
			jen.Id("h").Dot("OnSynced"), jen.Id("h").Dot("OnError")),
		// A nil *Registration in the interface would not be nil.
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Id("r"), jen.Nil()),
	)
	f.Line()
}

// emitEvents writes the watcher's Events: its events as an iterator.
func emitEvents(f *jen.File, b *schema.Bucket) {
	n := b.Names
	f.Comment(wrap("Events returns the watcher's events as an iterator, for a loop instead of handlers: " +
		"every cached entry as an initial event, kvwatch.SyncedEvent once the watcher is synced, then each " +
		"change, in the watcher's order; a type switch over the kinds' event types reads them. The body may " +
		"call any method of the watcher, Stop included. The watcher stops reading from the server while the " +
		"loop falls behind (nothing is lost); the loop ends when it breaks, when ctx ends, at Stop, or when " +
		"the watch ends."))
	var bindings []jen.Code
	for _, k := range b.Kinds {
		bindings = append(bindings, jen.Id("w").Dot(k.Names.BindingField))
	}
	f.Func().Params(jen.Id("w").Op("*").Id(n.Watcher)).Id("Events").Params(jen.Id("ctx").Qual("context", "Context")).
		Qual("iter", "Seq").Types(rt("AnyEvent")).Block(
		jen.Return(jen.Id("w").Dot("impl").Dot("Events").Call(append([]jen.Code{jen.Id("ctx")}, bindings...)...)),
	)
	f.Line()
}

// emitSetScopes writes the typed SetScopes of the watcher.
func emitSetScopes(f *jen.File, b *schema.Bucket) {
	n := b.Names
	f.Comment(wrap("SetScopes changes what the watcher watches while it runs, still with one consumer: " +
		"keys of removed scopes are delivered as deletes with LeftScope set, added scopes are read " +
		"and delivered as initial events, and no change is lost or delivered twice. It returns once the change is applied and the caches are exact " +
		"again, from anywhere: a handler or an Events loop body too."))
	f.Func().Params(jen.Id("w").Op("*").Id(n.Watcher)).Id("SetScopes").Params(
		jen.Id("ctx").Qual("context", "Context"), jen.Id("scopes").Id(n.Scopes),
	).Error().Block(
		jen.Return(jen.Id("w").Dot("impl").Dot("SetScopes").Call(jen.Id("ctx"), jen.Id("scopes").Dot("KVWatchScopes").Call())),
	)
	f.Line()
}

// bindingVar names the local variable of a kind's binding in the Watch
// function: "bind" and the kind's Go name, which no parameter of the
// function (ctx, js, scopes, h, opts) or result (w, err) can equal.
func bindingVar(k *schema.Kind) string { return "bind" + k.GoName }

// emitIndexedCache writes the cache type of a kind that declares indexes:
// the runtime's cache with a typed lookup per index.
func emitIndexedCache(f *jen.File, k *schema.Kind) {
	kn := k.Names
	if kn.CacheType == "" {
		return
	}
	value := goType(k.Value)
	entries := jen.Index().Add(rt("Entry")).Types(jen.Id(kn.Key), value)
	f.Comment(wrap(fmt.Sprintf("%s is the cache of %s entries (kvwatch.Cache, whose methods it has) with "+
		"the indexes the schema declares: each lookup reads only the entries it returns.", kn.CacheType, k.GoName)))
	f.Type().Id(kn.CacheType).Struct(
		rt("Cache").Types(jen.Id(kn.Key), value),
		jen.Id("impl").Op("*").Qual(implPath, "Cache").Types(jen.Id(kn.Key), value),
	)
	f.Line()
	for _, ix := range k.Indexes {
		f.Comment(wrap(fmt.Sprintf("%s returns (copies of) the cached %s entries whose %s is v, sorted by key.",
			ix.Name, k.GoName, ix.Field.JSONName)))
		f.Func().Params(jen.Id("c").Id(kn.CacheType)).Id(ix.Name).Params(jen.Id("v").Add(goType(ix.Field.Type))).Add(entries).
			Block(jen.Return(jen.Id("c").Dot("impl").Dot("ByIndex").Call(jen.Lit(ix.Name), jen.Id("v"))))
		f.Line()
	}
}
