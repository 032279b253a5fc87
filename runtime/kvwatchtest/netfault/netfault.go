// Package netfault breaks the network between a NATS client or server and
// a server while both processes stay alive: a TCP proxy, in process, with
// named faults (a silent connection, one-way silence, latency with
// jitter, a bandwidth cap, a reset in the middle of a message, a
// partition). Put a Proxy between a client and its server, between two
// cluster nodes (a route) or between a leaf node and its hub, and turn
// faults on and off from the test.
//
// It is built on Shopify's toxiproxy v2, run in process (no root, no
// separate daemon). kvwatchtest's fleets link their edges to the hub
// through it (Edge.Cut, Edge.Link). Toxiproxy's bandwidth toxic logs a
// trace line to zerolog's global logger when a connection it slows is
// closed; nothing else of it logs.
package netfault

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Direction is which way a fault acts on a connection through the proxy.
type Direction string

const (
	// ToUpstream is what the side that dialed the proxy sends toward the
	// server behind it (a client's publishes and requests).
	ToUpstream Direction = "upstream"
	// ToDownstream is what the server behind the proxy sends back (a
	// client's deliveries and replies).
	ToDownstream Direction = "downstream"
)

// Proxy is a TCP proxy to one upstream address, listening on a random
// port of 127.0.0.1. Its methods are safe for concurrent use. Every fault
// is named: set again, it replaces the one of the same name; Heal
// removes them all.
type Proxy struct {
	proxy *toxiproxy.Proxy
	mu    sync.Mutex
	names map[string]bool // faults on
}

// Start starts a proxy to upstream ("host:port", or a nats:// URL) and
// stops it when the test ends.
func Start(t testing.TB, upstream string) *Proxy {
	t.Helper()
	p, err := New(upstream)
	if err != nil {
		t.Fatalf("netfault: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// New starts a proxy to upstream; Close stops it.
func New(upstream string) (*Proxy, error) {
	upstream = strings.TrimPrefix(upstream, "nats://")
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.New(io.Discard))
	proxy := toxiproxy.NewProxy(server, "netfault-"+upstream, "127.0.0.1:0", upstream)
	if err := proxy.Start(); err != nil {
		return nil, fmt.Errorf("proxy to %s: %w", upstream, err)
	}
	return &Proxy{proxy: proxy, names: map[string]bool{}}, nil
}

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() { p.proxy.Stop() }

// Addr is the proxy's address, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.proxy.Listen }

// URL is the proxy's address as a NATS URL, for a client, a route or a
// leaf node remote.
func (p *Proxy) URL() string { return "nats://" + p.Addr() }

// Port is the proxy's port.
func (p *Proxy) Port() int {
	_, port, _ := net.SplitHostPort(p.Addr())
	n, _ := strconv.Atoi(port)
	return n
}

// Blackhole makes every connection through the proxy silent both ways
// without closing it: half-open, as a peer that vanished behind a
// firewall or a dead route is. Bytes sent meanwhile are lost; removed
// (Heal, Unset), the fault closes the connections it held, as the peer's
// stack does once the path comes back.
func (p *Proxy) Blackhole() {
	p.BlackholeOneWay(ToUpstream)
	p.BlackholeOneWay(ToDownstream)
}

// BlackholeOneWay makes every connection silent in one direction only:
// a one-way partition.
func (p *Proxy) BlackholeOneWay(d Direction) {
	p.set("blackhole_"+string(d), "timeout", d, map[string]any{"timeout": 0})
}

// Latency delays every chunk each way by delay ± jitter.
func (p *Proxy) Latency(delay, jitter time.Duration) {
	for _, d := range []Direction{ToUpstream, ToDownstream} {
		p.set("latency_"+string(d), "latency", d, map[string]any{"latency": delay.Milliseconds(), "jitter": jitter.Milliseconds()})
	}
}

// Bandwidth caps each direction of every connection at kbPerSecond
// kilobytes a second.
func (p *Proxy) Bandwidth(kbPerSecond int64) {
	for _, d := range []Direction{ToUpstream, ToDownstream} {
		p.set("bandwidth_"+string(d), "bandwidth", d, map[string]any{"rate": kbPerSecond})
	}
}

// Slice cuts what the server sends into chunks of about size bytes, each
// delayed by delay: messages arrive in pieces, as over a lossy link.
func (p *Proxy) Slice(size int, delay time.Duration) {
	p.set("slicer", "slicer", ToDownstream, map[string]any{"average_size": size, "size_variation": size / 2, "delay": delay.Microseconds()})
}

// ResetMidMessage cuts every connection in the middle of what the server
// sends next: after its first byte the connection is closed (and so is
// every new one, until Heal). One toxic, not a slicer
// and a reset_peer: removing a sliced reset from live links could hang in
// toxiproxy (TestHealAfterResetUnderTraffic).
func (p *Proxy) ResetMidMessage() {
	p.set("reset", "limit_data", ToDownstream, map[string]any{"bytes": 1})
}

// Partition closes every connection through the proxy and refuses new
// ones until Heal: the two sides cannot reach each other, and know it.
func (p *Proxy) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.proxy.Stop()
	p.names["partition"] = true
}

// Heal removes every fault: connections a blackhole held are closed,
// new ones pass.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.names["partition"] {
		delete(p.names, "partition")
		p.proxy.Start() //nolint:errcheck // the port is the proxy's own: it was listening on it
	}
	for name := range p.names {
		p.proxy.Toxics.RemoveToxic(context.Background(), name) //nolint:errcheck // set by this proxy: it exists
		delete(p.names, name)
	}
}

// Faults returns the names of the faults on, sorted.
func (p *Proxy) Faults() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for name := range p.names {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// set turns on the fault name, a toxic of kind with attrs, replacing one
// of the same name.
func (p *Proxy) set(name, kind string, d Direction, attrs map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.names[name] {
		p.proxy.Toxics.RemoveToxic(context.Background(), name) //nolint:errcheck // set before: it exists
	}
	body, _ := json.Marshal(map[string]any{"name": name, "type": kind, "stream": string(d), "toxicity": 1.0, "attributes": attrs})
	if _, err := p.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		panic(fmt.Sprintf("netfault: fault %s: %v", name, err)) // the package's own toxic: a bug here, not input
	}
	p.names[name] = true
}
