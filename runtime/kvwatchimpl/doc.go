// Package kvwatchimpl is the part of the kvwatchgen runtime that generated
// code calls and people do not: the watcher's engine (Start and the
// Watcher it returns: catch-up plans and their seal, its one consumer, the
// caches, re-scoping, listeners, checkpoints), the typed client's
// operations (Put … Modify, List, History, batches, bucket
// configuration), descriptions of kinds and buckets (Kind, BucketSpec),
// value codecs and the JSON decoder generated code drives, deep copies,
// typed key parameters, and the version guard.
//
// For generated code only. Nothing here is part of kvwatchgen's user API,
// and it has no compatibility promise other than this: generated code of
// the versions from MinVersion to MaxVersion builds with it (see the
// version guard in version.go, and docs/compatibility.md). Use package
// kvwatch (watchers, caches, events, options, errors), package kvclient
// (the typed client's options and errors) and the generated package
// instead.
//
// The engine's design (where each mechanism lives, the walks through a
// re-scoping and a message) is in docs/ARCHITECTURE.md.
package kvwatchimpl
