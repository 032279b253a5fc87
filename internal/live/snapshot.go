package live

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/internal/kvheaders"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file reads a bucket's current state without a consumer, as the
// watcher's initial read by direct get does, with the same reader
// (internal/directget): batched direct gets (multi_last) of at most 1,024
// keys each, every one pinned at the revision the read is as of. Unlike
// the watcher, it lists every key first (the stream's info with a subject
// filter): that gives the total a long read shows its progress against,
// and requests of explicit keys that are never refused for matching too
// many.

// liveBucket is a bucket's stream as found on the server.
type liveBucket struct {
	name   string // the live bucket's
	stream jetstream.Stream
	info   *jetstream.StreamInfo
	// prefix is "$KV.<bucket>.", of the origin's bucket for a mirror named
	// otherwise (its messages keep the origin's subjects).
	prefix string
	// direct is the stream whose direct gets answer reads: the bucket's,
	// or the origin's for a mirror that answers only for its origin.
	direct string
}

// openBucket finds bucket name's stream.
func (s *session) openBucket(ctx context.Context, name string) (*liveBucket, error) {
	ctx, done := s.op(ctx, true)
	defer done()
	st, err := s.js.Stream(ctx, "KV_"+name)
	if err != nil {
		return nil, s.explain(ctx, name, err)
	}
	b := &liveBucket{name: name, stream: st, info: st.CachedInfo(), prefix: "$KV." + name + ".", direct: "KV_" + name}
	cfg := b.info.Config
	if cfg.MaxMsgsPerSubject < 1 || (len(cfg.Subjects) == 0 && cfg.Mirror == nil) {
		return nil, fmt.Errorf("stream KV_%s is not a KV bucket (no history per key, or no subjects)", name)
	}
	if m := cfg.Mirror; m != nil {
		if origin, ok := strings.CutPrefix(m.Name, "KV_"); ok {
			b.prefix = "$KV." + origin + "."
		}
		if !cfg.AllowDirect && cfg.MirrorDirect {
			b.direct = m.Name
		}
	}
	return b, nil
}

// entry is the newest message of one key.
type entry struct {
	Key      string
	Revision uint64
	Op       kvwatch.Op
	Created  time.Time
	Data     []byte
}

// readState reads the newest entry of every key matching filters, as of
// the stream's last revision when b was opened (returned), in key order,
// calling fn with each (delete and purge markers included). progress, when
// set, is told of the keys read and the total. The keys are listed first,
// then asked for by name, at most directget.MaxMultiLastSubjects a
// request, each pinned at that revision, through the runtime's own
// batched direct get reader (internal/directget).
func (s *session) readState(ctx context.Context, b *liveBucket, filters []string, progress func(done, total int), fn func(entry) error) (uint64, error) {
	upTo := b.info.State.LastSeq
	if upTo == 0 {
		return 0, nil
	}
	var keys []string
	for _, f := range filters {
		lctx, done := s.op(ctx, true)
		info, err := b.stream.Info(lctx, jetstream.WithSubjectFilter(f))
		if err != nil {
			err = s.explain(lctx, b.name, err)
			done()
			return 0, fmt.Errorf("listing the keys of %s: %w", f, err)
		}
		done()
		for subject := range info.State.Subjects {
			keys = append(keys, subject)
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	// The reads' context also ends when the server refuses a permission
	// (session.op): the reader's subscription closes with it, rather than
	// a refused request waiting for its timeout.
	ctx, done := s.op(ctx, false)
	defer done()
	dg := directget.New(s.js, b.direct, requestTimeout)
	if err := dg.Open(ctx); err != nil {
		return 0, err
	}
	defer dg.Close()
	read := 0
	for len(keys) > 0 {
		chunk := keys[:min(directget.MaxMultiLastSubjects, len(keys))]
		got, more, err := s.ask(ctx, b, dg, chunk, upTo, fn)
		if err != nil {
			return 0, err
		}
		read += len(got)
		if more && len(got) > 0 {
			// Cut short by the byte limit: ask again for the rest.
			rest := slices.DeleteFunc(slices.Clone(chunk), func(k string) bool { return got[k] })
			keys = append(rest, keys[len(chunk):]...)
		} else {
			read += len(chunk) - len(got) // keys with nothing at or below upTo
			keys = keys[len(chunk):]
		}
		if progress != nil {
			progress(read, read+len(keys))
		}
	}
	return upTo, nil
}

// ask sends one multi_last request for subjects and hands fn its answer's
// entries, stopping at the first error fn returns. It returns the subjects
// answered, and whether the answer was cut short (its byte limit).
func (s *session) ask(ctx context.Context, b *liveBucket, dg *directget.Getter, subjects []string, upTo uint64, fn func(entry) error) (map[string]bool, bool, error) {
	got := map[string]bool{}
	var failed error
	end, err := dg.Read(directget.Request{MultiLast: subjects, UpToSeq: upTo}, func(msg *nats.Msg) {
		if failed != nil {
			return
		}
		e, err := entryOf(msg, b.prefix)
		if err != nil {
			failed = fmt.Errorf("bucket %s: %w", b.name, err)
			return
		}
		got[msg.Header.Get("Nats-Subject")] = true
		failed = fn(e)
	})
	switch {
	case failed != nil:
		return nil, false, failed
	case errors.Is(err, directget.ErrNoResults):
		return got, false, nil
	case errors.Is(err, directget.ErrNoDirectGet):
		return nil, false, fmt.Errorf("bucket %s: the stream does not answer direct gets (allow_direct is off): %w", b.name, nats.ErrNoResponders)
	case err != nil && ctx.Err() != nil:
		return nil, false, s.explain(ctx, b.name, err)
	case err != nil:
		return nil, false, fmt.Errorf("reading bucket %s from %s (each answer waited for at most %s): %w", b.name, s.url, requestTimeout, err)
	}
	return got, end.Pending > 0, nil
}

// entryOf reads a direct get answer's message.
func entryOf(msg *nats.Msg, prefix string) (entry, error) {
	subject := msg.Header.Get("Nats-Subject")
	key, ok := strings.CutPrefix(subject, prefix)
	if !ok {
		return entry{}, fmt.Errorf("direct get answered subject %q, not under %s", subject, prefix)
	}
	rev, err := strconv.ParseUint(msg.Header.Get("Nats-Sequence"), 10, 64)
	if err != nil {
		return entry{}, fmt.Errorf("direct get answered %s without a revision", subject)
	}
	created, _ := time.Parse(time.RFC3339Nano, msg.Header.Get("Nats-Time-Stamp"))
	op, _ := kvheaders.EntryOp(msg.Header) // the server's TTL and limit markers too, as the watcher reads them
	return entry{Key: key, Revision: rev, Op: op, Created: created, Data: msg.Data}, nil
}
