package kvwatchimpl

import (
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/internal/kvheaders"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// opOf returns the KV operation a message's headers describe.
func opOf(h nats.Header) kvwatch.Op {
	op, _ := kvheaders.EntryOp(h)
	return op
}

// directEntry turns one direct-get reply into a raw entry of this bucket;
// ok is false when its subject is not in the bucket.
func (w *Watcher) directEntry(msg *nats.Msg) (e rawEntry, ok bool) {
	key, ok := w.keyOf(msg.Header.Get("Nats-Subject"))
	if !ok {
		return rawEntry{}, false
	}
	created, _ := time.Parse(time.RFC3339Nano, msg.Header.Get("Nats-Time-Stamp"))
	op, marker := kvheaders.EntryOp(msg.Header)
	return rawEntry{
		key:      key,
		value:    msg.Data,
		op:       op,
		marker:   marker,
		revision: directget.HeaderUint(msg, "Nats-Sequence"),
		created:  created,
	}, true
}
