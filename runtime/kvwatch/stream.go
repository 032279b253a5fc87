package kvwatch

import (
	"context"
	"iter"
)

// This file is the pull-style alternative to handlers: a loop over a
// watcher's events (Events), served by a registration of its own
// (shared.go), with the same order and the same backpressure: the watcher
// waits while the loop's body runs, and buffers nothing for it.

// AnyEvent is an event of any kind of a watcher's stream (Watcher.Events):
// an Event[K, V] of one of its kinds (the generated XEvent types), or
// SyncedEvent. A type switch over the generated event types reads it:
//
//	for ev := range w.Events(ctx) {
//		switch ev := ev.(type) {
//		case fleetkv.RouteEvent:
//		case fleetkv.VPCConfigEvent:
//		case kvwatch.SyncedEvent:
//		}
//	}
type AnyEvent interface{ anyEvent() }

func (Event[K, V]) anyEvent() {}

// SyncedEvent is the stream's mark that the initial events are over: the
// stream's OnSynced.
type SyncedEvent struct{}

func (SyncedEvent) anyEvent() {}

// For generated code. Events returns the events of the kinds of bindings
// as an iterator (the generated watcher's Events passes all its kinds):
// every cached entry as an initial event, SyncedEvent once the watcher is
// synced, then each change, in the watcher's order, each with values the
// loop owns. The watcher waits while the loop's body runs (nothing is
// buffered, nothing lost). The loop ends when it breaks, when ctx ends, or
// when the watch ends; the registration behind it is then removed. Each
// call (each range over the result) is a registration of its own.
func (w *Watcher) Events(ctx context.Context, bindings ...AnyBinding) iter.Seq[AnyEvent] {
	return func(yield func(AnyEvent) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events := make(chan AnyEvent)
		send := func(ev AnyEvent) {
			select {
			case events <- ev:
			case <-ctx.Done():
			}
		}
		handlers := make([]AnyHandler, len(bindings))
		for i, b := range bindings {
			handlers[i] = b.streamHandler(send)
		}
		added := make(chan *Registration, 1)
		go func() {
			// The replay sends what the loop below receives: it cannot run
			// on the loop's goroutine.
			reg, err := w.AddHandlers(handlers, func() { send(SyncedEvent{}) }, nil)
			if err != nil {
				cancel()
			}
			added <- reg
		}()
		defer func() {
			cancel() // unblocks a send in flight
			if reg := <-added; reg != nil {
				reg.Remove()
			}
		}()
		for {
			select {
			case ev := <-events:
				if !yield(ev) {
					return
				}
			case <-ctx.Done():
				return
			case <-w.done:
				return
			}
		}
	}
}

// streamHandler is the binding's handler for a stream: it sends each event.
func (b *Binding[K, V]) streamHandler(send func(AnyEvent)) AnyHandler {
	return HandlerOf(b, func(ev Event[K, V]) { send(ev) })
}
