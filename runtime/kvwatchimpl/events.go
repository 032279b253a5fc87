package kvwatchimpl

import (
	"context"
	"iter"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// This file is the pull-style alternative to handlers: a loop over a
// watcher's events (Events), served by a registration of its own
// (shared.go), with the same order and the same backpressure: the watcher
// waits while the loop's body runs, and buffers nothing for it.

// For generated code. Events returns the events of the kinds of bindings
// as an iterator (the generated watcher's Events passes all its kinds):
// every cached entry as an initial event, SyncedEvent once the watcher is
// synced, then each change, in the watcher's order, each with values the
// loop owns. Each range over the result is a registration of its own
// (shared.go), run by the loop itself: the watcher queues what the loop
// has not taken yet, and stops reading from the server while more than
// 256 wait (backpressure: nothing is lost). The body may call any
// method of the watcher, Stop included: none waits for the loop. The loop
// ends when it breaks, when ctx ends or Stop is called (at once: no event
// after the body returns, whatever is queued), or when the watch ends on
// its own (after what was queued); its registration is then removed.
func (w *Watcher) Events(ctx context.Context, bindings ...AnyBinding) iter.Seq[kvwatch.AnyEvent] {
	return func(yield func(kvwatch.AnyEvent) bool) {
		// What the delivery being run hands the loop: one event, or a
		// replay's. The loop body runs outside the delivery, where a panic
		// of its own is not taken for a handler's.
		var out []kvwatch.AnyEvent
		handlers := make([]AnyHandler, len(bindings))
		for i, b := range bindings {
			handlers[i] = b.streamHandler(func(ev kvwatch.AnyEvent) { out = append(out, ev) })
		}
		r := w.newRegistration(func() { out = append(out, kvwatch.SyncedEvent{}) }, nil)
		if w.register(r, handlers, true, false) != nil {
			return
		}
		defer r.Remove()
		for {
			items, ok := r.l.next(w.ended, ctx.Done())
			if !ok {
				return
			}
			for _, d := range items {
				if !r.l.begin() {
					return
				}
				out = out[:0]
				d.run()
				for i, ev := range out {
					out[i] = nil
					if !r.l.calling() || ctx.Err() != nil || !yield(ev) {
						return // Stop, Remove or ctx during a replay or a run of changes; or the loop broke
					}
				}
				if !r.l.finish(w) {
					return
				}
			}
			r.l.done(items)
		}
	}
}

// streamHandler is the binding's handler for a stream: it sends each event.
func (b *Binding[K, V]) streamHandler(send func(kvwatch.AnyEvent)) AnyHandler {
	return HandlerOf(b, func(ev kvwatch.Event[K, V]) { send(ev) })
}
