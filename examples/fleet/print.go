package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// printer prints typed events as a person would want to read them, and
// lets main wait until they have been printed. The handlers run on their
// own goroutine, beside main's: every line goes through the printer, so
// lines never mix and main prints after the events it waited for.
type printer struct {
	mu       sync.Mutex
	out      io.Writer
	revision uint64        // highest revision printed
	events   int           // events printed
	synced   bool          // OnSynced ran: the initial events are printed
	changed  chan struct{} // signalled after every event
}

func newPrinter(out io.Writer) *printer {
	return &printer{out: out, changed: make(chan struct{}, 1)}
}

// Write lets main print through the printer, between events.
func (p *printer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// handlers returns the watcher's handlers: one typed function per kind.
func (p *printer) handlers() fleetkv.NetworkHandlers {
	return fleetkv.NetworkHandlers{
		OnVPCConfig: func(ev fleetkv.VPCConfigEvent) {
			p.print(ev.Revision, "vpc", ev.Key.VPC, describe(ev, func(c fleetkv.VPCConfig) string {
				return fmt.Sprintf("%s in %s", c.CIDR, c.Region)
			}))
		},
		OnRoute: func(ev fleetkv.RouteEvent) {
			p.print(ev.Revision, "route", ev.Key.VPC+"/"+ev.Key.RouteID, describe(ev, func(r fleetkv.Route) string {
				return fmt.Sprintf("%s via %s, metric %d", r.CIDR, r.NextHop, r.Metric)
			}))
		},
		OnFirewallRule: func(ev fleetkv.FirewallRuleEvent) {
			name := fmt.Sprintf("%s/#%d", ev.Key.VPC, ev.Key.Priority)
			p.print(ev.Revision, "firewall", name, describe(ev, func(r fleetkv.FirewallRule) string {
				return fmt.Sprintf("%s %s to port %d", r.Action, r.CIDR, r.Port)
			}))
		},
		OnError: func(err error) {
			var de *kvwatch.DataError
			if errors.As(err, &de) {
				p.print(de.Revision, "skipped", de.Key, fmt.Sprintf("revision %d: %v", de.Revision, de.Err))
				return
			}
			fmt.Fprintf(p, "error: %v\n", err)
		},
		OnSynced: func() { p.update(func() { p.synced = true }) },
	}
}

// describe says what an event changed: the new value, and what it
// replaced or removed.
func describe[K comparable, V any](ev kvwatch.Event[K, V], show func(V) string) string {
	when := "live   "
	if ev.Initial {
		when = "initial"
	}
	switch {
	case ev.Op == kvwatch.OpPut && ev.HasPrev:
		return fmt.Sprintf("%s %s (was %s)", when, show(ev.Value), show(ev.Prev))
	case ev.Op == kvwatch.OpPut:
		return fmt.Sprintf("%s %s", when, show(ev.Value))
	case ev.LeftScope:
		return fmt.Sprintf("%s left the watched scopes, was %s", when, show(ev.Prev))
	case ev.HasPrev:
		return fmt.Sprintf("%s %sd, was %s", when, ev.Op, show(ev.Prev))
	}
	return fmt.Sprintf("%s %sd", when, ev.Op)
}

func (p *printer) print(revision uint64, kind, name, text string) {
	p.update(func() {
		fmt.Fprintf(p.out, "%-9s %-13s %s\n", kind, name, text)
		p.revision = max(p.revision, revision)
		p.events++
	})
}

// update changes the printer under its lock and wakes a waiter.
func (p *printer) update(f func()) {
	p.mu.Lock()
	f()
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// waitFor blocks until an event at revision or later has been printed, or
// ctx ends.
func (p *printer) waitFor(ctx context.Context, revision uint64) error {
	return p.wait(ctx, fmt.Sprintf("revision %d", revision), func() bool { return p.revision >= revision })
}

// waitSynced blocks until the initial events have been printed (OnSynced
// ran), or ctx ends.
func (p *printer) waitSynced(ctx context.Context) error {
	return p.wait(ctx, "the initial events", func() bool { return p.synced })
}

// waitEvents blocks until n events have been printed since mark (a count
// of printed events from printed), or ctx ends.
func (p *printer) waitEvents(ctx context.Context, mark, n int) error {
	return p.wait(ctx, fmt.Sprintf("%d events", n), func() bool { return p.events >= mark+n })
}

// printed is how many events have been printed so far.
func (p *printer) printed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.events
}

// wait blocks until done holds, under the printer's lock, or ctx ends.
func (p *printer) wait(ctx context.Context, what string, done func() bool) error {
	for {
		p.mu.Lock()
		ok := done()
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-p.changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be printed: %w", what, ctx.Err())
		}
	}
}

// count writes n with noun, in the plural unless n is 1: "1 delete",
// "2 deletes".
func count[N int | uint64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
