package gen

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/kvwatchgen/kvwatchgen/internal/duration"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file writes what a bucket's config: declares: the Config of its
// runtime description (kvwatchimpl.BucketConfig, the declared settings
// only, in the struct's order whatever the schema's), and the function
// that creates the bucket with it or updates the bucket to it.

// configSetting is one setting of a bucket's config: its schema name, its
// field in kvwatchimpl.BucketConfig, the default the runtime applies when
// it is not declared, and the declared value as Go code and as the schema
// writes it (nil and "" when not declared).
type configSetting struct {
	name, field, def string
	code             jen.Code
	text             string
}

// configSettings lists the settings of c in kvwatchimpl.BucketConfig's
// order; c may be nil (nothing declared).
func configSettings(c *schema.BucketConfig) []configSetting {
	if c == nil {
		c = &schema.BucketConfig{}
	}
	var storage jen.Code
	switch c.Storage {
	case schema.StorageFile:
		storage = rt("FileStorage")
	case schema.StorageMemory:
		storage = rt("MemoryStorage")
	}
	var description jen.Code
	if c.Description != "" {
		description = jen.Lit(c.Description)
	}
	return []configSetting{
		{"history", "History", "1", intCode(int64(c.History)), intText(int64(c.History))},
		{"ttl", "TTL", "none", durationCode(c.TTL), durationText(c.TTL)},
		{"max_value_size", "MaxValueSize", "unlimited", intCode(int64(c.MaxValueSize)), intText(int64(c.MaxValueSize))},
		{"max_bytes", "MaxBytes", "unlimited", intCode(c.MaxBytes), intText(c.MaxBytes)},
		{"storage", "Storage", "file", storage, string(c.Storage)},
		{"replicas", "Replicas", "1", intCode(int64(c.Replicas)), intText(int64(c.Replicas))},
		{"max_consumers", "MaxConsumers", defaultMaxConsumersText, intCode(int64(c.MaxConsumers)), intText(int64(c.MaxConsumers))},
		{"limit_marker_ttl", "LimitMarkerTTL", "none", durationCode(c.LimitMarkerTTL), durationText(c.LimitMarkerTTL)},
		{"atomic_batches", "AtomicBatches", "false", boolCode(c.AtomicBatches), strconv.FormatBool(c.AtomicBatches)},
		{"description", "Description", "none", description, strconv.Quote(c.Description)},
	}
}

// defaultMaxConsumersText is the max_consumers CreateOrUpdate…Bucket gives
// a bucket whose schema declares none: the runtime's
// kvwatchimpl.DefaultMaxConsumers (TestDefaultMaxConsumersText holds them
// together), said without naming the runtime's plumbing.
const defaultMaxConsumersText = "1000 (nats-server 2.15's default per stream, written into the stream)"

// intCode writes v as an untyped constant (jen.Lit would convert an int32
// or int64), nil for 0: not declared.
func intCode(v int64) jen.Code {
	if v == 0 {
		return nil
	}
	return jen.Op(strconv.FormatInt(v, 10))
}

func intText(v int64) string { return strconv.FormatInt(v, 10) }

// boolCode writes true, nil for false: not declared.
func boolCode(v bool) jen.Code {
	if !v {
		return nil
	}
	return jen.True()
}

// specConfig returns the Config field of b's spec literal, or nothing when
// the schema declares no setting (no config:, or an empty one): a bucket
// without one keeps its spec as it was.
func specConfig(b *schema.Bucket) []field {
	var fields []field
	for _, s := range configSettings(b.Config) {
		if s.code != nil {
			fields = append(fields, field{s.field, s.code})
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return []field{{"Config", rt("BucketConfig").Add(keyed(fields...))}}
}

// emitBucketConfig writes CreateOrUpdate<Bucket>Bucket, which creates the
// bucket with its Config or updates the bucket to it.
func emitBucketConfig(f *jen.File, b *schema.Bucket) {
	n := b.Names
	var declared, defaults []string
	for _, s := range configSettings(b.Config) {
		if s.code != nil {
			declared = append(declared, s.name+" "+s.text)
		} else {
			defaults = append(defaults, s.name+" "+s.def)
		}
	}
	doc := fmt.Sprintf("%s creates bucket %s with the configuration the schema declares, or updates the "+
		"existing bucket to it, and returns its client. ", n.CreateOrUpdate, b.Name)
	if len(declared) > 0 {
		doc += "The schema declares " + strings.Join(declared, ", ") + "."
		if len(defaults) > 0 {
			doc += " The other settings take their defaults: " + strings.Join(defaults, ", ") + "."
		}
	} else {
		doc += "The schema declares no configuration: every setting takes its default (" + strings.Join(defaults, ", ") + ")."
	}
	doc += "\n\nAn existing bucket is changed in place, and only where it differs; settings the schema does not " +
		"govern (compression, placement, other metadata) stay. A change that makes the server drop entries or revisions " +
		"(lowering history, setting or lowering the ttl) is refused unless opts include kvclient.AllowDataLoss(), " +
		"and a change of storage always is: a refusal changes nothing, and its *kvclient.BucketConfigError lists " +
		"every setting that differs. It deletes neither the bucket nor an entry." +
		"\n\nIt records which schema configured the bucket (its revision and the bucket's fingerprint, " +
		"as the stream metadata kvwatchgen.schema.revision and kvwatchgen.schema.fingerprint), where " +
		"watchers read it (kvwatch.Stats.Schema) and log when their code is older. The record is written " +
		"as given, an older revision too: call this when deploying a schema, not at the start of every node."
	f.Comment(wrap(doc))
	f.Func().Id(n.CreateOrUpdate).Params(
		jen.Id("ctx").Qual("context", "Context"), jen.Id("js").Qual(jetstreamPath, "JetStream"),
		jen.Id("opts").Op("...").Add(rt("BucketOption")),
	).Params(jen.Op("*").Id(n.Client), jen.Error()).Block(
		jen.List(jen.Id("kv"), jen.Err()).Op(":=").Add(rt("CreateOrUpdateBucket")).Call(
			jen.Id("ctx"), jen.Id("js"), jen.Op("&").Id(n.Spec), jen.Id("opts").Op("..."),
		),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Return(jen.Op("&").Id(n.Client).Add(keyed(field{"kv", jen.Id("kv")}, field{"js", jen.Id("js")})), jen.Nil()),
	)
	f.Line()
}

// durationUnits are the units a duration is written in, largest first.
var durationUnits = []struct {
	d    time.Duration
	name string
}{
	{time.Hour, "Hour"}, {time.Minute, "Minute"}, {time.Second, "Second"},
	{time.Millisecond, "Millisecond"}, {time.Microsecond, "Microsecond"}, {time.Nanosecond, "Nanosecond"},
}

// durationCode writes d in the largest unit that divides it:
// 24 * time.Hour, 90 * time.Minute, time.Second; nil for 0: not declared.
func durationCode(d time.Duration) jen.Code {
	if d == 0 {
		return nil
	}
	u := durationUnits[len(durationUnits)-1]
	for _, larger := range durationUnits {
		if d%larger.d == 0 {
			u = larger
			break
		}
	}
	if d == u.d {
		return jen.Qual("time", u.name)
	}
	return jen.Op(strconv.FormatInt(int64(d/u.d), 10)).Op("*").Qual("time", u.name)
}

// durationText writes d as the schema would: "24h", "1h30m", "90s".
func durationText(d time.Duration) string { return duration.Format(d) }
