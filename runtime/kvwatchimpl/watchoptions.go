package kvwatchimpl

import (
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// For generated code (from the generated Handlers' OnSynced). OnSynced
// sets a function called once, on the goroutine of the watcher's own
// handlers, right after the last initial event and before the first live
// one; the caches are held at the sync point meanwhile (see
// Watcher.SetScopes and Stats.Queued).
func OnSynced(f func()) kvwatch.Option {
	return func(c *config.Watch) { c.OnSynced = f }
}

// For generated code (from the generated Handlers' OnError). OnError sets
// a function called, on the goroutine of the watcher's own handlers and in
// order with their events, for every entry the watcher skips
// (*kvwatch.DataError; *kvwatch.UnknownKeyError once per key, for at most
// kvwatch.MaxUnknownKeysReported keys and one more), every recovered handler
// panic (*kvwatch.HandlerError), a checkpoint file it cannot load
// (*kvwatch.CheckpointFileError), a stream that went back
// (*kvwatch.StreamWentBackError) and the terminal error if the watch ends
// on its own (after every event before it).
func OnError(f func(error)) kvwatch.Option {
	return func(c *config.Watch) { c.OnError = f }
}
