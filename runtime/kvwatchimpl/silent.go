package kvwatchimpl

import (
	"context"
	"log/slog"
	"time"
)

// This file is what the watcher does about a connection that went silent
// without a reset (half-open: a peer gone behind a firewall, a dead
// link): nats.go notices only when its pings go unanswered, two minutes
// apart by default, and until then every request times out and nothing
// is delivered. The watcher has a sooner sign: the heartbeats of its
// pull, one a second, stop, or a request to the server goes unanswered.
// It then asks for a round trip (a flush: PING, PONG); one not answered
// in time means the connection carries nothing, and the watcher makes the
// client reconnect, to the next server of its list, instead of waiting
// for the pings (TestWatcherLeavesASilentConnection).

// silentAfter is how long a round trip may take before the connection
// counts as silent: well above the round trip of a slow link (500 ms of
// latency each way), well below nats.go's own detection.
const silentAfter = 3 * time.Second

// leaveIfSilent makes the client reconnect when its connection, still
// up, does not answer a round trip within silentAfter. It blocks for at
// most that long, and returns at once when the watch ends.
func (w *Watcher) leaveIfSilent() {
	nc := w.js.Conn()
	if !nc.IsConnected() {
		return // reconnecting already
	}
	ctx, cancel := context.WithTimeout(w.ctx, silentAfter)
	defer cancel()
	err := nc.FlushWithContext(ctx)
	if err == nil || w.ctx.Err() != nil || !timedOut(err) {
		return
	}
	w.stats.silentConnections.Add(1)
	w.cfg.Logger.LogAttrs(w.ctx, slog.LevelWarn, "kvwatch: the connection is silent; reconnecting", slog.String("bucket", w.bucket),
		slog.String("server", nc.ConnectedUrlRedacted()), slog.Duration("unanswered_for", silentAfter))
	if err := nc.ForceReconnect(); err != nil {
		w.cfg.Logger.LogAttrs(w.ctx, slog.LevelWarn, "kvwatch: reconnecting", slog.String("bucket", w.bucket), slog.Any("error", err))
	}
}
