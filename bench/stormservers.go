package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// This file runs the storm scenario's servers: a hub and its edges on
// fixed ports (a restarted server comes back where its clients look for
// it), each edge's leafnode link through a fault proxy, and a meter of
// what each server spends during an event: CPU, peak memory, JetStream
// API requests (by kind too: stormapi.go) and errors with their peak
// rate, and consumers created.

// stormServers is the hub, its edges and the proxies of their links.
type stormServers struct {
	hub   *childServer
	edges []*childServer
	links []*netfault.Proxy // edge i's leafnode link to the hub
}

// startStormServers starts the hub with the bucket loaded, then edges
// edges linked through a proxy each, with the recommended settings
// (docs/fleet.md: isolated leafnode interest, local inboxes denied), and
// returns once every edge's mirror holds the bucket.
func startStormServers(ctx context.Context, edges int) (*stormServers, error) {
	s := &stormServers{}
	node := func(name, domain string) (*leafNode, int, error) {
		ports := make([]int, 3)
		for i := range ports {
			p, err := freePort()
			if err != nil {
				return nil, 0, err
			}
			ports[i] = p
		}
		return &leafNode{Name: name, Domain: domain, HTTPPort: ports[0], ListenPort: ports[1]}, ports[2], nil
	}
	hubNode, hubPort, err := node("hub", fleetHubDomain)
	if err != nil {
		return nil, err
	}
	hubNode.Isolate = true
	if s.hub, err = startFleetServer(hubNode, hubPort); err != nil {
		return nil, err
	}
	last, err := loadHub(ctx, s.hub)
	if err != nil {
		s.stop()
		return nil, err
	}
	for i := range edges {
		n, port, err := node(fmt.Sprintf("edge%d", i+1), fmt.Sprintf("edge%d", i+1))
		if err != nil {
			s.stop()
			return nil, err
		}
		link, err := netfault.New(fmt.Sprintf("127.0.0.1:%d", hubNode.ListenPort))
		if err != nil {
			s.stop()
			return nil, err
		}
		s.links = append(s.links, link)
		n.ListenPort = 0
		n.Hub = "nats-leaf://" + link.Addr()
		n.DenyImports = []string{fleetLocalDeny}
		edge, err := startFleetServer(n, port)
		if err != nil {
			s.stop()
			return nil, err
		}
		s.edges = append(s.edges, edge)
	}
	for _, edge := range s.edges {
		if err := startMirror(ctx, edge, last); err != nil {
			s.stop()
			return nil, err
		}
	}
	return s, nil
}

// urls are the edges' client URLs.
func (s *stormServers) urls() []string {
	var out []string
	for _, e := range s.edges {
		out = append(out, e.URL)
	}
	return out
}

func (s *stormServers) stop() {
	for _, e := range append([]*childServer{s.hub}, s.edges...) {
		if e != nil {
			e.stop()
		}
	}
	for _, l := range s.links {
		l.Close()
	}
}

// stormMeterEvery is how often the meter samples each server's memory and
// JetStream API count.
const stormMeterEvery = 100 * time.Millisecond

// serverMeter is what one server spent since the meter began.
type serverMeter struct {
	c *childServer

	mu               sync.Mutex
	down             bool          // killed, not yet started again
	cpuBase, cpuDone time.Duration // at begin; of processes ended since
	apiBase, errBase uint64        // at begin (0 after a restart)
	apiDone, errDone uint64        // of processes ended since
	peakRSS          uint64        // KiB
	peakRate         float64       // API requests a second
	lastTotal        uint64
	lastAt           time.Time
	created          atomic.Int64
	sub              *nats.Subscription
	api              apiCounts // by kind (stormapi.go)
	apiSub           *nats.Subscription
}

// stormMeter meters every server of the fleet during one event.
type stormMeter struct {
	hub      *serverMeter
	edges    []*serverMeter
	stopc    chan struct{}
	done     chan struct{}
	sampling bool // the sampler runs: stop waits for it
}

// jszAPI is the part of /jsz the meter reads.
type jszAPI struct {
	API struct {
		Total  uint64 `json:"total"`
		Errors uint64 `json:"errors"`
	} `json:"api"`
}

// consumerAdvisory is the part of a consumer action advisory the meter
// reads: the domain tells the server that created the consumer, since
// advisories cross leafnode links.
type consumerAdvisory struct {
	Domain string `json:"domain"`
}

// beginMeter starts metering s's servers.
func beginMeter(ctx context.Context, s *stormServers) (*stormMeter, error) {
	m := &stormMeter{stopc: make(chan struct{}), done: make(chan struct{})}
	for i, c := range append([]*childServer{s.hub}, s.edges...) {
		sm := &serverMeter{c: c}
		sm.cpuBase = cpuTime(c.cmd.Process.Pid)
		var j jszAPI
		if err := c.monitor(ctx, "jsz", &j); err != nil {
			m.stop()
			return nil, err
		}
		sm.apiBase, sm.errBase, sm.lastTotal, sm.lastAt = j.API.Total, j.API.Errors, j.API.Total, time.Now()
		sm.peakRSS = rssKiB(c.cmd.Process.Pid)
		domain := c.leaf.Domain
		sub, err := c.nc.Subscribe("$JS.EVENT.ADVISORY.CONSUMER.CREATED.>", func(msg *nats.Msg) {
			var a consumerAdvisory
			if json.Unmarshal(msg.Data, &a) == nil && a.Domain == domain {
				sm.created.Add(1)
			}
		})
		if err != nil {
			m.stop()
			return nil, err
		}
		sm.sub = sub
		if sm.apiSub, err = c.nc.Subscribe("$JS.API.>", func(msg *nats.Msg) { sm.api.count(msg.Subject) }); err != nil {
			m.stop()
			return nil, err
		}
		if i == 0 {
			m.hub = sm
		} else {
			m.edges = append(m.edges, sm)
		}
	}
	for _, sm := range m.all() {
		if err := sm.c.nc.Flush(); err != nil {
			m.stop()
			return nil, err
		}
	}
	m.sampling = true
	go m.sample(ctx)
	return m, nil
}

func (m *stormMeter) all() []*serverMeter {
	if m.hub == nil {
		return m.edges
	}
	return append([]*serverMeter{m.hub}, m.edges...)
}

func (m *stormMeter) sample(ctx context.Context) {
	defer close(m.done)
	tick := time.NewTicker(stormMeterEvery)
	defer tick.Stop()
	for {
		select {
		case <-m.stopc:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, sm := range m.all() {
			sm.sample(ctx)
		}
	}
}

func (sm *serverMeter) sample(ctx context.Context) {
	sm.mu.Lock()
	if sm.down {
		sm.mu.Unlock()
		return
	}
	pid := sm.c.cmd.Process.Pid
	sm.mu.Unlock()
	rss := rssKiB(pid)
	var j jszAPI
	err := sm.c.monitor(ctx, "jsz", &j)
	now := time.Now()
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.down || sm.c.cmd.Process.Pid != pid {
		return
	}
	sm.peakRSS = max(sm.peakRSS, rss)
	if err != nil {
		return
	}
	if j.API.Total >= sm.lastTotal {
		if dt := now.Sub(sm.lastAt).Seconds(); dt > 0 {
			sm.peakRate = max(sm.peakRate, float64(j.API.Total-sm.lastTotal)/dt)
		}
	}
	sm.lastTotal, sm.lastAt = j.API.Total, now
}

// kill ends sm's server at once (SIGKILL), keeping what it spent.
func (sm *serverMeter) kill(ctx context.Context) {
	var j jszAPI
	jszErr := sm.c.monitor(ctx, "jsz", &j)
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.cpuDone += cpuTime(sm.c.cmd.Process.Pid) - sm.cpuBase
	if jszErr == nil {
		sm.apiDone += j.API.Total - sm.apiBase
		sm.errDone += j.API.Errors - sm.errBase
	}
	sm.cpuBase, sm.apiBase, sm.errBase, sm.lastTotal = 0, 0, 0, 0
	sm.down = true
	sm.c.cmd.Process.Kill()
	sm.c.cmd.Wait()
}

// start starts sm's server again on its port and store.
func (sm *serverMeter) start() error {
	err := sm.c.spawn()
	sm.mu.Lock()
	defer sm.mu.Unlock()
	sm.down, sm.lastAt = err != nil, time.Now()
	return err
}

// serverSpent is what a server spent during an event.
type serverSpent struct {
	cpu                  time.Duration
	peakRSSKiB           uint64
	apiRequests, apiErrs uint64
	peakRate             float64
	consumersCreated     int64
	apiByKind            [numAPIKinds]uint64 // counted by subject, direct gets too
}

// end stops metering and returns what each server spent (hub first).
func (m *stormMeter) end(ctx context.Context) []serverSpent {
	m.stop()
	var out []serverSpent
	for _, sm := range m.all() {
		var j jszAPI
		err := sm.c.monitor(ctx, "jsz", &j)
		sm.mu.Lock()
		sp := serverSpent{cpu: sm.cpuDone + cpuTime(sm.c.cmd.Process.Pid) - sm.cpuBase, peakRSSKiB: sm.peakRSS,
			apiRequests: sm.apiDone, apiErrs: sm.errDone, peakRate: sm.peakRate, consumersCreated: sm.created.Load(), apiByKind: sm.api.counts()}
		if err == nil {
			sp.apiRequests += j.API.Total - sm.apiBase
			sp.apiErrs += j.API.Errors - sm.errBase
		}
		sm.mu.Unlock()
		out = append(out, sp)
	}
	return out
}

func (m *stormMeter) stop() {
	select {
	case <-m.stopc:
	default:
		close(m.stopc)
		if m.sampling {
			<-m.done
		}
	}
	for _, sm := range m.all() {
		if sm.sub != nil {
			sm.sub.Unsubscribe()
			sm.sub = nil
		}
		if sm.apiSub != nil {
			sm.apiSub.Unsubscribe()
			sm.apiSub = nil
		}
	}
}
