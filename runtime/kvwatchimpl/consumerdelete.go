package kvwatchimpl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// This file is how the watcher's consumers leave the server: retired when
// replaced or at the end of the watch, deleted, and the deletion confirmed
// by the server. A deletion the meta leader answers "not found" is no
// proof by itself. For a consumer whose creation was never answered: the
// meta leader looks a consumer up among the creations it has applied, so
// one still being proposed is not found, and is created after the delete
// (nats-server's jsClusteredConsumerDeleteRequest); such a consumer is
// created again first (the same name and configuration make that the
// same consumer), and then deleted. After a deletion request of ours
// went unanswered: the meta leader also answers "not found" while a
// deletion is proposed and not yet applied, and that proposal may never
// apply (the leader cut off, its log overwritten by the next); so "not
// found" then stands only once the consumer's info is "not found" too,
// which is answered from what the meta group applied. (Only then: a
// storm's edge restart answers every watcher's first deletion "not
// found", and one more request each would be a storm's worth.)

// retiredConsumer is a consumer replaced but not yet deleted.
type retiredConsumer struct {
	name string
	// unanswered is the configuration of a creation request sent and
	// never answered; nil when the server answered it.
	unanswered *jetstream.ConsumerConfig
	// deleteUnanswered is set once a deletion request went unanswered: it
	// may still be in flight at the meta leader.
	deleteUnanswered bool
}

// retire marks the current consumer for deletion.
func (c *tailConsumer) retire() {
	c.mu.Lock()
	name := c.name
	c.name = ""
	c.mu.Unlock()
	if name != "" {
		c.gone = append(c.gone, retiredConsumer{name: name})
	}
}

// retireUnanswered marks for deletion the consumer name, whose creation
// with filters from at was sent and not answered: a late answer may have
// made it, or still make it.
func (c *tailConsumer) retireUnanswered(name string, filters []string, at consumerStart) {
	cfg := c.config(name, filters, at)
	c.gone = append(c.gone, retiredConsumer{name: name, unanswered: &cfg})
}

// deleteGone deletes the retired consumers, each request waiting at most
// timeout; it stops at the first the server did not answer, and returns
// nil once the server confirmed every deletion.
func (c *tailConsumer) deleteGone(ctx context.Context, timeout time.Duration) error {
	for len(c.gone) > 0 {
		if err := c.deleteRetired(ctx, timeout, &c.gone[0]); err != nil {
			return fmt.Errorf("deleting the replaced consumer %s: %w", c.gone[0].name, err)
		}
		c.gone = c.gone[1:]
	}
	return nil
}

// deleteRetired deletes r and returns nil once the server confirmed it is
// gone.
func (c *tailConsumer) deleteRetired(ctx context.Context, timeout time.Duration, r *retiredConsumer) error {
	for {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		err := c.w.js.DeleteConsumer(dctx, c.w.stream, r.name)
		cancel()
		switch {
		case err == nil:
			c.logDeleted(r.name, "deleted")
			return nil
		case timedOut(err):
			r.deleteUnanswered = true
			return err
		case !errors.Is(err, jetstream.ErrConsumerNotFound):
			return err
		case r.unanswered == nil && r.deleteUnanswered:
			return c.confirmGone(ctx, timeout, r.name)
		case r.unanswered == nil:
			c.logDeleted(r.name, "not found")
			return nil
		}
		// Not found, but its creation may still be on its way: create it
		// (answered, it exists), then delete it again.
		cctx, cancel := context.WithTimeout(ctx, createTimeout(len(r.unanswered.FilterSubjects)+1, 0))
		_, err = c.w.js.CreateOrUpdateConsumer(cctx, c.w.stream, *r.unanswered)
		cancel()
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.Code != 503 {
			// Refused for what the consumer is (a limit, the stream's
			// state): not made now, nor by the request before. A 503 (no
			// meta leader, JetStream not ready) says nothing of it.
			c.logDeleted(r.name, "not found, and its creation refused")
			return nil
		}
		if err != nil {
			return err
		}
		r.unanswered = nil
	}
}

// confirmGone asks for the consumer name's info after its deletion was
// answered "not found": nil once the server says it does not know it
// either; errDeletionInFlight while it still holds it (asked again by the
// caller); the request's error when unanswered.
func (c *tailConsumer) confirmGone(ctx context.Context, timeout time.Duration, name string) error {
	ictx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := c.w.js.Consumer(ictx, c.w.stream, name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		c.logDeleted(name, "not found")
		return nil
	case err != nil:
		return fmt.Errorf("confirming the deletion: %w", err)
	}
	return errDeletionInFlight
}

// errDeletionInFlight is a deletion answered "not found" of a consumer the
// server still holds: an earlier deletion of it is proposed and not
// applied (or was dropped); the deletion is asked again.
var errDeletionInFlight = errors.New(`the deletion was answered "not found" while the server still holds the consumer (an earlier deletion still in flight): asking again`)

// logDeleted logs, at debug level, a consumer the server confirmed gone
// and its answer (what a consumer still listed afterwards is checked
// against).
func (c *tailConsumer) logDeleted(name, answer string) {
	c.w.cfg.Logger.LogAttrs(c.w.ctx, slog.LevelDebug, "kvwatch: consumer deleted", slog.String("bucket", c.w.bucket),
		slog.String("consumer", name), slog.String("answer", answer), slog.String("server", c.w.js.Conn().ConnectedServerName()))
}

// stopDeleteBound is how long the end of a watch waits for the server to
// confirm that its consumers are deleted, each request sent again when
// not answered in half a second: a cluster that lost its meta leader
// answers none until it elects another, which takes up to nats-server's
// election timeout (4 to 9 s) when the leader went without handing over
// (TestStopInAClusterDeletesItsConsumer); the bound outlasts one such
// election, as a rolling restart of the cluster makes.
const stopDeleteBound = 10 * time.Second

// delete removes the current consumer and the retired ones from the
// server and waits for the server to confirm it, up to stopDeleteBound
// in all. A consumer the server did not confirm deleted by then (no meta
// leader, the connection down or closed) is logged, at warning level,
// and left to its inactive threshold.
func (c *tailConsumer) delete() {
	c.retire()
	if len(c.gone) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopDeleteBound)
	defer cancel()
	var err error
	for {
		err = c.deleteGone(ctx, createTimeout(0, 0))
		if err == nil || ctx.Err() != nil || errors.Is(err, nats.ErrConnectionClosed) {
			break
		}
		if !timedOut(err) && !sleep(ctx, 100*time.Millisecond) {
			break // refused (JetStream not ready): asked again after a pause
		}
	}
	if err != nil {
		names := make([]string, len(c.gone))
		for i, r := range c.gone {
			names[i] = r.name
		}
		c.w.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "kvwatch: consumer not confirmed deleted; the server removes it after its inactive threshold",
			slog.String("bucket", c.w.bucket), slog.Any("consumers", names), slog.Duration("inactive_threshold", c.w.cfg.InactiveThreshold), slog.Any("error", err))
		c.gone = nil
	}
}
