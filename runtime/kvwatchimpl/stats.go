package kvwatchimpl

import "github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"

// Stats returns the watcher's counters. It is safe to call from any
// goroutine, including handlers.
func (w *Watcher) Stats() kvwatch.Stats {
	s := kvwatch.Stats{
		Bucket:            w.bucket,
		Kinds:             make(map[string]kvwatch.KindStats, len(w.bindings)),
		UnknownKeys:       w.stats.unknownKeys.Load(),
		HandlerPanics:     w.stats.handlerPanics.Load(),
		ConsumerResets:    w.stats.consumerResets.Load(),
		CreationRetries:   w.stats.creationRetries.Load(),
		SilentConnections: w.stats.silentConnections.Load(),
		CutOffServers:     w.stats.cutOffServers.Load(),
		StreamWentBack:    w.stats.wentBack.Load(),
		Pending:           w.stats.pending.Load(),
		Received:          w.stats.received.Load(),
		Synced:            w.isSynced(),
		Filters:           len(w.currentFilters()),
		Consumer:          w.consumer.current(),
		Mirror:            w.mirror.snapshot(),
		Schema:            w.schemaStats(),
	}
	w.state.mu.RLock()
	s.LastRevision = w.state.revision
	for _, b := range w.bindings {
		c := b.counters()
		k := kvwatch.KindStats{Puts: c.puts.Load(), Deletes: c.deletes.Load(), Purges: c.purges.Load(),
			DataErrors: c.dataErrors.Load(), Cached: b.lenLocked()}
		s.Kinds[b.kindName()] = k
		s.Puts += k.Puts
		s.Deletes += k.Deletes
		s.Purges += k.Purges
		s.DataErrors += k.DataErrors
	}
	w.state.mu.RUnlock()
	// After LastRevision: every change up to it was queued by then.
	s.Queued = w.queuedMost()
	w.mu.Lock()
	s.InitialState, s.Resume = w.statePath, w.resumePath
	w.mu.Unlock()
	return s
}
