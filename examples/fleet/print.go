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
// lets main wait until a key has been seen.
type printer struct {
	out      io.Writer
	mu       sync.Mutex
	revision uint64        // highest revision printed
	changed  chan struct{} // signalled after every event
}

func newPrinter(out io.Writer) *printer {
	return &printer{out: out, changed: make(chan struct{}, 1)}
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
			fmt.Fprintf(p.out, "error: %v\n", err)
		},
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
	fmt.Fprintf(p.out, "%-9s %-13s %s\n", kind, name, text)
	p.mu.Lock()
	p.revision = max(p.revision, revision)
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// waitFor blocks until an event at revision or later has been printed, or
// ctx ends.
func (p *printer) waitFor(ctx context.Context, revision uint64) error {
	for {
		p.mu.Lock()
		done := p.revision >= revision
		p.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-p.changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for revision %d: %w", revision, ctx.Err())
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
