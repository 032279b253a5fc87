// Package kvwatch is the runtime of kvwatchgen's generated watchers: a
// typed watcher of a NATS JetStream Key-Value bucket within scopes, served
// by one multi-filter consumer however many scopes and kinds it covers.
//
// Users touch what a generated package hands them: the Watcher it embeds
// (WaitSynced, SetScopes, WaitRevision, Checkpoint, Stats, Stop), typed
// Caches, Events and Ops, the Options (WithBucket, Resume, WithLogger, …),
// the errors (DataError, UnknownKeyError, HandlerError, ScopeError,
// ErrBucketNotFound, KeyMismatchError, …) and Checkpoint. Start, Bind,
// Binding, AnyBinding, Put, Get, Delete, EntriesOf and WithEntries exist
// for generated code and say so; what only generated code uses otherwise is
// in package kvwatchimpl, and compat.go keeps code of the previous
// generated-code versions building.
//
// The watch guarantees (ordered, unique, reliable, exact at every sync
// point, resumable, one consumer, clean stop) are stated in the README,
// "Watch guarantees", and checked by TestRobustness. docs/ARCHITECTURE.md
// shows where each mechanism lives.
package kvwatch
