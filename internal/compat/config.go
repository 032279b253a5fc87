package compat

import (
	"fmt"
	"strconv"

	"github.com/kvwatchgen/kvwatchgen/internal/duration"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file compares a bucket's config: by the rules CreateOrUpdate
// applies to a live bucket (it refuses a change that drops data without
// kvclient.AllowDataLoss, and a change of storage always), and by what
// the new settings refuse writers of the old schema.

// setting is one config setting as both schemas have it, defaults filled
// in as CreateOrUpdate fills them.
type setting struct {
	name     string
	old, new string
	// verdict and effect say what the change does.
	verdict Verdict
	effect  string
}

// config compares the config of a bucket.
func (c *comparison) config(ob, nb *schema.Bucket) {
	o, n := effective(ob.Config), effective(nb.Config)
	where := c.inNew(nb.Pos)
	if nb.Config != nil {
		where = c.inNew(nb.Config.Pos)
	}
	var settings []setting
	add := func(name, ov, nv string, verdict Verdict, effect string) {
		if ov != nv {
			settings = append(settings, setting{name, ov, nv, verdict, effect})
		}
	}
	switch {
	case n.History < o.History:
		add("history", strconv.Itoa(o.History), strconv.Itoa(n.History), Breaking,
			"CreateOrUpdate refuses it without kvclient.AllowDataLoss: it drops the older revisions of every key")
	default:
		add("history", strconv.Itoa(o.History), strconv.Itoa(n.History), Safe, "older revisions are kept from now on")
	}
	switch {
	case n.TTL > 0 && (o.TTL == 0 || n.TTL < o.TTL):
		add("ttl", duration.OrNone(o.TTL), duration.OrNone(n.TTL), Breaking,
			"CreateOrUpdate refuses it without kvclient.AllowDataLoss: entries older than it expire at once")
	default:
		add("ttl", duration.OrNone(o.TTL), duration.OrNone(n.TTL), Safe, "entries are kept longer")
	}
	switch {
	case n.MaxValueSize > 0 && (o.MaxValueSize == 0 || n.MaxValueSize < o.MaxValueSize):
		add("max_value_size", sizeOrUnlimited(int64(o.MaxValueSize)), sizeOrUnlimited(int64(n.MaxValueSize)), Breaking,
			"the server refuses writes of larger values, old writers' too")
	default:
		add("max_value_size", sizeOrUnlimited(int64(o.MaxValueSize)), sizeOrUnlimited(int64(n.MaxValueSize)), Safe, "larger values are accepted")
	}
	switch {
	case n.MaxBytes > 0 && (o.MaxBytes == 0 || n.MaxBytes < o.MaxBytes):
		add("max_bytes", sizeOrUnlimited(o.MaxBytes), sizeOrUnlimited(n.MaxBytes), Notice,
			"writes fail once the bucket holds that much (a KV bucket discards new writes when full)")
	default:
		add("max_bytes", sizeOrUnlimited(o.MaxBytes), sizeOrUnlimited(n.MaxBytes), Safe, "the bucket may hold more")
	}
	add("storage", string(o.Storage), string(n.Storage), Breaking,
		"CreateOrUpdate always refuses it: the server cannot change storage in place (create a new bucket and copy the entries)")
	add("replicas", strconv.Itoa(o.Replicas), strconv.Itoa(n.Replicas), Safe, "the server moves the stream's replicas in place")
	switch {
	case n.MaxConsumers < o.MaxConsumers:
		add("max_consumers", strconv.Itoa(o.MaxConsumers), strconv.Itoa(n.MaxConsumers), Notice,
			"watchers beyond it cannot start (each holds one consumer)")
	default:
		add("max_consumers", strconv.Itoa(o.MaxConsumers), strconv.Itoa(n.MaxConsumers), Safe, "more watchers fit")
	}
	switch {
	case n.LimitMarkerTTL == 0:
		add("limit_marker_ttl", duration.OrNone(o.LimitMarkerTTL), "none", Notice,
			"no more limit markers; the stream keeps per-message TTLs on (the server cannot turn them off)")
	default:
		add("limit_marker_ttl", duration.OrNone(o.LimitMarkerTTL), duration.OrNone(n.LimitMarkerTTL), Safe, "needs nats-server 2.11")
	}
	switch {
	case !n.AtomicBatches:
		add("atomic_batches", strconv.FormatBool(o.AtomicBatches), "false", Breaking,
			"old clients' batches fail (kvclient.ErrBatchDisabled)")
	default:
		add("atomic_batches", strconv.FormatBool(o.AtomicBatches), "true", Safe, "batches are accepted (nats-server 2.12)")
	}
	add("description", strconv.Quote(o.Description), strconv.Quote(n.Description), Safe, "")
	for _, s := range settings {
		msg := fmt.Sprintf("%s of bucket %s changed from %s to %s", s.name, nb.Name, s.old, s.new)
		if s.effect != "" {
			msg += ": " + s.effect
		}
		at := where
		if p, ok := settingPos(nb.Config, s.name); ok {
			at = c.inNew(p)
		}
		c.add(at, BucketConfig, s.verdict, "config", nb.Name+"."+s.name, "%s", msg)
	}
}

// settingPos is where config c writes setting name.
func settingPos(c *schema.BucketConfig, name string) (schema.Pos, bool) {
	if c == nil {
		return schema.Pos{}, false
	}
	p, ok := c.SettingPos[name]
	return p, ok
}

// effective is a config with CreateOrUpdate's defaults filled in.
func effective(c *schema.BucketConfig) schema.BucketConfig {
	var e schema.BucketConfig
	if c != nil {
		e = *c
	}
	e.History = max(e.History, 1)
	if e.Storage == "" {
		e.Storage = schema.StorageFile
	}
	e.Replicas = max(e.Replicas, 1)
	if e.MaxConsumers == 0 {
		e.MaxConsumers = defaultMaxConsumers
	}
	return e
}

// defaultMaxConsumers is the runtime's kvwatchimpl.DefaultMaxConsumers,
// which CreateOrUpdate writes when a schema declares none (the runtime's
// test of this package checks they agree).
const defaultMaxConsumers = 1000

func sizeOrUnlimited(n int64) string {
	if n <= 0 {
		return "unlimited"
	}
	return strconv.FormatInt(n, 10)
}
