package kvwatchimpl

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is what a watcher knows of a bucket that is a mirror: an
// edge server's copy of a hub's bucket (docs/fleet.md).

// learnStream takes from the stream's info what shapes the watch: a
// mirror of a bucket named otherwise keeps the origin's subjects, so the
// filters are the origin's; a replicated stream places each consumer on
// one of its nodes, at random (consumer.go).
func (w *Watcher) learnStream(info *jetstream.StreamInfo) {
	if info == nil {
		return
	}
	w.replicated = info.Config.Replicas > 1
	if info.Config.Mirror == nil {
		return
	}
	w.subjectPrefix = subjectPrefix(w.bucket, &info.Config)
	w.mirror.set(info)
}

// subjectPrefix returns "$KV.<bucket>." for the stream of bucket, whose
// config is cfg: for a mirror of a bucket named otherwise, the origin's
// (a mirror keeps its origin's subjects).
func subjectPrefix(bucket string, cfg *jetstream.StreamConfig) string {
	if m := cfg.Mirror; m != nil {
		if origin, ok := strings.CutPrefix(m.Name, "KV_"); ok && origin != "" {
			return "$KV." + origin + "."
		}
	}
	return "$KV." + bucket + "."
}

// mirrorHealth is what the watcher last learned of its mirror.
type mirrorHealth struct {
	mu    sync.Mutex
	is    bool
	stats kvwatch.MirrorStats
	// heard is when the mirror last heard from its origin, as the last
	// check that knew said (CheckedAt less Mirror.Active).
	heard time.Time
}

// set records a stream info.
func (m *mirrorHealth) set(info *jetstream.StreamInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.is = true
	m.stats.Origin = info.Config.Mirror.Name
	if ext := info.Config.Mirror.External; ext != nil {
		m.stats.External = ext.APIPrefix
	}
	m.stats.CheckedAt = time.Now()
	if m.heard.IsZero() {
		m.heard = m.stats.CheckedAt // nothing known yet: as of now
	}
	if mi := info.Mirror; mi != nil {
		m.stats.Lag = mi.Lag
		if mi.Active >= 0 {
			m.heard = m.stats.CheckedAt.Add(-mi.Active)
		}
	}
}

// snapshot returns the stats now, nil when the stream is no mirror.
func (m *mirrorHealth) snapshot() *kvwatch.MirrorStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.is {
		return nil
	}
	s := m.stats
	s.SinceHeard = time.Since(m.heard)
	return &s
}

// setStale records whether the mirror is stale, and reports whether that
// changed.
func (m *mirrorHealth) setStale(stale bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	changed := m.stats.Stale != stale
	m.stats.Stale = stale
	return changed
}

// watchMirror checks the mirror every half of the stale threshold (at
// most every 5 s) until the watch ends, and logs when it goes stale (its
// origin not heard from for longer than the threshold: the edge's link
// to the hub is down, or the hub is) and when it recovers. A check is one
// stream info request to the edge; its failure is no news.
func (w *Watcher) watchMirror() {
	every := min(max(w.cfg.MirrorStaleAfter/2, 100*time.Millisecond), 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(w.ctx, w.cfg.RequestTimeout)
		stream, err := w.js.Stream(ctx, w.stream)
		cancel()
		if err != nil || stream.CachedInfo().Config.Mirror == nil {
			continue
		}
		w.mirror.set(stream.CachedInfo())
		w.learnSchema(stream.CachedInfo())
		s := w.mirror.snapshot()
		stale := s.SinceHeard > w.cfg.MirrorStaleAfter
		if !w.mirror.setStale(stale) {
			continue
		}
		attrs := []slog.Attr{slog.String("bucket", w.bucket), slog.String("origin", s.Origin), slog.Duration("since_heard", s.SinceHeard)}
		if stale {
			w.cfg.Logger.LogAttrs(w.ctx, slog.LevelWarn, "kvwatch: the mirror has not heard from its origin: its state is as of then", attrs...)
		} else {
			w.cfg.Logger.LogAttrs(w.ctx, slog.LevelInfo, "kvwatch: the mirror hears from its origin again", attrs...)
		}
	}
}

// learnDirectGet records from the stream's info whether, and under which
// stream name, it answers direct gets: its own when it allows them; a
// mirror's that only allows them as a mirror (MirrorDirect) under its
// origin's name.
func (w *Watcher) learnDirectGet(info *jetstream.StreamInfo) {
	cfg := info.Config
	w.mu.Lock() // WaitRevision reads them from its own goroutine
	defer w.mu.Unlock()
	switch {
	case cfg.AllowDirect:
		w.directGet, w.directStream = true, w.stream
	case cfg.Mirror != nil && cfg.MirrorDirect:
		w.directGet, w.directStream = true, cfg.Mirror.Name
	default:
		w.directGet = false
		w.cfg.Logger.LogAttrs(w.ctx, slog.LevelInfo, "kvwatch: the stream does not allow direct get: the consumer delivers the state",
			slog.String("bucket", w.bucket), slog.String("stream", w.stream))
	}
}

// noDirectGet records that a direct get had no responder although the
// stream's configuration allows them (a mirror whose server does not
// answer them, a server before 2.11): the consumer delivers the state,
// and nothing waits for a direct get again until the stream's info says
// otherwise.
func (w *Watcher) noDirectGet() {
	w.mu.Lock()
	w.directGet = false
	w.mu.Unlock()
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelWarn, "kvwatch: no server answers direct gets on the stream: the consumer delivers the state",
		slog.String("bucket", w.bucket), slog.String("stream", w.directStream))
}
