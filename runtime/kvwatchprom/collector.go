// Package kvwatchprom exports the statistics of kvwatch watchers
// (kvwatch.Watcher.Stats) as Prometheus metrics. It is a package of its
// own so that runtime/kvwatch does not depend on client_golang: only a
// program that imports kvwatchprom does.
//
// A Collector reads the watchers it was given at scrape time, one
// w.Stats() call each, and keeps no state of its own between scrapes:
// no goroutine, no cache. Generated watchers embed kvwatch.Watcher; add
// that:
//
//	c := kvwatchprom.NewCollector()
//	prometheus.MustRegister(c)
//	w, err := fleetkv.WatchNetwork(ctx, js, scopes, handlers)
//	...
//	if err := c.Add(w.Watcher, "routing"); err != nil { ... }
//	defer c.Remove(w.Watcher)
//
// Every metric carries the labels bucket (the bucket watched, as
// kvwatch.Stats.Bucket names it) and watcher (the name given to Add), so
// that several watchers of one bucket in a process are told apart.
// kvwatch_schema_info, an info metric (always 1), adds the schema of the
// watcher's code and of its bucket as labels (kvwatch.Stats.Schema).
// Counters are named *_total; each metric's Help says what it counts.
package kvwatchprom

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// ErrDuplicate is wrapped by the error Add returns for a watcher already
// added, or for a bucket and watcher name that another watcher has.
var ErrDuplicate = errors.New("kvwatchprom: duplicate watcher")

// Option configures a Collector.
type Option func(*config)

type config struct {
	constLabels prometheus.Labels
}

// WithConstLabels adds labels with fixed values to every metric of the
// collector, e.g. the process's component; several calls add up. Their
// names must be valid label names other than bucket, watcher, kind and
// op: otherwise registering the collector fails, with the reason.
// prometheus.WrapRegistererWith does the same for everything registered
// through it.
func WithConstLabels(labels prometheus.Labels) Option {
	return func(c *config) {
		if c.constLabels == nil {
			c.constLabels = prometheus.Labels{}
		}
		for k, v := range labels {
			c.constLabels[k] = v
		}
	}
}

// Collector is a prometheus.Collector of the statistics of the watchers
// added to it. Register it once (prometheus.Registerer.Register); add and
// remove watchers at any time, from any goroutine. A scrape reports each
// watcher added and not removed, stopped or not: a stopped watcher's
// counters stay as they were, so Remove it when it is done with. The
// zero value is not usable; call NewCollector.
type Collector struct {
	mu       sync.Mutex
	watchers map[kvwatch.Watcher]labels
	names    map[labels]kvwatch.Watcher
	d        descs
}

// labels are the labels that tell one watcher's metrics apart.
type labels struct{ bucket, watcher string }

// NewCollector returns a Collector with no watcher.
func NewCollector(opts ...Option) *Collector {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return &Collector{
		watchers: map[kvwatch.Watcher]labels{},
		names:    map[labels]kvwatch.Watcher{},
		d:        newDescs(cfg.constLabels),
	}
}

// Add adds w to the watchers reported, under the labels bucket (its
// bucket, kvwatch.Stats.Bucket) and watcher=name (e.g. the component that
// runs it). For a generated watcher, pass its embedded kvwatch.Watcher:
// c.Add(w.Watcher, "routing"). Add returns an error, and adds nothing,
// when w is nil, name is empty or not UTF-8, w was added already (under
// any name; wraps ErrDuplicate), or another watcher of the same bucket
// was added under name (wraps ErrDuplicate): their metrics would be
// indistinguishable.
func (c *Collector) Add(w kvwatch.Watcher, name string) error {
	if w == nil {
		return errors.New("kvwatchprom: Add of a nil watcher")
	}
	if name == "" || !utf8.ValidString(name) {
		return fmt.Errorf("kvwatchprom: watcher name %q: want a non-empty UTF-8 string", name)
	}
	l := labels{bucket: w.Bucket(), watcher: name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if had, ok := c.watchers[w]; ok {
		return fmt.Errorf("%w: this watcher of bucket %s was added already, as %q", ErrDuplicate, had.bucket, had.watcher)
	}
	if _, ok := c.names[l]; ok {
		return fmt.Errorf("%w: another watcher of bucket %s was added as %q", ErrDuplicate, l.bucket, l.watcher)
	}
	c.watchers[w] = l
	c.names[l] = w
	return nil
}

// Remove removes w from the watchers reported, and reports whether it was
// there. Its series are gone from the next scrape on; its name is free
// for another watcher of the bucket.
func (c *Collector) Remove(w kvwatch.Watcher) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.watchers[w]
	if ok {
		delete(c.watchers, w)
		delete(c.names, l)
	}
	return ok
}

// Describe sends the descriptors of every metric the collector may
// report (prometheus.Collector). It is a checked collector: the set is
// fixed whatever watchers are added.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.d.all() {
		ch <- d
	}
}

// Collect sends the metrics of every watcher added and not removed
// (prometheus.Collector), from one Stats call each, made now. The mirror
// metrics are sent only for a watcher whose bucket is a mirror
// (Stats.Mirror set).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	type added struct {
		w kvwatch.Watcher
		l labels
	}
	c.mu.Lock()
	ws := make([]added, 0, len(c.watchers))
	for w, l := range c.watchers {
		ws = append(ws, added{w, l})
	}
	c.mu.Unlock()
	for _, a := range ws {
		c.collect(ch, a.w.Stats(), a.l)
	}
}

// collect sends the metrics of one watcher's stats.
func (c *Collector) collect(ch chan<- prometheus.Metric, s kvwatch.Stats, l labels) {
	d := &c.d
	counter := func(desc *prometheus.Desc, v uint64, extra ...string) {
		ch <- metric(desc, prometheus.CounterValue, float64(v), l, extra...)
	}
	gauge := func(desc *prometheus.Desc, v float64, extra ...string) {
		ch <- metric(desc, prometheus.GaugeValue, v, l, extra...)
	}
	for kind, k := range s.Kinds {
		counter(d.events, k.Puts, kind, "put")
		counter(d.events, k.Deletes, kind, "delete")
		counter(d.events, k.Purges, kind, "purge")
		counter(d.dataErrors, k.DataErrors, kind)
		gauge(d.cached, float64(k.Cached), kind)
	}
	counter(d.unknownKeys, s.UnknownKeys)
	counter(d.handlerPanics, s.HandlerPanics)
	counter(d.consumerResets, s.ConsumerResets)
	counter(d.creationRetries, s.CreationRetries)
	counter(d.silentConnections, s.SilentConnections)
	counter(d.cutOffServers, s.CutOffServers)
	counter(d.wentBack, s.StreamWentBack)
	counter(d.received, s.Received)
	gauge(d.pending, float64(s.Pending))
	gauge(d.queued, float64(s.Queued))
	gauge(d.lastRevision, float64(s.LastRevision))
	gauge(d.synced, boolValue(s.Synced))
	gauge(d.filters, float64(s.Filters))
	gauge(d.withoutConsumer, boolValue(s.Consumer == ""))
	sc := s.Schema
	gauge(d.schemaInfo, 1, schemaRevision(sc.Revision, sc.Fingerprint), sc.Fingerprint,
		schemaRevision(sc.BucketRevision, sc.BucketFingerprint), sc.BucketFingerprint)
	gauge(d.schemaBehind, boolValue(sc.Behind))
	if m := s.Mirror; m != nil {
		gauge(d.mirrorStale, boolValue(m.Stale))
		gauge(d.mirrorSinceHeard, m.SinceHeard.Seconds())
		gauge(d.mirrorLag, float64(m.Lag))
	}
}

// metric makes a constant metric; a label value the descriptor refuses
// (not UTF-8: Add and the runtime check theirs) is reported as an invalid
// metric, which fails the scrape with the reason, not the process.
func metric(desc *prometheus.Desc, t prometheus.ValueType, v float64, l labels, extra ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(desc, t, v, append([]string{l.bucket, l.watcher}, extra...)...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return m
}

// schemaRevision is a schema's revision as a label: "" when there is no
// schema (no fingerprint).
func schemaRevision(revision int, fingerprint string) string {
	if fingerprint == "" {
		return ""
	}
	return strconv.Itoa(revision)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// descs are the descriptors of the collector's metrics.
type descs struct {
	events, dataErrors, cached                           *prometheus.Desc
	unknownKeys, handlerPanics, consumerResets, received *prometheus.Desc
	wentBack, queued, silentConnections, cutOffServers   *prometheus.Desc
	pending, lastRevision, synced, filters               *prometheus.Desc
	schemaInfo, schemaBehind                             *prometheus.Desc
	creationRetries, withoutConsumer                     *prometheus.Desc
	mirrorStale, mirrorSinceHeard, mirrorLag             *prometheus.Desc
}

func (d *descs) all() []*prometheus.Desc {
	return []*prometheus.Desc{d.events, d.dataErrors, d.cached,
		d.unknownKeys, d.handlerPanics, d.consumerResets, d.received,
		d.wentBack, d.queued, d.silentConnections, d.cutOffServers,
		d.pending, d.lastRevision, d.synced, d.filters,
		d.schemaInfo, d.schemaBehind,
		d.creationRetries, d.withoutConsumer,
		d.mirrorStale, d.mirrorSinceHeard, d.mirrorLag}
}

func newDescs(constLabels prometheus.Labels) descs {
	desc := func(name, help string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc("kvwatch_"+name, help, append([]string{"bucket", "watcher"}, extra...), constLabels)
	}
	return descs{
		events: desc("events_total",
			"Events the watcher delivered, by kind and op (put, delete, purge): each applied to the kind's cache, then passed to its handler if it has one. "+
				"Initial-state events count, and so do the deletes of keys that left the scopes (SetScopes) or vanished during a re-list; replays a catch-up skipped do not.",
			"kind", "op"),
		dataErrors: desc("data_errors_total",
			"Entries skipped because the value did not decode or the key did not parse as the kind's (each one reported to OnError as a *kvwatch.DataError), by kind.",
			"kind"),
		cached: desc("cached_entries",
			"Entries in the kind's cache now; exact once the watcher is synced.",
			"kind"),
		unknownKeys: desc("unknown_keys_total",
			"Entries skipped because their key, in the watcher's scopes, matches no key template of the schema: typically a kind a newer schema added. Every entry counts; only a key's first is reported (*kvwatch.UnknownKeyError), for the first 100 keys."),
		handlerPanics: desc("handler_panics_total",
			"Handler panics recovered (*kvwatch.HandlerError); the watch went on after each."),
		consumerResets: desc("consumer_resets_total",
			"Times the watcher recreated its consumer after a lost heartbeat, a reconnect or a server restart."),
		silentConnections: desc("silent_connections_total",
			"Times the watcher found its connection up but silent (its heartbeats stopped, a round trip unanswered for 3 s) and made the client reconnect to the next server of its list."),
		cutOffServers: desc("cut_off_servers_total",
			"Times the watcher left a server that for 10 s answered only that it could not speak for its cluster (a node cut off from the others) and made the client reconnect to the next server of its list."),
		wentBack: desc("stream_went_back_total",
			"Times the watcher found its bucket's stream gone back in time (the server lost writes it had acknowledged, or was restored from a backup: *kvwatch.StreamWentBackError) and re-listed. Anything above 0 means the server lost data."),
		queued: desc("queued_events",
			"How far handlers are behind the caches: the most events (and OnSynced or OnError calls) any set of handlers of the watcher has queued and not run yet. Above 256 the watcher stops reading from the server until they catch up."),
		received: desc("received_entries_total",
			"Entries received from the server: initial-state reads and consumer messages, including those then skipped. What watching costs the network; re-scoping adds only the added scopes' entries."),
		pending: desc("pending_entries",
			"Entries known to be waiting: during the initial read, those not delivered yet (progress); afterwards, the messages the server still held for the consumer when it sent the last one handled (lag behind the stream; up to a pull and a half of 1000 more may wait in the client behind a slow handler, besides kvwatch_queued_events)."),
		lastRevision: desc("last_revision",
			"Revision (stream sequence) of the last entry applied in stream order: every change up to it is in the caches, and a checkpoint taken now resumes from it."),
		synced: desc("synced",
			"1 once the watcher's initial state has been delivered (synced), 0 before."),
		creationRetries: desc("consumer_creation_retries_total",
			"Consumer creation requests the watcher sent again: unanswered in time (a server busy with many watchers at once, an election, a node cut off) or refused for now. Summed over a fleet, its rate is how hard a storm presses on the servers."),
		withoutConsumer: desc("without_consumer",
			"1 while the watcher has no consumer on the server: being created, at the start or after a reset (it reads what is written meanwhile by direct get). Summed over a fleet: the watchers a storm holds; 0 again when it is over."),
		filters: desc("consumer_filters",
			"Subject filters on the watcher's consumer; 0 while it watches nothing."),
		schemaInfo: desc("schema_info",
			"Always 1; its labels say which schema the watcher's code was generated from (revision, fingerprint) and which one its bucket's stream records (bucket_revision, bucket_fingerprint: the last CreateOrUpdate…Bucket's, as of the watcher's last stream check). "+
				"A label is empty when unknown: code generated before the schema was written into it, a bucket with no record (an edge's mirror has none: nats-server does not copy metadata to mirrors). count by (revision, fingerprint) shows a fleet's mix.",
			"revision", "fingerprint", "bucket_revision", "bucket_fingerprint"),
		schemaBehind: desc("schema_behind",
			"1 when the bucket records a newer schema than the watcher's code (a higher revision, or the same revision with another fingerprint): the node runs old code, and skips the kinds and ignores the fields it does not know. 0 otherwise."),
		mirrorStale: desc("mirror_stale",
			"Only for a watcher of a mirror (an edge's copy of a hub's bucket): 1 while the mirror has not heard from its origin for longer than kvwatch.WithMirrorStaleAfter (default 10s): its state is as of then. 0 otherwise."),
		mirrorSinceHeard: desc("mirror_since_heard_seconds",
			"Only for a watcher of a mirror: seconds since the mirror last heard from its origin, as of the watcher's last stream check (the server's Mirror.Active) plus the time since; during an outage it grows a second a second."),
		mirrorLag: desc("mirror_lag_messages",
			"Only for a watcher of a mirror: the server's count of messages the mirror is behind its origin, as of the watcher's last stream check. It stays 0 during an outage (the mirror does not know what it misses): watch kvwatch_mirror_stale for that."),
	}
}
