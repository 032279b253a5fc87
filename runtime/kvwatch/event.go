package kvwatch

import "time"

// Op is the operation an event reports.
type Op uint8

const (
	// OpPut is a new value for a key: a create or an update.
	OpPut Op = iota + 1
	// OpDelete is a delete of a key (KV Delete, or a "Remove" marker).
	OpDelete
	// OpPurge is a purge of a key (KV Purge, which also drops its history,
	// or a "MaxAge" or "Purge" marker).
	OpPurge
)

// Marker is the reason the server gives when it, not a client, removed
// an entry and wrote a marker saying so (the Nats-Marker-Reason header),
// which it does on a bucket with a limit marker TTL (KV LimitMarkerTTL,
// the stream's SubjectDeleteMarkerTTL; nats-server 2.11+). Without one, an
// expired or limit-removed entry leaves no trace a watcher can see: it
// stays in the caches until the key is written again or the watcher
// re-reads its state.
type Marker string

// The reasons the server defines. nats-server 2.15.2 writes MaxAge only:
// when an entry's TTL or the bucket's max age expires. Entries removed by
// the bucket's message or byte limits leave no marker.
const (
	// MarkerMaxAge: the entry's TTL (jetstream.KeyTTL) or the bucket's
	// (its MaxAge) expired. Delivered as OpPurge.
	MarkerMaxAge Marker = "MaxAge"
	// MarkerPurge is defined by the server for purges; delivered as
	// OpPurge.
	MarkerPurge Marker = "Purge"
	// MarkerRemove is defined by the server for removals; delivered as
	// OpDelete.
	MarkerRemove Marker = "Remove"
)

// String returns "put", "delete" or "purge".
func (o Op) String() string {
	switch o {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpPurge:
		return "purge"
	}
	return "op(" + itoa(uint64(o)) + ")"
}

// Event is one change of one entry of kind K/V, as delivered to a handler.
//
// Events of one watcher are delivered from a single goroutine, one at a
// time: first the initial state (Initial set, in no particular order), then
// live changes in stream (revision) order across all kinds of the watcher.
// The watcher's cache already reflects an event when its handler runs.
//
// The handler owns Value and Prev: the cache keeps its own copy of Value,
// and Prev is no longer in the cache, so a handler may keep or modify them.
type Event[K comparable, V any] struct {
	// Op is what happened: OpPut, OpDelete or OpPurge.
	Op Op
	// Key is the typed key of the entry.
	Key K
	// Value is the new value for OpPut; the zero value otherwise.
	Value V
	// Prev is the value the watcher knew before this event, when HasPrev:
	// for OpPut the previous value (HasPrev false means the key is new to
	// the watcher), for OpDelete and OpPurge the last known value.
	Prev V
	// HasPrev reports whether Prev holds a value.
	HasPrev bool
	// Revision is the entry's revision: its stream sequence.
	Revision uint64
	// Created is when the server stored this revision.
	Created time.Time
	// Initial is set for events that bring the watcher to its synced
	// state; live changes after sync have it unset.
	Initial bool
	// FinalStateUnknown is set on an OpDelete for a key the watcher held
	// (a resumed watcher's checkpoint, or what a read that failed and was
	// retried had delivered) but that the read no longer finds, when the
	// stream can no longer say how it went (Kubernetes'
	// DeletedFinalStateUnknown): Prev is the last value the watcher knew,
	// Revision the watcher's revision when the read was caught up.
	FinalStateUnknown bool
	// Marker is set on an OpDelete or OpPurge the server wrote rather than
	// a client: the reason it removed the entry (MarkerMaxAge when a TTL
	// expired). Prev is the last value, as for any delete.
	Marker Marker
	// LeftScope is set on an OpDelete that SetScopes delivered for a key
	// outside the watcher's new scopes: the key still exists in the bucket,
	// the watcher no longer watches it. Prev is its last value, Revision
	// the watcher's revision at the change.
	LeftScope bool
}

// itoa formats u without importing strconv into every file that needs it.
func itoa(u uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			return string(b[i:])
		}
	}
}

// Item is one cached entry: the current value of a key and its revision.
type Item[V any] struct {
	Value    V
	Revision uint64
	Created  time.Time
}

// Entry is an Item with its key, as listed by a Cache or kept in a
// checkpoint. It encodes to JSON when K and V do.
type Entry[K comparable, V any] struct {
	Key      K         `json:"key"`
	Value    V         `json:"value"`
	Revision uint64    `json:"revision"`
	Created  time.Time `json:"created"`
}

// AnyEvent is an event of any kind of a watcher's stream (the generated
// watcher's Events):
// an Event[K, V] of one of its kinds (the generated XEvent types), or
// SyncedEvent. A type switch over the generated event types reads it:
//
//	for ev := range w.Events(ctx) {
//		switch ev := ev.(type) {
//		case fleetkv.RouteEvent:
//		case fleetkv.VPCConfigEvent:
//		case kvwatch.SyncedEvent:
//		}
//	}
type AnyEvent interface{ anyEvent() }

func (Event[K, V]) anyEvent() {}

// SyncedEvent is the stream's mark that the initial events are over: the
// stream's OnSynced.
type SyncedEvent struct{}

func (SyncedEvent) anyEvent() {}
