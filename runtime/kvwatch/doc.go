// Package kvwatch is the runtime of kvwatchgen's generated watchers: a
// typed watcher of a NATS JetStream Key-Value bucket within scopes, served
// by one multi-filter consumer however many scopes and kinds it covers.
//
// Users touch what a generated package hands them: the Watcher it embeds
// (WaitSynced, SetScopes, WaitRevision, Checkpoint, Stats, Stop), typed
// Caches (with All, AllIn and ByIndex), Events, Ops and Markers, the
// Registrations of AddHandlers and the AnyEvent of Events, the Options
// (WithBucket, Resume, WithCheckpointFile, WithLogger, …) and those of the
// typed client (CreateIfAbsent, MaxAttempts, AllowDataLoss), the errors (DataError, UnknownKeyError,
// HandlerError, ScopeError, KeyMismatchError, BucketConfigError,
// ErrBucketNotFound, ErrConflicts, ErrBatchDisabled, …), Checkpoint,
// Item, Entry and HistoryEntry. The names whose doc comment begins "For
// generated code" (Start, Bind, Binding, the typed client's Put … Modify,
// List, History, Batch, CreateOrUpdateBucket, EntriesOf, …) exist for
// generated code; what only generated code uses otherwise is in package
// kvwatchimpl, and compat.go keeps code of the previous generated-code
// versions building.
//
// The event goroutine never runs user code: each set of callbacks (the
// watcher's own handlers, a Registration, an Events loop) runs its events
// in order on a goroutine of its own, so every method may be called from
// any callback or loop body, Stop included, and none waits for a delivery
// to the code that called it (listener.go; docs/ARCHITECTURE.md).
//
// The watch guarantees (ordered, unique, reliable, exact at every sync
// point, resumable, one consumer, clean stop, never stale) are stated in the README,
// "Watch guarantees", and checked by TestRobustness. docs/ARCHITECTURE.md
// shows where each mechanism lives.
package kvwatch
