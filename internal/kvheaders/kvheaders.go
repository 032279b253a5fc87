// Package kvheaders reads what a KV entry's headers say it is: a put, a
// delete or a purge, written by a client or by the server. The watcher
// and the live tools (verify, watch, describe) read entries with it, so
// that a tool never shows an entry the watcher would not.
package kvheaders

import (
	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// The KV headers, as written by nats.go and the server.
const (
	Operation    = "KV-Operation"       // "DEL" or "PURGE"; absent for a put
	MarkerReason = "Nats-Marker-Reason" // server markers (TTL, limits, purge)
)

// EntryOp returns the KV operation a message's headers describe, as
// nats.go's own KV watcher reads them: KV-Operation first, then the
// server's markers ("MaxAge" and "Purge" are purges, "Remove" a delete),
// whose reason it returns too.
func EntryOp(h nats.Header) (kvwatch.Op, kvwatch.Marker) {
	if len(h) == 0 {
		return kvwatch.OpPut, ""
	}
	switch h.Get(Operation) {
	case "DEL":
		return kvwatch.OpDelete, ""
	case "PURGE":
		return kvwatch.OpPurge, ""
	}
	switch m := kvwatch.Marker(h.Get(MarkerReason)); m {
	case kvwatch.MarkerMaxAge, kvwatch.MarkerPurge:
		return kvwatch.OpPurge, m
	case kvwatch.MarkerRemove:
		return kvwatch.OpDelete, m
	}
	return kvwatch.OpPut, ""
}
