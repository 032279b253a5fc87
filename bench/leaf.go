package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// This file makes a server child a server of a fleet (docs/fleet.md): the
// hub, with a leafnode listener, or an edge, a leaf node of the hub. Each
// has its own JetStream domain and a monitoring port.

// leafNode is what a child needs to be a server of a fleet.
type leafNode struct {
	// Name is the server's name; it also names its control subjects (see
	// ctlSubject).
	Name string `json:"name"`
	// Domain is its JetStream domain.
	Domain string `json:"domain"`
	// HTTPPort is its monitoring port (/varz).
	HTTPPort int `json:"http_port"`
	// ListenPort, on the hub, is its leafnode port on 127.0.0.1.
	ListenPort int `json:"listen_port,omitempty"`
	// Isolate, on the hub, sets isolate_leafnode_interest: the interest a
	// leaf node sends is not passed on to the other leaf nodes.
	Isolate bool `json:"isolate,omitempty"`
	// Hub, on an edge, is the hub's leafnode URL.
	Hub string `json:"hub,omitempty"`
	// DenyImports, on an edge, are the subjects its leaf remote denies:
	// the edge does not send interest in them to the hub.
	DenyImports []string `json:"deny_imports,omitempty"`
}

func (n *leafNode) env() string {
	data, _ := json.Marshal(n)
	return string(data)
}

func parseLeafNode(env string) (*leafNode, error) {
	var n leafNode
	if err := json.Unmarshal([]byte(env), &n); err != nil {
		return nil, fmt.Errorf("%s: %w", leafEnv, err)
	}
	return &n, nil
}

// configure makes opts those of the server. Every server of a fleet lifts
// the default cap of 1,000 consumers per stream: an edge's mirror serves
// every watcher on the edge.
func (n *leafNode) configure(opts *server.Options) error {
	opts.ServerName = n.Name
	opts.JetStreamDomain = n.Domain
	opts.JetStreamLimits.DefaultMaxConsumers = -1
	opts.HTTPHost = "127.0.0.1"
	opts.HTTPPort = n.HTTPPort
	if n.ListenPort != 0 {
		opts.LeafNode.Host = "127.0.0.1"
		opts.LeafNode.Port = n.ListenPort
		opts.LeafNode.NoAdvertise = true
		opts.LeafNode.IsolateLeafnodeInterest = n.Isolate
	}
	if n.Hub != "" {
		u, err := url.Parse(n.Hub)
		if err != nil {
			return fmt.Errorf("%s: hub: %w", leafEnv, err)
		}
		opts.LeafNode.ReconnectInterval = 100 * time.Millisecond
		opts.LeafNode.Remotes = []*server.RemoteLeafOpts{{URLs: []*url.URL{u}, DenyImports: n.DenyImports}}
	}
	return nil
}

// ctlSubject is the control subject a child answers: subject itself, or,
// for a server of a fleet, subject.<name>. Servers linked by leafnodes
// share interest, so a request on a shared subject could be answered by
// any of them.
func ctlSubject(subject string, n *leafNode) string {
	if n == nil {
		return subject
	}
	return subject + "." + n.Name
}

// varzInfo is the part of a server's /varz the fleet scenario reads.
type varzInfo struct {
	Subscriptions int `json:"subscriptions"`
	Leafnodes     int `json:"leafnodes"`
}

// varz reads the /varz of a server of a fleet.
func (c *childServer) varz(ctx context.Context) (varzInfo, error) {
	var v varzInfo
	err := c.monitor(ctx, "varz", &v)
	return v, err
}

// leafzInfo is the part of a server's /leafz the fleet scenarios read:
// per leafnode connection, the subscriptions the other side sent.
type leafzInfo struct {
	Leafs []struct {
		Subscriptions int `json:"subscriptions"`
	} `json:"leafs"`
}

// interestFromHub is, on an edge, the number of subscriptions the hub
// has sent it over their leafnode connection (its /leafz): the interest
// the hub passes on from its own clients and the other edges.
func (c *childServer) interestFromHub(ctx context.Context) (int, error) {
	var l leafzInfo
	if err := c.monitor(ctx, "leafz", &l); err != nil {
		return 0, err
	}
	if len(l.Leafs) != 1 {
		return 0, fmt.Errorf("leafz of %s: %d leafnode connections, want 1", c.leaf.Name, len(l.Leafs))
	}
	return l.Leafs[0].Subscriptions, nil
}

// monitor reads the monitoring endpoint (varz, leafz) of a server of a
// fleet into v.
func (c *childServer) monitor(ctx context.Context, endpoint string, v any) error {
	if c.leaf == nil {
		return fmt.Errorf("%s: %s is not a server of a fleet", endpoint, c.URL)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/%s", c.leaf.HTTPPort, endpoint), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s of %s: %w", endpoint, c.leaf.Name, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%s of %s: %w", endpoint, c.leaf.Name, err)
	}
	return nil
}
