// Package kvwatch holds what a user of a kvwatchgen-generated watcher
// names besides the generated code: the watcher, cache and registration
// it hands out (Watcher, Cache, Registration), its events (Event,
// SyncedEvent, Entry, Item, Op, Marker), its options (WithLogger,
// WithBucket, WithCheckpointFile, …), its statistics (Stats) and the
// errors to match (DataError, UnknownKeyError, HandlerError, ScopeError,
// StreamWentBackError, …). A generated watcher watches a NATS JetStream
// Key-Value bucket within scopes, with typed keys and values, served by
// one multi-filter consumer however many scopes and kinds it covers.
//
// The typed client's names are in package kvclient; what only generated
// code calls is in package kvwatchimpl, and may change with each
// generated-code version.
//
// # Guarantees
//
// Per watcher, after etcd's documented watch guarantees, and checked the
// way etcd checks them (TestRobustness: random writes, re-scoping, resumes
// and server faults, validated against the recorded history of writes):
//
//  1. Ordered: live events (not Initial) arrive in strictly increasing
//     revision, across all kinds.
//  2. Unique: no revision is delivered twice while its key stays in scope.
//  3. Reliable: every event is a write of the bucket, with its key, op and
//     value; no write of a key in scope is skipped unless a newer write of
//     the same key replaced it before the watcher read its place (a bucket
//     keeping one revision a key) or a purge rolled it up; the newest write
//     of every key in scope is always delivered.
//  4. Exact at every sync point: at OnSynced, when SetScopes returns, and
//     when a resumed watcher is synced, the caches are the bucket's state
//     as of Stats().LastRevision within the scopes: no stale value, no
//     missing key, no key out of scope.
//  5. Resumable: a watcher resumed from a checkpoint at revision R delivers
//     exactly the changes after R, or re-lists (vanished keys deleted with
//     FinalStateUnknown, changed keys updated); then 4 holds.
//  6. One consumer: never more than one consumer of the watcher on the
//     stream; the next is created only once the last is deleted.
//  7. Clean stop, no hang: after Stop, no goroutine and no consumer of the
//     watcher remain (but a callback running then, which runs nothing
//     after it; Done waits for it too), and every blocking call returns
//     from anywhere user code runs and during faults.
//  8. Never stays wrong: if the stream goes back (a server that lost
//     writes it had acknowledged, a store restored from a backup), the
//     watcher notices before its next consumer, at the end of each
//     catch-up and when resuming, reports a *StreamWentBackError, re-lists
//     and goes on.
//
// # Callbacks
//
// The watcher's own handlers (with OnSynced and OnError), each
// Registration's handlers and each Events loop run their events one at a
// time, in the watcher's order, on a goroutine of their own; the goroutine
// that reads from the server and applies changes to the caches never runs
// user code. So:
//
//   - A callback or a loop body may call any method, Stop included: no
//     method waits for a delivery to the code that called it. SetScopes
//     and WaitRevision return once done, WaitSynced once the caches are
//     exact, AddHandlers and Remove at once; Stop returns without waiting
//     for the callback it was called from (Done waits for it).
//   - A cache is updated before its change is queued for the handlers, so
//     a handler may see the cache ahead of its own event (Stats().Queued
//     says how far), as a client-go lister is ahead of its informer's
//     handlers.
//   - A callback that blocks holds back only its own queue; once a queue
//     holds 256 changes the watcher stops reading from the server until it
//     drains (nothing is lost), unless a caller waits in WaitSynced or
//     WaitRevision, which may be the code holding the queue back.
//   - A handler that panics is reported to OnError as a *HandlerError; the
//     watch goes on.
//   - An entry that cannot be typed is skipped, counted in Stats and
//     reported to OnError and the logger; the watch goes on. A value that
//     does not decode is reported each time (*DataError). A key in scope
//     that matches no template (*UnknownKeyError: during a rollout, a
//     kind that only newer code knows) is reported once, at its first
//     entry, and only the first MaxUnknownKeysReported such keys are
//     (then one more, with Last set); the others, and every later write,
//     are only counted (Stats.UnknownKeys).
//
// # Resuming
//
// A generated watcher's Checkpoint is its caches at one revision; its
// Resume option starts a later watcher from it. The watcher then either
// catches up by delta, when the stream proves that nothing after the
// checkpoint's revision is lost (the same stream, its first sequence at or
// below revision+1, no expiry that could have removed a restored entry
// unseen, the checkpoint's filters covering the watcher's), or re-lists:
// entries other than the checkpoint's are delivered as puts, restored keys
// that no longer exist as deletes with FinalStateUnknown set (their last
// value in Prev), unchanged ones not at all. Stats().Resume says which.
// Events of either path are flagged Initial until the watcher is synced.
// One limit: a purge that removes messages above the stream's first
// sequence (kv.PurgeDeletes of recent delete markers, a stream purge by
// subject) leaves no trace a delta can see; keep PurgeDeletes' threshold
// above your checkpoints' age. WithCheckpointFile keeps a checkpoint on
// disk for you.
package kvwatch
