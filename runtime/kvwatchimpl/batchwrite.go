package kvwatchimpl

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/internal/kvheaders"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
)

// This file is writing several keys atomically: an atomic batch publish
// (nats-server 2.12+, ADR-50), which nats.go v1.55.0 has no API for, so
// the messages are plain requests here. The server stores all of a batch
// or none of it, and only on a stream that allows it (AllowAtomicPublish).

// For generated code. Batch collects writes to one bucket, applied
// atomically by Commit: all or none. A watcher applies a batch its
// consumer delivers to its caches at once, under one lock, and then calls
// the handlers in order. Not atomic for watchers: a state read (the
// initial read, SetScopes adding scopes) and the catch-up right after it,
// which may take a batch the read overlapped in parts, and a watcher of
// a mirror (the server drops batch marks when mirroring). Not safe for
// concurrent use; one Batch commits once.
type Batch struct {
	js   jetstream.JetStream
	kv   jetstream.KeyValue
	msgs []*nats.Msg // subjects are keys until Commit
	err  error       // the first key or value that could not be written
	done bool
}

// For generated code. NewBatch starts a batch of writes to kv, sent
// through js.
func NewBatch(js jetstream.JetStream, kv jetstream.KeyValue) *Batch {
	return &Batch{js: js, kv: kv}
}

// For generated code. BatchPut adds a put of value under key.
func BatchPut[K comparable, V any](b *Batch, kind *Kind[K, V], key K, value V) {
	k, data, err := encodeEntry(kind, key, value)
	b.add(k, data, nil, err)
}

// For generated code. BatchUpdate adds a put of value under key that
// commits only if key is still at revision; a revision of 0 means the key
// must not exist.
func BatchUpdate[K comparable, V any](b *Batch, kind *Kind[K, V], key K, value V, revision uint64) {
	k, data, err := encodeEntry(kind, key, value)
	b.add(k, data, nats.Header{jetstream.ExpectedLastSubjSeqHeader: {strconv.FormatUint(revision, 10)}}, err)
}

// For generated code. BatchDelete adds a delete of key (purge: a purge,
// which drops its history too).
func BatchDelete[K comparable, V any](b *Batch, kind *Kind[K, V], key K, purge bool) {
	k, err := checkedKey(kind, key)
	h := nats.Header{kvheaders.Operation: {"DEL"}}
	if purge {
		h = nats.Header{kvheaders.Operation: {"PURGE"}, jetstream.MsgRollup: {jetstream.MsgRollupSubject}}
	}
	b.add(k, nil, h, err)
}

func (b *Batch) add(key string, data []byte, h nats.Header, err error) {
	if b.err == nil && err != nil {
		b.err = err
	}
	if h == nil {
		h = nats.Header{}
	}
	b.msgs = append(b.msgs, &nats.Msg{Subject: key, Data: data, Header: h})
}

// Len returns the number of writes in the batch.
func (b *Batch) Len() int { return len(b.msgs) }

// Commit sends the batch and returns the revision of its last write: the
// server stores every write of it at consecutive revisions, or none. It
// fails, sending nothing, if a key or value could not be written, and
// with ErrBatchDisabled on a stream that does not allow batches. A
// conflict of an update matches jetstream.ErrKeyRevisionMismatch; nothing
// of the batch is stored then.
func (b *Batch) Commit(ctx context.Context) (uint64, error) {
	switch {
	case b.done:
		return 0, errors.New("kvwatch: batch committed already")
	case b.err != nil:
		return 0, fmt.Errorf("kvwatch: batch: %w", b.err)
	case len(b.msgs) == 0:
		return 0, errors.New("kvwatch: empty batch")
	case b.js == nil:
		return 0, kvclient.ErrNoJetStream
	}
	b.done = true
	prefix, err := putPrefix(ctx, b.js, b.kv)
	if err != nil {
		return 0, err
	}
	id := rand.Text()
	nc := b.js.Conn()
	for i, m := range b.msgs {
		m.Subject = prefix + m.Subject
		m.Header.Set(batchIDHeader, id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		// Kept by mirrors, which drop the server's (batch.go).
		m.Header.Set(ownBatchIDHeader, id)
		m.Header.Set(ownBatchPosHeader, strconv.Itoa(i+1)+"/"+strconv.Itoa(len(b.msgs)))
		last := i == len(b.msgs)-1
		if last {
			m.Header.Set(batchCommitHeader, "1")
		}
		reply, err := nc.RequestMsgWithContext(ctx, m)
		if err != nil {
			return 0, fmt.Errorf("kvwatch: batch write %d of %d: %w", i+1, len(b.msgs), err)
		}
		if !last && len(reply.Data) == 0 {
			continue // stored, pending the commit
		}
		seq, err := batchAck(reply.Data)
		if err != nil {
			return 0, fmt.Errorf("kvwatch: batch write %d of %d: %w", i+1, len(b.msgs), err)
		}
		if last {
			return seq, nil
		}
	}
	return 0, errors.New("kvwatch: batch: no acknowledgement of its commit")
}

// batchAck parses the server's answer to a batch's message: the commit's
// publish acknowledgement, or an error.
func batchAck(data []byte) (uint64, error) {
	var ack struct {
		Seq   uint64 `json:"seq"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     uint16 `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &ack); err != nil {
		return 0, fmt.Errorf("unreadable answer %q: %w", data, err)
	}
	if e := ack.Error; e != nil {
		apiErr := &jetstream.APIError{Code: e.Code, ErrorCode: jetstream.ErrorCode(e.ErrCode), Description: e.Description}
		switch {
		case e.ErrCode == atomicPublishDisabled:
			return 0, fmt.Errorf("%w: %w", kvclient.ErrBatchDisabled, apiErr)
		case apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant:
			return 0, fmt.Errorf("%w: %w", jetstream.ErrKeyRevisionMismatch, apiErr)
		}
		return 0, apiErr
	}
	return ack.Seq, nil
}

// atomicPublishDisabled is the server's error code for a batch sent to a
// stream that does not allow them (nats-server JSAtomicPublishDisabledErr).
const atomicPublishDisabled = 10174

// putPrefix returns what a write's subject starts with, as nats.go's KV
// writes do (mapStreamToKVS): the bucket's subjects, the origin's for a
// mirror (subjectPrefix), behind the mirror's external API prefix across
// domains, else behind the JetStream API prefix when it is not the default.
func putPrefix(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue) (string, error) {
	stream, err := js.Stream(ctx, "KV_"+kv.Bucket())
	if err != nil {
		return "", fmt.Errorf("kvwatch: batch: bucket %s: %w", kv.Bucket(), noJetStream(js, err))
	}
	cfg := stream.CachedInfo().Config
	pre := subjectPrefix(kv.Bucket(), &cfg)
	switch m, api := cfg.Mirror, directget.APIPrefix(js); {
	case m != nil && m.External != nil && m.External.APIPrefix != "":
		pre = m.External.APIPrefix + "." + pre
	case api != "$JS.API.":
		pre = api + pre
	}
	return pre, nil
}
