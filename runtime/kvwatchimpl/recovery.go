package kvwatchimpl

import (
	"log/slog"
	"time"
)

// This file is what a watcher says while it recovers from a broken
// consumer or a failed request: one line per recovery, at its end, and
// nothing more unless it lasts. A storm (an edge restart under a thousand
// watchers) is a thousand recoveries at once; a line for each retry of
// each would bury the one that matters. An operator sees a storm under
// way in the metrics (kvwatch_without_consumer, the rate of
// kvwatch_consumer_creation_retries_total) and its end in them and in
// these lines.

// recovery is the recovery under way, if any (event goroutine only).
type recovery struct {
	why     string    // what broke first
	since   time.Time // zero: none under way
	retries int       // requests sent again since
}

// lastingEvery is how many retries of one recovery pass between warnings
// that it lasts: more than a storm or an election takes.
const lastingEvery = 10

// recovering notes that a recovery began, for why, unless one is under
// way already (its first cause is the one told).
func (w *Watcher) recovering(why string) {
	if w.recovery.since.IsZero() {
		w.recovery = recovery{why: why, since: time.Now()}
	}
}

// logRetry logs a request sent again (msg and attrs say which and why),
// at debug level, and at warning level every lastingEvery retries of the
// recovery: one that lasts is a fault to fix, not a storm to ride out.
func (w *Watcher) logRetry(msg string, attrs ...slog.Attr) {
	w.recovering(msg)
	w.recovery.retries++
	level := slog.LevelDebug
	if w.recovery.retries%lastingEvery == 0 {
		level = slog.LevelWarn
		attrs = append(attrs, slog.Duration("recovering_for", time.Since(w.recovery.since).Round(time.Millisecond)))
	}
	w.cfg.Logger.LogAttrs(w.ctx, level, msg, append([]slog.Attr{slog.String("bucket", w.bucket)}, attrs...)...)
}

// recovered ends the recovery under way, if any, with its one line.
func (w *Watcher) recovered() {
	r := w.recovery
	if r.since.IsZero() {
		return
	}
	w.recovery = recovery{}
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelInfo, "kvwatch: recovered", slog.String("bucket", w.bucket),
		slog.String("why", r.why), slog.Duration("took", time.Since(r.since).Round(time.Millisecond)),
		slog.Int("retries", r.retries), slog.String("consumer", w.consumer.current()))
}
