package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/internal/live/interp"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// This file is kvwatchgen watch: a typed tail of one bucket through the
// runtime, as a generated watcher runs it (one consumer, exact sync), with
// kinds made at run time: the key is the key itself (parsed by interp),
// the value what interp decodes. Events are written in stream order; the
// problems the watcher skips go to stderr as they come. It ends when ctx
// does (Ctrl-C), after the watcher's Stop: no consumer is left.

// watchEvent is one line of watch's output (-json: one JSON object each).
type watchEvent struct {
	Type     string         `json:"type"` // "event", "synced" or "problem"
	Bucket   string         `json:"bucket"`
	Kind     string         `json:"kind,omitempty"`
	Op       string         `json:"op,omitempty"`
	Key      string         `json:"key,omitempty"`
	Params   []interp.Param `json:"params,omitempty"`
	Revision uint64         `json:"revision"`
	Created  *time.Time     `json:"created,omitempty"`
	Initial  bool           `json:"initial,omitempty"`
	Value    any            `json:"value,omitempty"`
	Prev     any            `json:"prev,omitempty"`
	// Detail says more of a delete (left scope, removed by the server,
	// final state unknown); of a synced line, the entries delivered.
	Detail  string `json:"detail,omitempty"`
	Entries int    `json:"entries,omitempty"`
	Error   string `json:"error,omitempty"`
}

// dynCodec is a kind's codec made at run time: values decode as interp
// decodes them. watch never writes, so Encode only marshals the value.
type dynCodec struct{ kind *interp.Kind }

func (c dynCodec) Decode(data []byte) (any, error) { return c.kind.Decode(data) }
func (c dynCodec) Encode(v any) ([]byte, error)    { return json.Marshal(v) }

func runWatch(ctx context.Context, o *options) int {
	t := o.buckets[0]
	set, err := parseScopes(t, o.scopes)
	if err != nil {
		return o.fail(ExitUsage, err)
	}
	// The watch outlives failed requests: reconnect for as long as it runs.
	s, err := connect(o, "watch", nats.MaxReconnects(-1))
	if err != nil {
		return o.fail(ExitUsage, err)
	}
	defer s.close()
	if _, err := s.openBucket(ctx, t.live); err != nil {
		return o.fail(ExitUsage, err)
	}
	out := &watchOutput{o: o, bucket: t.live}
	spec := &kvwatchimpl.BucketSpec{Bucket: t.Schema.Name}
	for _, sc := range t.Schema.Scopes {
		spec.Scopes = append(spec.Scopes, kvwatchimpl.ScopeSpec{Name: sc.GoName, Prefix: sc.Prefix.Raw})
	}
	var bindings []kvwatchimpl.AnyBinding
	for _, k := range t.Kinds {
		bindings = append(bindings, kvwatchimpl.Bind(runtimeKind(t, k), func(ev kvwatch.Event[string, any]) { out.event(k, ev) }))
	}
	// OnSynced may run before Start returns: it waits for the watcher.
	var started atomic.Pointer[kvwatchimpl.Watcher]
	ready := make(chan struct{})
	synced := func() {
		<-ready
		if w := started.Load(); w != nil {
			out.synced(w.Stats().LastRevision)
		}
	}
	// The watcher's own context is not ctx: Stop below ends it, so that it
	// deletes its consumer with a connection still open.
	w, err := kvwatchimpl.Start(context.WithoutCancel(ctx), s.js, spec, set.values, bindings,
		kvwatchimpl.OnSynced(synced), kvwatchimpl.OnError(out.problem), kvwatch.WithBucket(t.live))
	started.Store(w)
	close(ready)
	if err != nil {
		return o.fail(ExitUsage, s.explain(ctx, t.live, err))
	}
	select {
	case <-ctx.Done():
		w.Stop()
		return ExitOK
	case <-w.Done():
		err := w.Err()
		if errors.Is(err, kvwatch.ErrStopped) || err == nil {
			return ExitOK
		}
		return o.fail(ExitError, fmt.Errorf("the watch ended: %w", s.explain(ctx, t.live, err)))
	}
}

// runtimeKind describes kind k to the runtime, with keys as strings.
func runtimeKind(t *target, k *interp.Kind) *kvwatchimpl.Kind[string, any] {
	return &kvwatchimpl.Kind[string, any]{
		Name:   k.Name(),
		Bucket: t.Schema.Name,
		Key:    k.Template,
		ParseKey: func(key string) (string, error) {
			_, err := k.ParseKey(key)
			return key, err
		},
		FormatKey: func(key string) string { return key },
		KeyParams: func(key string) []string {
			params := make([]string, len(k.Template.Params()))
			_ = k.Template.Split(key, params)
			return params
		},
		Codec: dynCodec{k},
	}
}

// watchOutput writes watch's lines; the watcher calls it from its
// handler goroutine and its error callback, which may run at once.
type watchOutput struct {
	o       *options
	bucket  string
	mu      sync.Mutex
	initial int // events flagged Initial, for the synced line
}

func (w *watchOutput) event(k *interp.Kind, ev kvwatch.Event[string, any]) {
	params, _ := k.ParseKey(ev.Key)
	line := watchEvent{Type: "event", Bucket: w.bucket, Kind: k.Name(), Op: ev.Op.String(), Key: ev.Key, Params: params,
		Revision: ev.Revision, Initial: ev.Initial}
	if !ev.Created.IsZero() {
		line.Created = &ev.Created
	}
	if ev.Op == kvwatch.OpPut {
		line.Value = ev.Value
	}
	if w.o.prev && ev.HasPrev {
		line.Prev = ev.Prev
	}
	switch {
	case ev.LeftScope:
		line.Detail = "left scope"
	case ev.FinalStateUnknown:
		line.Detail = "final state unknown"
	case ev.Marker != "":
		line.Detail = "removed by the server: " + string(ev.Marker)
	}
	w.mu.Lock()
	if ev.Initial {
		w.initial++
	}
	w.mu.Unlock()
	w.write(line)
}

// synced writes the line of the sync point.
func (w *watchOutput) synced(rev uint64) {
	w.mu.Lock()
	n := w.initial
	w.mu.Unlock()
	w.write(watchEvent{Type: "synced", Bucket: w.bucket, Revision: rev, Entries: n})
}

// problem writes what the watcher skipped (or why it ended) on stderr.
func (w *watchOutput) problem(err error) {
	line := watchEvent{Type: "problem", Bucket: w.bucket, Error: err.Error()}
	var data *kvwatch.DataError
	var unknown *kvwatch.UnknownKeyError
	switch {
	case errors.As(err, &data):
		line.Kind, line.Key, line.Revision = data.Kind, data.Key, data.Revision
	case errors.As(err, &unknown):
		line.Key, line.Revision = unknown.Key, unknown.Revision
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.o.json {
		writeJSONLine(w.o.env.Stderr, line)
		return
	}
	fmt.Fprintf(w.o.env.Stderr, "kvwatchgen watch: %s: %v\n", w.bucket, err)
}

func (w *watchOutput) write(line watchEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.o.json {
		writeJSONLine(w.o.env.Stdout, line)
		return
	}
	if line.Type == "synced" {
		fmt.Fprintf(w.o.env.Stdout, "-- synced at revision %d: %s; live changes follow\n", line.Revision, plural(line.Entries, "entry", "entries"))
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s rev %d %s %s", line.Bucket, line.Revision, line.Kind, line.Op)
	for _, p := range line.Params {
		fmt.Fprintf(&b, " %s=%s", p.Name, p.Value)
	}
	if line.Initial {
		b.WriteString(" (initial)")
	}
	if line.Detail != "" {
		fmt.Fprintf(&b, " (%s)", line.Detail)
	}
	if line.Op == kvwatch.OpPut.String() {
		b.WriteString(" " + compactJSON(line.Value))
	}
	if line.Prev != nil {
		b.WriteString(" prev " + compactJSON(line.Prev))
	}
	fmt.Fprintln(w.o.env.Stdout, b.String())
}

// compactJSON writes v as JSON, or the error that stopped it.
func compactJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("(cannot write as JSON: %v)", err)
	}
	return string(data)
}
