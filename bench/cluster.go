package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// This file runs a JetStream cluster of server children, each a process
// of its own that can be killed (SIGKILL) and started again, for the
// failover scenario's loss of the meta leader.

// clusterNode is what a child needs to be a node of a cluster: fixed
// ports (a node comes back on them) and every node's route.
type clusterNode struct {
	Cluster     string   `json:"cluster"`
	Name        string   `json:"name"`
	ClusterPort int      `json:"cluster_port"`
	HTTPPort    int      `json:"http_port"`
	Routes      []string `json:"routes"`
}

func (n *clusterNode) env() string {
	data, _ := json.Marshal(n)
	return string(data)
}

func parseClusterNode(env string) (*clusterNode, error) {
	var n clusterNode
	if err := json.Unmarshal([]byte(env), &n); err != nil {
		return nil, fmt.Errorf("%s: %w", clusterEnv, err)
	}
	return &n, nil
}

// configure makes opts those of the node.
func (n *clusterNode) configure(opts *server.Options) {
	opts.ServerName = n.Name
	opts.Cluster.Name = n.Cluster
	opts.Cluster.Host = "127.0.0.1"
	opts.Cluster.Port = n.ClusterPort
	opts.Routes = server.RoutesFromStr(strings.Join(n.Routes, ","))
	opts.HTTPHost = "127.0.0.1"
	opts.HTTPPort = n.HTTPPort
}

// childCluster is a cluster of server children.
type childCluster struct {
	nodes []*childServer
}

// startChildCluster starts n nodes and waits until JetStream answers.
func startChildCluster(ctx context.Context, n int) (*childCluster, error) {
	ports := make([]int, 3*n) // client, cluster and monitoring port of each
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	var routes []string
	for i := range n {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[3*i+1]))
	}
	c := &childCluster{}
	name := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	for i := range n {
		store, err := os.MkdirTemp("", "kvwatchgen-bench-")
		if err != nil {
			c.stop()
			return nil, err
		}
		node := &childServer{store: store, port: ports[3*i], cluster: &clusterNode{
			Cluster: name, Name: fmt.Sprintf("n%d", i+1), ClusterPort: ports[3*i+1], HTTPPort: ports[3*i+2], Routes: routes}}
		// The client connection of the node is not needed: the nodes are
		// reached through the cluster's URL.
		if err := node.spawn(); err != nil {
			os.RemoveAll(store)
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, node)
	}
	return c, c.waitReady(ctx)
}

// URL is every node's client URL, as nats.Connect takes it.
func (c *childCluster) URL() string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = fmt.Sprintf("nats://127.0.0.1:%d", n.port)
	}
	return strings.Join(urls, ",")
}

// metaLeader returns the name of the node leading the JetStream meta
// group, as a running node's monitoring endpoint says, or "".
func (c *childCluster) metaLeader() string {
	client := http.Client{Timeout: time.Second}
	for _, n := range c.nodes {
		if n.cmd == nil {
			continue
		}
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz", n.cluster.HTTPPort))
		if err != nil {
			continue
		}
		var jsz struct {
			Meta *struct {
				Leader string `json:"leader"`
			} `json:"meta_cluster"`
		}
		err = json.NewDecoder(resp.Body).Decode(&jsz)
		resp.Body.Close()
		if err == nil && jsz.Meta != nil && jsz.Meta.Leader != "" {
			return jsz.Meta.Leader
		}
	}
	return ""
}

// node returns the node named name, or nil.
func (c *childCluster) node(name string) *childServer {
	for _, n := range c.nodes {
		if n.cluster.Name == name {
			return n
		}
	}
	return nil
}

// waitReady waits until the cluster has a meta leader and answers a
// JetStream request, for up to 30 s.
func (c *childCluster) waitReady(ctx context.Context) error {
	nc, err := nats.Connect(c.URL())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := js.AccountInfo(actx)
		cancel()
		if err == nil && c.metaLeader() != "" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("cluster not ready within 30 s")
}

// kill kills the node (SIGKILL), leaving it down.
func (n *childServer) kill() {
	if n.cmd != nil {
		n.cmd.Process.Kill()
		n.cmd.Wait()
		n.cmd = nil
	}
}

// stop kills every node and removes their stores.
func (c *childCluster) stop() {
	for _, n := range c.nodes {
		n.stop()
	}
}
