package kvwatchimpl

import (
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// KV headers, as written by nats.go and the server.
const (
	kvOperationHeader  = "KV-Operation"       // "DEL" or "PURGE"; absent for a put
	markerReasonHeader = "Nats-Marker-Reason" // server markers (TTL, purge)
)

// opOf returns the KV operation a message's headers describe.
func opOf(h nats.Header) kvwatch.Op {
	op, _ := entryOp(h)
	return op
}

// entryOp returns the KV operation a message's headers describe, as
// nats.go's own KV watcher reads them: KV-Operation first, then server
// markers ("MaxAge" and "Purge" are purges, "Remove" a delete), whose
// reason it returns too.
func entryOp(h nats.Header) (kvwatch.Op, kvwatch.Marker) {
	if len(h) == 0 {
		return kvwatch.OpPut, ""
	}
	switch h.Get(kvOperationHeader) {
	case "DEL":
		return kvwatch.OpDelete, ""
	case "PURGE":
		return kvwatch.OpPurge, ""
	}
	switch m := kvwatch.Marker(h.Get(markerReasonHeader)); m {
	case kvwatch.MarkerMaxAge, kvwatch.MarkerPurge:
		return kvwatch.OpPurge, m
	case kvwatch.MarkerRemove:
		return kvwatch.OpDelete, m
	}
	return kvwatch.OpPut, ""
}

// directEntry turns one direct-get reply into a raw entry of this bucket;
// ok is false when its subject is not in the bucket.
func (w *Watcher) directEntry(msg *nats.Msg) (e rawEntry, ok bool) {
	key, ok := w.keyOf(msg.Header.Get("Nats-Subject"))
	if !ok {
		return rawEntry{}, false
	}
	created, _ := time.Parse(time.RFC3339Nano, msg.Header.Get("Nats-Time-Stamp"))
	op, marker := entryOp(msg.Header)
	return rawEntry{
		key:      key,
		value:    msg.Data,
		op:       op,
		marker:   marker,
		revision: directget.HeaderUint(msg, "Nats-Sequence"),
		created:  created,
	}, true
}
