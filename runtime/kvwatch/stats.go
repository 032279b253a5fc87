package kvwatch

import "time"

// CheckpointFileStats describes a watcher's checkpoint file
// (Watcher.CheckpointFileStats).
type CheckpointFileStats struct {
	// Path is the file; "" when the watcher has none.
	Path string
	// Loaded is set when the watcher started from the file (Stats().Resume
	// says whether by delta or by re-list). LoadError is why it did not,
	// when the file was there (a *CheckpointFileError).
	Loaded    bool
	LoadError error
	// Saves and Failures count the saves that succeeded and failed.
	Saves, Failures uint64
	// LastSave is when the last successful save ended; LastRevision is
	// its checkpoint's revision, LastSize the file's size in bytes and
	// LastDuration how long encoding and writing took.
	LastSave     time.Time
	LastRevision uint64
	LastSize     int64
	LastDuration time.Duration
	// LastError is the last failed save (a *CheckpointFileError), nil
	// once a save succeeded after it.
	LastError error
}

// MirrorStats is what a watcher knows of its bucket's stream when it is a
// mirror (Stats.Mirror): an edge server's copy of a hub's bucket.
type MirrorStats struct {
	// Origin is the stream mirrored, e.g. "KV_network", and External
	// the API prefix it is reached by across domains, e.g. "$JS.hub.API"
	// ("" in the same domain).
	Origin, External string
	// SinceHeard is how long the mirror has not heard from its origin, as
	// far as the watcher knows: the server's Mirror.Active at the last
	// check that reported one, plus the time since. During an outage the
	// server reports Active as -1 (not heard since its link to the origin
	// was set up again) or a growing one, and Lag stays 0 (the mirror does
	// not know what it misses): SinceHeard grows a second a second.
	SinceHeard time.Duration
	// Lag is the server's count of messages the mirror is behind.
	Lag uint64
	// Stale is set while SinceHeard is above WithMirrorStaleAfter.
	Stale bool
	// CheckedAt is when the stream was last asked.
	CheckedAt time.Time
}

// SchemaStats says which schema a watcher's generated code comes from,
// and which one configured its bucket (Stats.Schema): during a rollout,
// which nodes still run code of an older schema.
type SchemaStats struct {
	// Revision is the revision the watcher's own schema declares
	// (revision:, 0 when none), and Fingerprint the bucket's fingerprint
	// in it (16 hex digits: its kinds, scopes and config), both written
	// into the generated code. Fingerprint is "" for code generated before
	// kvwatchgen wrote them (generated-code version 5): nothing is
	// compared then.
	Revision    int
	Fingerprint string
	// BucketRevision and BucketFingerprint are the schema the bucket's
	// stream records, in its metadata (kvwatchgen.schema.revision and
	// kvwatchgen.schema.fingerprint), written by the generated
	// CreateOrUpdate…Bucket: 0 and "" when none is recorded. They are as
	// of the last stream info the watcher read, with no request of their
	// own: at Start, and again whenever it checks its stream (its consumer
	// recreated, the end of a catch-up, SetScopes adding a scope,
	// WaitRevision asking the stream, a mirror's periodic check). On an
	// edge's mirror they are the mirror's own metadata: nats-server does
	// not copy a stream's metadata to its mirrors, neither when it creates
	// one nor when the origin's changes.
	BucketRevision    int
	BucketFingerprint string
	// Behind is set when the bucket records a newer schema than the
	// watcher's: a higher revision, or the same revision with another
	// fingerprint (a change made without raising revision:, where which
	// is newer cannot be told). The watcher logs it once, at WARN.
	Behind bool
}

// Stats is a point-in-time snapshot of a watcher's counters.
type Stats struct {
	// Bucket is the name of the bucket watched, as Watcher.Bucket returns
	// it: the schema's, or the one WithBucket gave (an edge's mirror may
	// be named otherwise than its origin, see Mirror).
	Bucket string
	// Kinds holds the counters of each kind, by kind name.
	Kinds map[string]KindStats
	// Puts, Deletes and Purges are the sums over Kinds of the events
	// delivered (applied to the cache, when a kind has no handler).
	Puts, Deletes, Purges uint64
	// DataErrors counts entries skipped because a value did not decode or
	// a key did not parse (sum over Kinds), each one reported;
	// UnknownKeys those whose key matches no template, every one of them
	// though only a key's first is reported (see UnknownKeyError), and an
	// entry read again (a re-list, a scope added back) counts again;
	// HandlerPanics the handler panics recovered.
	DataErrors, UnknownKeys, HandlerPanics uint64
	// ConsumerResets counts how often the consumer was recreated after a
	// lost heartbeat, a reconnect or a server restart.
	ConsumerResets uint64
	// CreationRetries counts the consumer creation requests sent again:
	// unanswered in time (a server busy with thousands of watchers at
	// once, an election, a node cut off) or refused for now (JetStream
	// not ready, the stream's leader moving). Its rate across a fleet is
	// how hard a storm presses on the servers; Consumer is "" meanwhile.
	CreationRetries uint64
	// SilentConnections counts the times the watcher found its connection
	// silent (up, but a round trip unanswered for 3 s after its
	// heartbeats stopped or a request went unanswered) and made the
	// client reconnect (docs/operations.md).
	SilentConnections uint64
	// CutOffServers counts the times the watcher left a server that for
	// 10 s answered only that it could not speak for its cluster (no meta
	// leader it could reach, or a stream's info from a replica behind: a
	// node cut off from the others) and made the client reconnect to the
	// next server of its list (docs/operations.md).
	CutOffServers uint64
	// StreamWentBack counts the times the watcher found its stream gone
	// back in time (it lost acknowledged writes, or was restored from a
	// backup: *StreamWentBackError) and re-listed.
	StreamWentBack uint64
	// LastRevision is the revision of the last entry applied in stream
	// order: every change up to it is in the caches. A checkpoint taken
	// now would resume from it.
	LastRevision uint64
	// Pending is how much is known to be waiting: during the initial read,
	// entries not yet delivered (progress); afterwards, the messages the
	// server still held for the consumer when it sent the last message
	// handled (lag behind the stream; up to one pull of 1,000 messages
	// more may wait in the client, where a slow handler holds them back).
	Pending uint64
	// Queued is how far the handlers are behind the caches: the most
	// changes (and OnSynced or OnError calls) any set of handlers (the
	// watcher's own, a registration's, an Events loop) has queued and not
	// run yet. The caches hold every change up to LastRevision; once
	// Queued is 0 as well, every handler has run them. Above 256 the
	// watcher stops reading from the server until the handlers catch up
	// (backpressure), unless a caller waits for it (WaitSynced,
	// WaitRevision, SetScopes).
	Queued uint64
	// Received counts the entries received from the server: initial
	// state reads and consumer messages, those the watcher then passes
	// over included (the keys of other scopes a whole-bucket read
	// delivers, entries a seal had delivered already). It is what
	// watching costs the network; re-scoping adds only the added scopes'
	// entries to it.
	Received uint64
	// Synced reports whether the initial state has been delivered.
	Synced bool
	// Filters is the number of subject filters on the watcher's consumer.
	Filters int
	// Mirror describes the bucket's stream when it is a mirror (an edge's
	// copy of a hub's bucket), nil otherwise.
	Mirror *MirrorStats
	// Schema says which schema the watcher's code and the bucket come
	// from.
	Schema SchemaStats
	// Consumer is the name of the watcher's consumer on the server, ""
	// while it has none (being created, at the start or after a reset:
	// the watcher reads what is written meanwhile by direct get). The watcher's consumers are named
	// kvw_<unique token>_<n>, one at a time, n counting the recreations.
	Consumer string
	// InitialState is how the initial state was read: "direct-get"
	// (batched reads without a consumer), "direct-get-listing" (a scope
	// held more than 1,024 keys: listed, then read in chunks), "consumer"
	// (the watcher's consumer's own last-per-subject delivery: a state of
	// more than 1,024 keys whose scopes hold at least half of the bucket,
	// read on the whole bucket, or a stream that does not allow direct
	// get), "resume" (the delta after a checkpoint), or "" (not read yet,
	// or nothing to watch).
	InitialState string
	// Resume is how a watcher started from a checkpoint caught up: "delta"
	// (only the changes after the checkpoint's revision), "relist" (the
	// stream could no longer prove that delta complete: the state was
	// re-read, changes delivered, vanished keys deleted with
	// FinalStateUnknown), or "" (not resumed).
	Resume string
}

// KindStats are the counters of one kind.
type KindStats struct {
	Puts, Deletes, Purges, DataErrors uint64
	// Cached is the number of entries in the kind's cache.
	Cached int
}
