package kvwatchimpl

import (
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// This file is atomic batches as a watcher sees them. A batch published
// atomically (nats-server 2.12+, a stream with AllowAtomicPublish; the
// generated client's Batch) is stored with its messages marked: each
// carries Nats-Batch-Id, and the last one Nats-Batch-Commit. The tail
// holds a batch's entries until it has them all, then applies them to the
// caches under one lock (deliverBatch), so that no cache reader and no
// checkpoint sees part of a batch, as etcd's watch is atomic per
// transaction. The batch is complete at its committing message, or,
// when the watcher's scopes leave that one out, at the next message of
// another batch or of none. With nothing of it pending, the tail waits
// for the rest up to batchWait and then applies what it holds: the server
// stores a batch's messages one after another, and a consumer can deliver
// the first before the last is stored; a batch whose committing write is
// out of scope and that nothing follows is applied that much later.
//
// A batch held when the tail ends (SetScopes, a consumer reset) is not
// applied: the next consumer starts after the watcher's revision, before
// it, and delivers it again. The typed client marks each message with
// marks of its own too (ownBatchIDHeader), which mirrors keep: a watcher
// of an edge's mirror applies its batches at once as well.
//
// What is not atomic: a state read (the initial read, SetScopes adding
// scopes) delivers each key's newest entry, and the catch-up right after
// it may apply a batch the read overlapped in parts; a batch whose rest
// the tail waited batchWait for in vain; a batch written otherwise than by
// the typed client, watched on a mirror (which drops the server's marks),
// is applied entry by entry.

const (
	batchIDHeader     = "Nats-Batch-Id"
	batchCommitHeader = "Nats-Batch-Commit"
	// The typed client's own marks of a batch's messages, which mirrors
	// keep (they drop Nats-Batch-*: nats-server, "remove batch headers on
	// source/mirror"): its id, and each message's position and the count
	// ("3/5"), so that a watcher of an edge's mirror applies a batch at
	// once too.
	ownBatchIDHeader  = "Kvwatch-Batch-Id"
	ownBatchPosHeader = "Kvwatch-Batch-Pos"
	// batchWait bounds the wait for the rest of a batch once nothing is
	// pending: long enough for a server storing it, short next to the
	// latency of a change reaching a fleet's nodes.
	batchWait = 100 * time.Millisecond
)

// pendingBatch is the batch the tail is collecting. It only holds
// entries: the tail applies them (applyHeld) and advances its plan.
type pendingBatch struct {
	id      string
	entries []rawEntry
}

// held reports whether entries of a batch are held.
func (b *pendingBatch) held() bool { return len(b.entries) > 0 }

// mark returns the batch e belongs to ("" for none) and whether e is its
// last message. The entries of a state (a last-per-subject delivery) are
// each a key's newest, not a batch's, whatever their marks.
func (b *pendingBatch) mark(e rawEntry, hdr nats.Header) (id string, last bool) {
	if len(hdr) == 0 || e.state {
		return "", false
	}
	return batchMark(hdr)
}

// closes reports whether an entry of batch id (or of none) ends the batch
// held: a message of another batch, or of none, comes after all of it.
func (b *pendingBatch) closes(id string) bool { return b.id != "" && id != b.id }

// hold adds e, of batch id, to the entries held.
func (b *pendingBatch) hold(id string, e rawEntry) {
	b.id = id
	b.entries = append(b.entries, e)
}

// reset forgets the entries held (keeping the slice's room).
func (b *pendingBatch) reset() {
	clear(b.entries)
	b.id, b.entries = "", b.entries[:0]
}

// batchMark returns the batch a message belongs to, if any, and whether it
// is the batch's last: the server's marks, or the typed client's own
// where a mirror dropped the server's.
func batchMark(hdr nats.Header) (id string, last bool) {
	if id := hdr.Get(batchIDHeader); id != "" {
		return id, hdr.Get(batchCommitHeader) != ""
	}
	id = hdr.Get(ownBatchIDHeader)
	if id == "" {
		return "", false
	}
	pos, count, ok := strings.Cut(hdr.Get(ownBatchPosHeader), "/")
	return id, ok && pos == count
}
