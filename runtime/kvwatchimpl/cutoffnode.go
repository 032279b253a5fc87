package kvwatchimpl

import (
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// This file is what the watcher does about a server that answers but
// cannot speak for its cluster: a node cut off from the others (a
// partition of its routes) keeps its clients, answers every consumer
// creation "JetStream system temporarily unavailable" (503, no meta
// leader it can reach) and the stream's info from its own store, behind
// (errNotFromLeader). nats.go has no reason to leave a connection that
// answers. After cutOffAfter of nothing but such answers the watcher
// makes the client reconnect, to the next server of its list, as it does
// for a silent connection (silent.go); the node may be back by then, and
// the next server may be another node of the same cluster.

// cutOffAfter is how long a server may answer only that it cannot speak
// for its cluster before the watcher leaves it: longer than an election
// after a leader's loss takes (a few seconds), as long as nats-server
// itself waits before a node without a leader answers at all (10 s).
const cutOffAfter = 10 * time.Second

// clusterUnavailable reports whether err is an answer of a server that
// cannot speak for its cluster now.
func clusterUnavailable(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, errNotFromLeader) || (errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeClusterNotAvail)
}

// errCodeClusterNotAvail is nats-server's JSClusterNotAvailErr: "JetStream
// system temporarily unavailable", no meta leader.
const errCodeClusterNotAvail jetstream.ErrorCode = 10008

// noteServerAnswer records a failed request's error (nil: a request that
// succeeded) on the event goroutine, and leaves the server once it has
// answered only clusterUnavailable for cutOffAfter: the same server, the
// connection not reconnected since the first such answer. When no
// server of the cluster has a meta leader, the watcher goes from one to
// the next every cutOffAfter, which costs a reconnect each time.
func (w *Watcher) noteServerAnswer(err error) {
	reconnects := w.js.Conn().Stats().Reconnects // the server it is connected to now
	switch {
	case err == nil || !clusterUnavailable(err):
		w.unavailableSince = time.Time{}
	case w.unavailableSince.IsZero() || w.unavailableAt != reconnects:
		w.unavailableSince, w.unavailableAt = time.Now(), reconnects
	case time.Since(w.unavailableSince) >= cutOffAfter:
		w.unavailableSince = time.Time{}
		nc := w.js.Conn()
		if len(nc.Servers()) < 2 {
			return // nowhere else to go
		}
		w.stats.cutOffServers.Add(1)
		w.cfg.Logger.LogAttrs(w.ctx, slog.LevelWarn, "kvwatch: the server cannot speak for its cluster (cut off from the others?); reconnecting", slog.String("bucket", w.bucket),
			slog.String("server", nc.ConnectedUrlRedacted()), slog.Duration("for", cutOffAfter), slog.Any("error", err))
		if err := nc.ForceReconnect(); err != nil {
			w.cfg.Logger.LogAttrs(w.ctx, slog.LevelWarn, "kvwatch: reconnecting", slog.String("bucket", w.bucket), slog.Any("error", err))
		}
	}
}
