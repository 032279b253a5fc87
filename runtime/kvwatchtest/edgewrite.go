package kvwatchtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// writeWait is how long a write through Edge.Connect's connection waits
// for the hub's reply before it fails naming ConnectWriter: the edge
// denies the reply, so it never comes, and the round trip to the hub on
// loopback takes milliseconds.
const writeWait = 3 * time.Second

// deniesInbox reports whether replies to nc's inboxes are denied on the
// edge's link to the hub: its requests that the hub answers get no reply.
func (e *Edge) deniesInbox(nc *nats.Conn) bool {
	inbox := nc.NewRespInbox()
	remotes := e.opts.LeafNode.Remotes
	if len(remotes) == 0 {
		return false
	}
	return slices.ContainsFunc(remotes[0].DenyImports, func(deny string) bool {
		prefix, ok := strings.CutSuffix(deny, ">")
		return ok && strings.HasPrefix(inbox, prefix)
	})
}

// watcherJetStream is Edge.Connect's JetStream context when its inbox is
// denied toward the hub: writes (a KV handle's, a publish) that get no
// reply within writeWait fail with an error naming Edge.ConnectWriter,
// instead of waiting for the context's deadline or the default timeout.
// Everything else is the JetStream context's own.
type watcherJetStream struct {
	jetstream.JetStream
}

func (js watcherJetStream) KeyValue(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	kv, err := js.JetStream.KeyValue(ctx, bucket)
	if err != nil {
		return nil, err
	}
	return watcherKV{kv}, nil
}

func (js watcherJetStream) Publish(ctx context.Context, subject string, data []byte, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return write(ctx, func(ctx context.Context) (*jetstream.PubAck, error) {
		return js.JetStream.Publish(ctx, subject, data, opts...)
	})
}

func (js watcherJetStream) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	return write(ctx, func(ctx context.Context) (*jetstream.PubAck, error) {
		return js.JetStream.PublishMsg(ctx, msg, opts...)
	})
}

// watcherKV is a KV handle of a watcherJetStream: its writes fail fast.
type watcherKV struct {
	jetstream.KeyValue
}

func (kv watcherKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return write(ctx, func(ctx context.Context) (uint64, error) { return kv.KeyValue.Put(ctx, key, value) })
}

func (kv watcherKV) PutString(ctx context.Context, key string, value string) (uint64, error) {
	return write(ctx, func(ctx context.Context) (uint64, error) { return kv.KeyValue.PutString(ctx, key, value) })
}

func (kv watcherKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	return write(ctx, func(ctx context.Context) (uint64, error) { return kv.KeyValue.Create(ctx, key, value, opts...) })
}

func (kv watcherKV) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	return write(ctx, func(ctx context.Context) (uint64, error) { return kv.KeyValue.Update(ctx, key, value, revision) })
}

func (kv watcherKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	_, err := write(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, kv.KeyValue.Delete(ctx, key, opts...) })
	return err
}

func (kv watcherKV) Purge(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	_, err := write(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, kv.KeyValue.Purge(ctx, key, opts...) })
	return err
}

// write runs fn with at most writeWait to get its reply. A reply that does
// not come in that time, while ctx goes on, is the hub's reply the edge
// denied: the error says to write through Edge.ConnectWriter.
func write[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	wctx, cancel := context.WithTimeout(ctx, writeWait)
	defer cancel()
	v, err := fn(wctx)
	if err != nil && ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)) {
		err = fmt.Errorf("kvwatchtest: no reply within %s to a write through Edge.Connect's connection: the edge denies replies "+
			"from the hub to its inbox prefix (%s), as docs/fleet.md recommends for watchers; write through Edge.ConnectWriter's connection: %w",
			writeWait, LocalInboxPrefix, err)
	}
	return v, err
}
