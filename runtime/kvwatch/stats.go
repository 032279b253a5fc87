package kvwatch

// Stats is a point-in-time snapshot of a watcher's counters.
type Stats struct {
	// Puts, Deletes and Purges count events delivered (or, for kinds
	// without a handler, applied to the cache).
	Puts, Deletes, Purges uint64
	// DataErrors counts entries skipped because a value did not decode or
	// a key did not parse; UnknownKeys those whose key matches no
	// template; HandlerPanics the handler panics recovered.
	DataErrors, UnknownKeys, HandlerPanics uint64
	// LastRevision is the revision of the last entry applied from the
	// stream: everything up to it has been seen.
	LastRevision uint64
	// Synced reports whether the initial state has been delivered.
	Synced bool
	// Filters is the number of subject filters on the watcher's consumer.
	Filters int
	// InitialState is how the initial state was read: "direct-get" (one
	// batched read without a consumer), "direct-get-listing" (more than
	// 1,024 keys: listed, then read in chunks), "consumer" (the stream
	// does not allow direct get), or "" (not read yet, or nothing to
	// watch).
	InitialState string
}

// Stats returns the watcher's counters. It is safe to call from any
// goroutine, including handlers.
func (w *Watcher) Stats() Stats {
	return Stats{
		Puts:          w.stats.puts.Load(),
		Deletes:       w.stats.deletes.Load(),
		Purges:        w.stats.purges.Load(),
		DataErrors:    w.stats.dataErrors.Load(),
		UnknownKeys:   w.stats.unknownKeys.Load(),
		HandlerPanics: w.stats.handlerPanics.Load(),
		LastRevision:  w.stats.lastRevision.Load(),
		Synced:        w.isSynced(),
		Filters:       len(w.filters),
		InitialState:  w.initialState(),
	}
}
