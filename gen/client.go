package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// emitClient writes the bucket's typed client: per kind, the methods of
// jetstream.KeyValue with typed keys and values, named like nats.go's
// (CreateRoute, RouteHistory, …), reads without a consumer, and Modify.
func emitClient(f *jen.File, b *schema.Bucket) {
	n := b.Names
	f.Comment(wrap(fmt.Sprintf("%s reads and writes entries of bucket %s with typed keys and "+
		"values. Keys are checked before anything is sent: a key field that is not a valid token is "+
		"an error, never another key. Its methods are safe for concurrent use.", n.Client, b.Name)))
	f.Type().Id(n.Client).Struct(
		jen.Id("kv").Qual(jetstreamPath, "KeyValue"),
		jen.Id("js").Qual(jetstreamPath, "JetStream"),
	)
	f.Line()
	f.Comment(wrap(fmt.Sprintf("%s opens bucket %s, or the bucket kvclient.WithBucketName among opts names "+
		"(%s-staging; an edge server's mirror, whose writes go to the hub). A missing bucket matches jetstream.ErrBucketNotFound. Its List, Keys and History "+
		"methods read through js.", n.OpenClient, b.Name, b.Name)))
	f.Func().Id(n.OpenClient).Params(
		jen.Id("ctx").Qual("context", "Context"), jen.Id("js").Qual(jetstreamPath, "JetStream"), jen.Id("opts").Op("...").Add(rt("OpenOption")),
	).Params(jen.Op("*").Id(n.Client), jen.Error()).Block(
		jen.List(jen.Id("kv"), jen.Err()).Op(":=").Add(rt("OpenBucket")).Call(jen.Id("ctx"), jen.Id("js"), jen.Op("&").Id(n.Spec), jen.Id("opts").Op("...")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Op("&").Id(n.Client).Add(keyed(field{"kv", jen.Id("kv")}, field{"js", jen.Id("js")})), jen.Nil()),
	)
	f.Line()
	f.Comment(wrap(fmt.Sprintf("%s wraps kv: bucket %s, or the bucket that holds its keys under a name the "+
		"environment gives it. Watch that bucket with kvwatch.WithBucket. Its List, Keys and History methods "+
		"need the JetStream context (kvclient.ErrNoJetStream): use %s for them.", n.NewClient, b.Name, n.OpenClient)))
	f.Func().Id(n.NewClient).Params(jen.Id("kv").Qual(jetstreamPath, "KeyValue")).Op("*").Id(n.Client).Block(
		jen.Return(jen.Op("&").Id(n.Client).Add(keyed(field{"kv", jen.Id("kv")}))),
	)
	f.Line()
	f.Comment("KeyValue returns the wrapped bucket.")
	f.Func().Params(jen.Id("b").Op("*").Id(n.Client)).Id("KeyValue").Params().Qual(jetstreamPath, "KeyValue").Block(
		jen.Return(jen.Id("b").Dot("kv")),
	)
	f.Line()
	for _, k := range b.Kinds {
		emitKindClient(f, b, k)
	}
	emitBatch(f, b)
}

// emitBatch writes the bucket's atomic batch of writes: per kind the
// client's writes that a batch can hold, and Commit.
func emitBatch(f *jen.File, b *schema.Bucket) {
	n := b.Names
	f.Comment(wrap(fmt.Sprintf("%s collects writes to bucket %s that Commit stores atomically: all at "+
		"consecutive revisions, or none (nats-server 2.12+, on a stream that allows atomic batches). A "+
		"watcher's caches take a committed batch at once: no reader sees part of it (see package kvclient for "+
		"what is not atomic). Its methods return the batch, to chain; a key or value that cannot be written "+
		"fails Commit, which then sends nothing. Not safe for concurrent use.", n.Batch, b.Name)))
	f.Type().Id(n.Batch).Struct(jen.Id("b").Op("*").Add(rt("Batch")))
	f.Line()
	f.Comment(wrap(fmt.Sprintf("Batch starts an atomic batch of writes to the bucket (see %s).", n.Batch)))
	f.Func().Params(jen.Id("b").Op("*").Id(n.Client)).Id("Batch").Params().Op("*").Id(n.Batch).Block(
		jen.Return(jen.Op("&").Id(n.Batch).Add(keyed(field{"b", rt("NewBatch").Call(jen.Id("b").Dot("js"), jen.Id("b").Dot("kv"))}))),
	)
	f.Line()
	for _, k := range b.Kinds {
		kn := k.Names
		kind := jen.Op("&").Id(kn.KindVar)
		write := func(name, doc string, params []jen.Code, call jen.Code) {
			f.Comment(wrap(doc))
			f.Func().Params(jen.Id("t").Op("*").Id(n.Batch)).Id(name).Params(params...).Op("*").Id(n.Batch).Block(
				call, jen.Return(jen.Id("t")),
			)
			f.Line()
		}
		key, v := jen.Id("key").Id(kn.Key), jen.Id("v").Add(goType(k.Value))
		write(kn.Put, fmt.Sprintf("%s adds a put of v under key.", kn.Put), []jen.Code{key, v},
			rt("BatchPut").Call(jen.Id("t").Dot("b"), kind, jen.Id("key"), jen.Id("v")))
		write(kn.Update, fmt.Sprintf("%s adds a put of v under key that commits only if key is still at "+
			"revision (0: only if key does not exist); otherwise nothing of the batch is stored and Commit fails "+
			"with jetstream.ErrKeyRevisionMismatch.", kn.Update), []jen.Code{key, v, jen.Id("revision").Uint64()},
			rt("BatchUpdate").Call(jen.Id("t").Dot("b"), kind, jen.Id("key"), jen.Id("v"), jen.Id("revision")))
		write(kn.Delete, fmt.Sprintf("%s adds a delete of key.", kn.Delete), []jen.Code{key},
			rt("BatchDelete").Call(jen.Id("t").Dot("b"), kind, jen.Id("key"), jen.False()))
		write(kn.Purge, fmt.Sprintf("%s adds a purge of key (its history too).", kn.Purge), []jen.Code{key},
			rt("BatchDelete").Call(jen.Id("t").Dot("b"), kind, jen.Id("key"), jen.True()))
	}
	f.Comment(wrap(fmt.Sprintf("Commit stores the batch atomically and returns the revision of its last write. It fails with "+
		"kvclient.ErrBatchDisabled on a stream that does not allow atomic batches, and with kvclient.ErrNoJetStream "+
		"on a bucket made with %s rather than %s.", n.NewClient, n.OpenClient)))
	f.Func().Params(jen.Id("t").Op("*").Id(n.Batch)).Id("Commit").Params(jen.Id("ctx").Qual("context", "Context")).
		Params(jen.Uint64(), jen.Error()).Block(jen.Return(jen.Id("t").Dot("b").Dot("Commit").Call(jen.Id("ctx"))))
	f.Line()
}

// emitKindClient writes the client methods of one kind.
func emitKindClient(f *jen.File, b *schema.Bucket, k *schema.Kind) {
	n, kn := b.Names, k.Names
	value := goType(k.Value)
	ctx := jen.Id("ctx").Qual("context", "Context")
	keyParam := jen.Id("key").Id(kn.Key)
	kind := jen.Op("&").Id(kn.KindVar)
	kv := jen.Id("b").Dot("kv")
	method := func(name, doc string, params []jen.Code, results []jen.Code, call jen.Code) {
		f.Comment(wrap(doc))
		f.Func().Params(jen.Id("b").Op("*").Id(n.Client)).Id(name).Params(params...).Params(results...).
			Block(jen.Return(call))
		f.Line()
	}
	rev := []jen.Code{jen.Uint64(), jen.Error()}
	item := []jen.Code{rt("Item").Types(value), jen.Error()}
	v := jen.Id("v").Add(value)

	method(kn.Put, fmt.Sprintf("%s stores v under key and returns the new revision.", kn.Put),
		[]jen.Code{ctx, keyParam, v}, rev,
		rt("Put").Call(jen.Id("ctx"), kv, kind, jen.Id("key"), jen.Id("v")))
	method(kn.Create, fmt.Sprintf("%s stores v under key only if key does not exist or was deleted, and returns "+
		"the new revision; otherwise the error matches jetstream.ErrKeyExists. jetstream.KeyTTL among opts gives "+
		"the entry a time to live (a bucket with a limit marker TTL).", kn.Create),
		[]jen.Code{ctx, keyParam, v, jen.Id("opts").Op("...").Qual(jetstreamPath, "KVCreateOpt")}, rev,
		rt("Create").Call(jen.Id("ctx"), kv, kind, jen.Id("key"), jen.Id("v"), jen.Id("opts").Op("...")))
	method(kn.Update, fmt.Sprintf("%s stores v under key only if key is still at revision (compare-and-set), and "+
		"returns the new revision; otherwise the error matches jetstream.ErrKeyRevisionMismatch. %s retries such "+
		"conflicts for you.", kn.Update, kn.Modify),
		[]jen.Code{ctx, keyParam, v, jen.Id("revision").Uint64()}, rev,
		rt("Update").Call(jen.Id("ctx"), kv, kind, jen.Id("key"), jen.Id("v"), jen.Id("revision")))
	method(kn.Modify, fmt.Sprintf("%s reads key, lets fn change a copy of its value, and writes it back if key "+
		"is still at the revision read; on a conflict it reads again and retries, with backoff, so that "+
		"concurrent modifiers each apply their change once (see package kvclient). It returns the revision "+
		"written; fn returning kvclient.ErrUnchanged writes nothing. kvclient.CreateIfAbsent among opts creates a missing key from the zero value.", kn.Modify),
		[]jen.Code{ctx, keyParam, jen.Id("fn").Func().Params(jen.Op("*").Add(value)).Error(), jen.Id("opts").Op("...").Add(rt("ModifyOption"))}, rev,
		rt("Modify").Call(jen.Id("ctx"), kv, kind, jen.Id("key"), jen.Id("fn"), jen.Id("opts").Op("...")))
	method(kn.Get, fmt.Sprintf("%s reads the current value of key; a missing or deleted key is jetstream.ErrKeyNotFound.", kn.Get),
		[]jen.Code{ctx, keyParam}, item,
		rt("Get").Call(jen.Id("ctx"), kv, kind, jen.Id("key")))
	method(kn.GetRevision, fmt.Sprintf("%s reads key as it was at revision; a revision that is not key's, or a "+
		"delete, is jetstream.ErrKeyNotFound.", kn.GetRevision),
		[]jen.Code{ctx, keyParam, jen.Id("revision").Uint64()}, item,
		rt("GetRevision").Call(jen.Id("ctx"), kv, kind, jen.Id("key"), jen.Id("revision")))
	method(kn.Delete, fmt.Sprintf("%s deletes key; watchers see a delete event. jetstream.LastRevision among "+
		"opts deletes only if key is still at that revision.", kn.Delete),
		[]jen.Code{ctx, keyParam, jen.Id("opts").Op("...").Qual(jetstreamPath, "KVDeleteOpt")}, []jen.Code{jen.Error()},
		rt("Delete").Call(jen.Id("ctx"), kv, kind, jen.Id("key"), jen.Id("opts").Op("...")))
	method(kn.Purge, fmt.Sprintf("%s deletes key and its history; watchers see a purge event. "+
		"jetstream.LastRevision among opts purges only if key is still at that revision; jetstream.PurgeTTL lets "+
		"the purge marker expire.", kn.Purge),
		[]jen.Code{ctx, keyParam, jen.Id("opts").Op("...").Qual(jetstreamPath, "KVDeleteOpt")}, []jen.Code{jen.Error()},
		rt("Purge").Call(jen.Id("ctx"), kv, kind, jen.Id("key"), jen.Id("opts").Op("...")))
	js := jen.Id("b").Dot("js")
	method(kn.History, fmt.Sprintf("%s reads every revision the bucket keeps of key, oldest first, deletes and "+
		"purges included, without a consumer; a key never written is jetstream.ErrKeyNotFound.", kn.History),
		[]jen.Code{ctx, keyParam}, []jen.Code{jen.Index().Add(rt("HistoryEntry")).Types(value), jen.Error()},
		rt("History").Call(jen.Id("ctx"), js, kv, kind, jen.Id("key")))
	method(kn.List, fmt.Sprintf("%s reads the %s entries within scopes, sorted by key, without a consumer: exact "+
		"as of the revision returned (see package kvclient; an entry that does not decode is reported in the error, "+
		"the others returned).", kn.List, k.GoName),
		[]jen.Code{ctx, jen.Id("scopes").Id(n.Scopes)},
		[]jen.Code{jen.Index().Add(rt("Entry")).Types(jen.Id(kn.Key), value), jen.Uint64(), jen.Error()},
		rt("List").Call(jen.Id("ctx"), js, kv, jen.Op("&").Id(n.Spec), kind, jen.Id("scopes").Dot("KVWatchScopes").Call()))
	method(kn.Keys, fmt.Sprintf("%s reads the keys of the %s entries within scopes, sorted, without a "+
		"consumer: exact as of the revision returned.", kn.Keys, k.GoName),
		[]jen.Code{ctx, jen.Id("scopes").Id(n.Scopes)},
		[]jen.Code{jen.Index().Id(kn.Key), jen.Uint64(), jen.Error()},
		rt("Keys").Call(jen.Id("ctx"), js, kv, jen.Op("&").Id(n.Spec), kind, jen.Id("scopes").Dot("KVWatchScopes").Call()))
}
