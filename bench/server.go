package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The benchmarked nats-server runs in a child process (this binary,
// started with serveEnv set in its environment), so that its memory is
// measured apart from the client's. The child also answers a few requests of its own over NATS:
// its memory, and bulk loads and publishes, which then do not allocate in
// the client process either.

// serveEnv marks the child process and names its store folder; portEnv,
// when set, fixes its client port (for restarts). Environment variables,
// because flags would not survive `go test`.
const (
	serveEnv = "KVWATCHGEN_BENCH_SERVE"
	portEnv  = "KVWATCHGEN_BENCH_PORT"
	// clusterEnv makes the child a node of a cluster (see clusterNode).
	clusterEnv = "KVWATCHGEN_BENCH_CLUSTER"
	// leafEnv makes the child a server of a fleet (see leafNode).
	leafEnv = "KVWATCHGEN_BENCH_LEAF"
)

// Subjects the child answers.
const (
	subjMem  = "bench.ctl.mem"
	subjLoad = "bench.ctl.load"
)

// memReport is the child's memory, measured after a GC.
type memReport struct {
	RSSKiB     uint64 `json:"rss_kib"`
	HeapKiB    uint64 `json:"heap_kib"`
	Goroutines int    `json:"goroutines"`
	// LiveHeapKiB is the Go heap the last GC found reachable
	// (runtime/metrics /gc/heap/live:bytes): no free spans, no garbage.
	LiveHeapKiB uint64 `json:"live_heap_kib"`
}

// memRequest asks the child for its memory. With Release, the child
// returns the memory its heap freed to the OS before it reads its RSS
// (debug.FreeOSMemory): the RSS then does not depend on when the runtime's
// background scavenger last ran, only on what the server holds.
type memRequest struct {
	Release bool `json:"release,omitempty"`
}

// loadRequest asks the child to write Count entries: entry i has key
// p.<prefix>.item.<id>, where id = i % PerPrefix and prefix =
// (i / PerPrefix) % Prefixes, and a JSON value of about ValueSize bytes
// that includes Version (a new version rewrites the same keys).
type loadRequest struct {
	Bucket    string `json:"bucket"`
	Prefixes  int    `json:"prefixes"`
	PerPrefix int    `json:"per_prefix"`
	Count     int    `json:"count"`
	ValueSize int    `json:"value_size"`
	Version   int    `json:"version"`
}

// prefixNames returns the prefixes 0 … n-1 of loadRequest's key layout
// as scope values: "0", "1", ….
func prefixNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	return names
}

// prefixFilters returns the key filters of the prefixes 0 … n-1 of
// loadRequest's key layout, relative to the bucket: "p.0.>", "p.1.>", ….
func prefixFilters(n int) []string {
	filters := make([]string, n)
	for i := range filters {
		filters[i] = "p." + strconv.Itoa(i) + ".>"
	}
	return filters
}

// loadReply is the revision of the last write.
type loadReply struct {
	LastSeq uint64 `json:"last_seq"`
	Error   string `json:"error,omitempty"`
}

// childServer is a running child process and a client connected to it.
type childServer struct {
	cmd   *exec.Cmd
	store string
	port  int // 0: random
	// cluster, when set, makes the child a node of a cluster.
	cluster *clusterNode
	// leaf, when set, makes the child a server of a fleet.
	leaf *leafNode
	URL  string
	nc   *nats.Conn
	js   jetstream.JetStream
}

// startChildOn starts this binary as a server child on port (0: random)
// and connects to it.
func startChildOn(port int) (*childServer, error) {
	store, err := os.MkdirTemp("", "kvwatchgen-bench-")
	if err != nil {
		return nil, err
	}
	return startChild(&childServer{store: store, port: port})
}

// startChild spawns c and connects to it; on error its store is removed.
func startChild(c *childServer) (*childServer, error) {
	var err error
	if err := c.spawn(); err != nil {
		os.RemoveAll(c.store)
		return nil, err
	}
	if c.nc, c.js, err = dial(c.URL); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// dial connects a client to the server at url as every client of the
// bench connects: reconnecting forever, every 100 ms, and with opts. On
// error nothing is left open.
func dial(url string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

// spawn starts the child process and waits for its READY line.
func (c *childServer) spawn() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), serveEnv+"="+c.store, portEnv+"="+strconv.Itoa(c.port))
	if c.cluster != nil {
		cmd.Env = append(cmd.Env, clusterEnv+"="+c.cluster.env())
	}
	if c.leaf != nil {
		cmd.Env = append(cmd.Env, leafEnv+"="+c.leaf.env())
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	c.cmd = cmd
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "READY ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("bench server did not start: %q %v", line, err)
	}
	go io.Copy(io.Discard, stdout)
	c.URL = url
	return nil
}

// crash kills the child (SIGKILL: no clean shutdown) and starts it again
// on the same port and store, as a machine that crashed and came back.
func (c *childServer) crash() error {
	c.cmd.Process.Kill()
	c.cmd.Wait()
	return c.spawn()
}

// startWithBucket starts a server child on port (0: random) with an empty
// "bench" bucket (history 1).
func startWithBucket(ctx context.Context, port int) (*childServer, jetstream.KeyValue, error) {
	srv, err := startChildOn(port)
	if err != nil {
		return nil, nil, err
	}
	kv, err := srv.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "bench"})
	if err != nil {
		srv.stop()
		return nil, nil, err
	}
	return srv, kv, nil
}

// stop ends the child and removes its store.
func (c *childServer) stop() {
	if c.nc != nil {
		c.nc.Close()
	}
	if c.cmd != nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
	os.RemoveAll(c.store)
}

// mem asks the child for its memory after a GC.
func (c *childServer) mem(ctx context.Context) (memReport, error) {
	return c.memWith(ctx, memRequest{})
}

// memWith asks the child for its memory as req says.
func (c *childServer) memWith(ctx context.Context, req memRequest) (memReport, error) {
	var r memReport
	err := c.request(ctx, ctlSubject(subjMem, c.leaf), req, &r)
	return r, err
}

// load asks the child to write keys (see loadRequest).
func (c *childServer) load(ctx context.Context, req loadRequest) (uint64, error) {
	var r loadReply
	if err := c.request(ctx, ctlSubject(subjLoad, c.leaf), req, &r); err != nil {
		return 0, err
	}
	if r.Error != "" {
		return 0, errors.New(r.Error)
	}
	return r.LastSeq, nil
}

// request sends body as JSON to the child's subject and decodes its answer
// into reply; it gives up when ctx ends, or after 5 minutes at most.
func (c *childServer) request(ctx context.Context, subject string, body, reply any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	msg, err := c.nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		return fmt.Errorf("%s: %w", subject, err)
	}
	return json.Unmarshal(msg.Data, reply)
}

// serveChild is the child process: a nats-server with JetStream storing in
// dir, and the control requests. It prints "READY <url>" when ready and
// runs until killed.
func serveChild(dir string) error {
	port, _ := strconv.Atoi(os.Getenv(portEnv))
	if port == 0 {
		port = -1
	}
	opts := &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoSigs: true}
	if env := os.Getenv(clusterEnv); env != "" {
		node, err := parseClusterNode(env)
		if err != nil {
			return err
		}
		node.configure(opts)
	}
	var leaf *leafNode
	if env := os.Getenv(leafEnv); env != "" {
		var err error
		if leaf, err = parseLeafNode(env); err != nil {
			return err
		}
		if err := leaf.configure(opts); err != nil {
			return err
		}
	}
	s, _, err := kvwatchtest.StartServer(opts) // stopped by killing the process; the store is the parent's
	if err != nil {
		return err
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		return err
	}
	// At most 4,096 writes in flight: PublishAsync waits beyond that.
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return err
	}
	nc.Subscribe(ctlSubject(subjMem, leaf), func(m *nats.Msg) {
		var req memRequest
		json.Unmarshal(m.Data, &req) // an empty or null body is the default request
		if req.Release {
			debug.FreeOSMemory() // a GC, then the freed memory back to the OS
		} else {
			runtime.GC()
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(live)
		reply, _ := json.Marshal(memReport{RSSKiB: rssKiB(os.Getpid()), HeapKiB: ms.HeapInuse / 1024, Goroutines: runtime.NumGoroutine(),
			LiveHeapKiB: live[0].Value.Uint64() / 1024})
		m.Respond(reply)
	})
	nc.Subscribe(ctlSubject(subjLoad, leaf), func(m *nats.Msg) {
		var req loadRequest
		var reply loadReply
		if err := json.Unmarshal(m.Data, &req); err != nil {
			reply.Error = err.Error()
		} else if reply.LastSeq, err = bulkLoad(js, req); err != nil {
			reply.Error = err.Error()
		}
		data, _ := json.Marshal(reply)
		m.Respond(data)
	})
	fmt.Printf("READY %s\n", s.ClientURL())
	s.WaitForShutdown()
	return nil
}

// bulkLoad writes the keys of req with async publishes and returns the
// last sequence.
func bulkLoad(js jetstream.JetStream, req loadRequest) (uint64, error) {
	per, prefixes := max(req.PerPrefix, 1), max(req.Prefixes, 1)
	var last jetstream.PubAckFuture
	for i := range req.Count {
		subject := fmt.Sprintf("$KV.%s.p.%d.item.%d", req.Bucket, (i/per)%prefixes, i%per)
		// A busy machine can keep 4,096 writes in flight for longer than
		// nats.go's default stall wait (200 ms), which then fails the load.
		f, err := js.PublishAsync(subject, itemValue(i, req.Version, req.ValueSize), jetstream.WithStallWait(time.Minute))
		if err != nil {
			return 0, err
		}
		last = f
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if last == nil {
		return 0, nil
	}
	select {
	case ack := <-last.Ok():
		return ack.Sequence, nil
	case err := <-last.Err():
		return 0, err
	}
}

// itemValue is the JSON of a benchmark item, padded to about size bytes.
func itemValue(i, version, size int) []byte {
	v := fmt.Sprintf(`{"name":"item-%d","owner":"team-%d","cidr":"10.%d.%d.0/24","next_hop":"10.0.0.1","metric":%d,"enabled":true,"version":%d,"tags":["a","b"],"note":"`,
		i, i%50, (i/256)%256, i%256, i%100, version)
	pad := max(size-len(v)-2, 0)
	return []byte(v + strings.Repeat("x", pad) + `"}`)
}

// rssKiB reads a process's resident set size from /proc (Linux); 0 where
// that is not available.
func rssKiB(pid int) uint64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// cpuTime reads the CPU time (user and system) a process has used from
// /proc (Linux, in clock ticks of 10 ms); 0 where that is not available.
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	_, rest, ok := strings.Cut(string(data), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseUint(fields[11], 10, 64)
	stime, err2 := strconv.ParseUint(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
