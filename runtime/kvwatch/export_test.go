package kvwatch

// WithSyncPointHook makes a watcher call f, on its event goroutine, with a
// checkpoint of its caches at every sync point: when it is synced, and
// when a SetScopes change is sealed. The robustness test checks each
// against the recorded history of writes.
func WithSyncPointHook(f func(Checkpoint)) Option {
	return func(c *config) { c.onSyncPoint = f }
}
