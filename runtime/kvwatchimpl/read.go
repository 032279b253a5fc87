package kvwatchimpl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/subjects"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is reading a bucket without a watcher and without a consumer:
// the entries of one kind under scopes (List, Keys) and the stored
// revisions of one key (History), by batched direct get. nats.go's
// ListKeysFiltered and History create a consumer for every call, which
// costs the stream's leader what a watcher avoids.

// bucketReader reads one bucket's stream by direct get.
type bucketReader struct {
	js     jetstream.JetStream
	bucket string
	stream jetstream.Stream
	info   *jetstream.StreamInfo
	// prefix is "$KV.<bucket>.", of the origin's bucket for a mirror
	// named otherwise (its messages keep the origin's subjects).
	prefix string
}

func openReader(ctx context.Context, js jetstream.JetStream, bucket string) (*bucketReader, error) {
	if js == nil {
		return nil, kvclient.ErrNoJetStream
	}
	stream, err := js.Stream(ctx, "KV_"+bucket)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, bucketNotFound(js, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("kvwatch: bucket %s: %w", bucket, noJetStream(js, err))
	}
	r := &bucketReader{js: js, bucket: bucket, stream: stream, info: stream.CachedInfo()}
	r.prefix = subjectPrefix(bucket, &r.info.Config)
	if !r.info.Config.AllowDirect && !r.info.Config.MirrorDirect {
		return nil, fmt.Errorf("kvwatch: bucket %s: %w (the stream does not allow direct get)", bucket, directget.ErrNoDirectGet)
	}
	return r, nil
}

// latest reads the newest message at or below upTo of every subject
// matching filters, calling fn for each: the state as of upTo, exact
// however many requests it takes (directget.LatestRead, pinned at upTo).
func (r *bucketReader) latest(ctx context.Context, filters []string, upTo uint64, fn func(*nats.Msg)) error {
	dg := directget.New(r.js, r.stream.CachedInfo().Config.Name, requestTimeout(ctx))
	if err := dg.Open(ctx); err != nil {
		return err
	}
	defer dg.Close()
	read := directget.LatestRead{
		Getter: dg, Stream: r.stream, Filters: filters, UpTo: upTo, Pin: true,
		Apply: func(entries []*nats.Msg) error {
			for _, msg := range entries {
				fn(msg)
			}
			return nil
		},
	}
	_, err := read.Read(ctx)
	var listing *directget.ListingError
	switch {
	case errors.As(err, &listing):
		return fmt.Errorf("kvwatch: %w", err)
	case err != nil:
		return fmt.Errorf("kvwatch: reading bucket %s: %w", r.bucket, err)
	}
	return nil
}

// requestTimeout bounds each direct get request: by ctx's deadline when it
// has one, else as a watcher does by default.
func requestTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Millisecond)
	}
	return config.DefaultWatch().RequestTimeout
}

// kindFilters returns the subject filters of kind's keys within scopes:
// per scope value whose prefix leads the kind's template, the template
// with the value's parameters in place and '*' for the rest.
func kindFilters[K comparable, V any](prefix string, spec *BucketSpec, kind *Kind[K, V], scopes Scopes) ([]string, error) {
	t, err := kind.KeyTemplate()
	if err != nil {
		return nil, err
	}
	all := make([]string, len(t.Params()))
	for i := range all {
		all[i] = "*"
	}
	if scopes.All {
		return []string{prefix + t.Format(all)}, nil
	}
	var out []string
	for _, v := range scopes.Values {
		if v.Scope < 0 || v.Scope >= len(spec.Scopes) {
			return nil, fmt.Errorf("kvwatch: scope %d of bucket %s does not exist", v.Scope, spec.Bucket)
		}
		s := spec.Scopes[v.Scope]
		p, err := CompileTemplate(s.Prefix)
		if err != nil {
			return nil, fmt.Errorf("kvwatch: bucket %s: scope %s: %w", spec.Bucket, s.Name, err)
		}
		names := p.Params()
		if err := checkScopeValues(s.Name, names, v.Params); err != nil {
			return nil, err
		}
		if !p.IsPrefixOf(t) {
			continue // no key of this kind is under this scope
		}
		params := slices.Clone(all)
		for i, name := range t.Params() {
			if j := slices.Index(names, name); j >= 0 {
				params[i] = v.Params[j]
			}
		}
		out = append(out, prefix+t.Format(params))
	}
	normalized, _ := subjects.Normalize(out)
	return normalized, nil
}

// For generated code. List reads the entries of kind within scopes
// (Scopes.All: the whole bucket), sorted by key, by batched direct get and
// without a consumer. They are exact as of the revision returned: the
// stream's last sequence when the read began; every request is pinned at
// it, however many the read takes. An entry whose key or value does not
// decode is left out and reported, as a *DataError joined into the error,
// with the others returned all the same; any other error returns nothing.
func List[K comparable, V any](ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, spec *BucketSpec, kind *Kind[K, V], scopes Scopes) ([]kvwatch.Entry[K, V], uint64, error) {
	var out []kvwatch.Entry[K, V]
	var bad []error
	rev, err := readKind(ctx, js, kv, spec, kind, scopes, func(key string, msg *nats.Msg) {
		k, err := kind.ParseKey(key)
		if err != nil {
			bad = append(bad, &kvwatch.DataError{Kind: kind.Name, Key: key, Revision: directget.HeaderUint(msg, "Nats-Sequence"), Err: err})
			return
		}
		v, err := kind.Codec.Decode(msg.Data)
		if err != nil {
			bad = append(bad, &kvwatch.DataError{Kind: kind.Name, Key: key, Revision: directget.HeaderUint(msg, "Nats-Sequence"), Err: err, Value: msg.Data})
			return
		}
		created, _ := time.Parse(time.RFC3339Nano, msg.Header.Get("Nats-Time-Stamp"))
		out = append(out, kvwatch.Entry[K, V]{Key: k, Value: v, Revision: directget.HeaderUint(msg, "Nats-Sequence"), Created: created})
	})
	if err != nil {
		return nil, 0, err
	}
	slices.SortFunc(out, func(a, b kvwatch.Entry[K, V]) int {
		return strings.Compare(kind.FormatKey(a.Key), kind.FormatKey(b.Key))
	})
	return out, rev, errors.Join(bad...)
}

// For generated code. Keys reads the keys of kind within scopes as List
// does, sorted, without decoding values: a key that does not parse is
// left out and reported as a *DataError joined into the error.
func Keys[K comparable, V any](ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, spec *BucketSpec, kind *Kind[K, V], scopes Scopes) ([]K, uint64, error) {
	var names []string
	rev, err := readKind(ctx, js, kv, spec, kind, scopes, func(key string, _ *nats.Msg) { names = append(names, key) })
	if err != nil {
		return nil, 0, err
	}
	slices.Sort(names)
	out := make([]K, 0, len(names))
	var bad []error
	for _, key := range names {
		k, err := kind.ParseKey(key)
		if err != nil {
			bad = append(bad, &kvwatch.DataError{Kind: kind.Name, Key: key, Err: err})
			continue
		}
		out = append(out, k)
	}
	return out, rev, errors.Join(bad...)
}

// readKind calls fn with every current entry (no delete or purge marker)
// of kind within scopes, as of the revision it returns.
func readKind[K comparable, V any](ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, spec *BucketSpec, kind *Kind[K, V], scopes Scopes, fn func(key string, msg *nats.Msg)) (uint64, error) {
	r, err := openReader(ctx, js, kv.Bucket())
	if err != nil {
		return 0, err
	}
	filters, err := kindFilters(r.prefix, spec, kind, scopes)
	if err != nil || len(filters) == 0 {
		return r.info.State.LastSeq, err
	}
	upTo := r.info.State.LastSeq
	if upTo == 0 {
		return 0, nil // an empty stream: pinning at 0 would mean "not pinned"
	}
	err = r.latest(ctx, filters, upTo, func(msg *nats.Msg) {
		if opOf(msg.Header) != kvwatch.OpPut {
			return
		}
		key, ok := strings.CutPrefix(msg.Header.Get("Nats-Subject"), r.prefix)
		if ok {
			fn(key, msg)
		}
	})
	return upTo, err
}

// For generated code. History reads every stored revision of key, oldest
// first, by direct get and without a consumer: as many as the bucket keeps
// (its history setting), delete and purge markers included. A key never
// written, or purged by the stream, is jetstream.ErrKeyNotFound. A value
// that does not decode is a *DataError, returned with the revisions that
// did.
func History[K comparable, V any](ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, kind *Kind[K, V], key K) ([]kvclient.HistoryEntry[V], error) {
	k, err := checkedKey(kind, key)
	if err != nil {
		return nil, err
	}
	r, err := openReader(ctx, js, kv.Bucket())
	if err != nil {
		return nil, err
	}
	dg := directget.New(r.js, r.info.Config.Name, requestTimeout(ctx))
	if err := dg.Open(ctx); err != nil {
		return nil, err
	}
	defer dg.Close()
	var out []kvclient.HistoryEntry[V]
	var bad []error
	req := directget.Request{Seq: 1, NextBySubj: r.prefix + k, Batch: historyBatch}
	for {
		end, err := dg.Read(req, func(msg *nats.Msg) {
			h := kvclient.HistoryEntry[V]{Op: opOf(msg.Header), Revision: directget.HeaderUint(msg, "Nats-Sequence")}
			h.Created, _ = time.Parse(time.RFC3339Nano, msg.Header.Get("Nats-Time-Stamp"))
			if h.Op == kvwatch.OpPut {
				v, err := kind.Codec.Decode(msg.Data)
				if err != nil {
					bad = append(bad, &kvwatch.DataError{Kind: kind.Name, Key: k, Revision: h.Revision, Err: err, Value: msg.Data})
					return
				}
				h.Value = v
			}
			out = append(out, h)
		})
		switch {
		case errors.Is(err, directget.ErrNoResults):
		case err != nil:
			return nil, fmt.Errorf("kvwatch: history of %s: %w", k, err)
		case end.Pending > 0:
			req.Seq = end.LastSeq + 1
			continue
		}
		break
	}
	if len(out) == 0 && len(bad) == 0 {
		return nil, jetstream.ErrKeyNotFound
	}
	return out, errors.Join(bad...)
}

// historyBatch is the most revisions a KV bucket keeps of a key.
const historyBatch = 64
