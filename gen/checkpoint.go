package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// emitCheckpoint writes the bucket's typed checkpoint: the watcher's
// caches at one revision, encodable to JSON, and the option that resumes a
// watcher from it.
func emitCheckpoint(f *jen.File, b *schema.Bucket) {
	n := b.Names
	f.Comment(wrap(fmt.Sprintf("%s is the state of %s %s at one revision: every cached entry, and the "+
		"revision and filters they are exact at. It encodes to JSON; persist it, and start a later "+
		"watcher with its Resume option to receive only what changed since.", n.Checkpoint, article(n.Watcher), n.Watcher)))
	f.Type().Id(n.Checkpoint).StructFunc(func(g *jen.Group) {
		g.Comment("Revision is the last revision applied.")
		g.Id("Revision").Uint64()
		g.Comment("Filters are the subject filters the entries were watched with.")
		g.Id("Filters").Index().String()
		g.Comment("StreamCreated identifies the bucket's stream: a recreated bucket is re-listed.")
		g.Id("StreamCreated").Qual("time", "Time")
		for _, k := range b.Kinds {
			g.Comment(fmt.Sprintf("%s holds the %s entries, sorted by key.", k.Names.CheckpointField, k.GoName))
			g.Id(k.Names.CheckpointField).Index().Add(rt("Entry")).Types(jen.Id(k.Names.Key), goType(k.Value))
		}
	})
	f.Line()

	f.Comment(wrap("Checkpoint returns the watcher's caches and revision, taken atomically. " +
		"It fails with kvwatch.ErrNotSynced before the watcher is synced. The entries are copies the " +
		"caller owns."))
	f.Func().Params(jen.Id("w").Op("*").Id(n.Watcher)).Id("Checkpoint").Params().Params(jen.Id(n.Checkpoint), jen.Error()).BlockFunc(func(g *jen.Group) {
		g.List(jen.Id("cp"), jen.Err()).Op(":=").Id("w").Dot("impl").Dot("Checkpoint").Call()
		g.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Id(n.Checkpoint).Values(), jen.Err()))
		fields := []field{
			{"Revision", jen.Id("cp").Dot("Revision")},
			{"Filters", jen.Id("cp").Dot("Filters")},
			{"StreamCreated", jen.Id("cp").Dot("StreamCreated")},
		}
		for _, k := range b.Kinds {
			fields = append(fields, field{k.Names.CheckpointField,
				rt("EntriesOf").Call(jen.Id("cp"), jen.Op("&").Id(k.Names.KindVar))})
		}
		g.Return(jen.Id(n.Checkpoint).Add(keyed(fields...)), jen.Nil())
	})
	f.Line()

	f.Comment(wrap(fmt.Sprintf("Resume is the option that starts %s %s from cp: its caches are filled "+
		"with cp's entries and only what changed after cp.Revision is delivered (Stats().Resume says whether it "+
		"re-listed instead; see package kvwatch, Resuming). The watcher takes ownership of cp's entries.", article(n.Watcher), n.Watcher)))
	f.Func().Params(jen.Id("cp").Id(n.Checkpoint)).Id("Resume").Params().Add(rt("Option")).BlockFunc(func(g *jen.Group) {
		g.Id("state").Op(":=").Add(rt("Checkpoint")).Add(keyed(
			field{"Revision", jen.Id("cp").Dot("Revision")},
			field{"Filters", jen.Id("cp").Dot("Filters")},
			field{"StreamCreated", jen.Id("cp").Dot("StreamCreated")},
		))
		for _, k := range b.Kinds {
			g.Add(rt("WithEntries")).Call(jen.Op("&").Id("state"), jen.Op("&").Id(k.Names.KindVar), jen.Id("cp").Dot(k.Names.CheckpointField))
		}
		g.Return(rt("Resume").Call(jen.Id("state")))
	})
	f.Line()
}
