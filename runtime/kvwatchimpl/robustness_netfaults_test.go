package kvwatchimpl_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// This file is the robustness test's network faults: the watchers'
// connections go through proxies (kvwatchtest/netfault), which break the
// network while every process stays alive. The recipe starts from etcd's
// robustness tests (a 1 s blackhole, 75 ± 50 ms of delay, one-way
// silence) and goes past it: a silence held past the watcher's detection
// (silent.go), 500 ms of latency, a bandwidth cap, a reset in the middle
// of a message, connections refused.

// netLinks are proxies to the servers the watchers connect to, listed in
// each watcher's connection in that order.
type netLinks struct {
	proxies []*netfault.Proxy
}

// newNetLinks starts a proxy to each of upstreams.
func newNetLinks(t *testing.T, upstreams ...string) *netLinks {
	l := &netLinks{}
	for _, u := range upstreams {
		l.proxies = append(l.proxies, netfault.Start(t, u))
	}
	return l
}

// connect connects a watcher through the proxies, reconnecting at once
// and without end to the next.
func (l *netLinks) connect(t *testing.T) jetstream.JetStream {
	urls := make([]string, len(l.proxies))
	for i, p := range l.proxies {
		urls[i] = p.URL()
	}
	nc, err := nats.Connect(strings.Join(urls, ","), append([]nats.Option{nats.DontRandomize()}, connectOptions...)...)
	if err != nil {
		t.Fatalf("connect through the proxies: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// some returns the proxies a fault hits: one of them, or (one time in
// three) all, when the watcher has nowhere to go but wait.
func (l *netLinks) some(d *robustDriver) []*netfault.Proxy {
	if len(l.proxies) == 1 || d.rng.IntN(3) == 0 {
		return l.proxies
	}
	return []*netfault.Proxy{l.proxies[d.rng.IntN(len(l.proxies))]}
}

// hold applies fault to some proxies for a duration between lo and hi,
// then heals them. The run is unhealthy meanwhile: a watcher stopped
// then cannot have its consumer deleted.
func (l *netLinks) hold(d *robustDriver, lo, hi time.Duration, fault func(p *netfault.Proxy)) {
	hit := l.some(d)
	d.run.healthy.Store(false)
	for _, p := range hit {
		fault(p)
	}
	time.Sleep(lo + time.Duration(d.rng.Int64N(int64(hi-lo)+1)))
	for _, p := range hit {
		p.Heal()
	}
	d.run.healthy.Store(true)
}

// faults are the network faults on the links.
func (l *netLinks) faults() []robustFault {
	return []robustFault{
		{name: "silent link (1 s)", inject: func(d *robustDriver) {
			l.hold(d, time.Second, time.Second, (*netfault.Proxy).Blackhole)
		}},
		{name: "silent link past detection", inject: func(d *robustDriver) {
			l.hold(d, 5*time.Second, 8*time.Second, (*netfault.Proxy).Blackhole)
		}},
		{name: "one-way silence", inject: func(d *robustDriver) {
			dir := []netfault.Direction{netfault.ToUpstream, netfault.ToDownstream}[d.rng.IntN(2)]
			l.hold(d, 500*time.Millisecond, 5*time.Second, func(p *netfault.Proxy) { p.BlackholeOneWay(dir) })
		}},
		{name: "latency 75 ± 50 ms", inject: func(d *robustDriver) {
			l.hold(d, time.Second, 3*time.Second, func(p *netfault.Proxy) { p.Latency(75*time.Millisecond, 50*time.Millisecond) })
		}},
		{name: "latency 500 ± 200 ms", inject: func(d *robustDriver) {
			l.hold(d, time.Second, 2*time.Second, func(p *netfault.Proxy) { p.Latency(500*time.Millisecond, 200*time.Millisecond) })
		}},
		{name: "bandwidth 32 KB/s", inject: func(d *robustDriver) {
			l.hold(d, time.Second, 3*time.Second, func(p *netfault.Proxy) { p.Bandwidth(32) })
		}},
		{name: "reset mid-message", inject: func(d *robustDriver) {
			l.hold(d, 50*time.Millisecond, 300*time.Millisecond, (*netfault.Proxy).ResetMidMessage)
		}},
		{name: "connections refused", inject: func(d *robustDriver) {
			l.hold(d, 300*time.Millisecond, 2*time.Second, (*netfault.Proxy).Partition)
		}},
	}
}
