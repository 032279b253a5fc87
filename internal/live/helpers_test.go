package live

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// fleetSchema is the fleet example's schema: bucket network with kinds
// VPCConfig (vpc.{vpc}), Route (vpc.{vpc}.route.{route_id}) and
// FirewallRule (vpc.{vpc}.firewall.{priority:uint}), scope VPC.
const fleetSchema = "../../examples/fleet/fleetkv/kvwatch.yaml"

// syncBuffer is a bytes.Buffer safe for a subcommand writing while the
// test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// testEnv is an Env writing to buffers, with an environment of its own:
// no NATS_URL, and the nats CLI's configuration in a folder of the test's
// (a developer's own contexts are never read).
func testEnv(t *testing.T, vars ...string) (Env, *syncBuffer, *syncBuffer) {
	t.Helper()
	env := map[string]string{"XDG_CONFIG_HOME": t.TempDir()}
	for _, kv := range vars {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	out, errOut := &syncBuffer{}, &syncBuffer{}
	return Env{Stdout: out, Stderr: errOut, Getenv: func(k string) string { return env[k] }}, out, errOut
}

// run runs a subcommand to its end.
func run(t *testing.T, env Env, args ...string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	return Run(ctx, args, env)
}

// fill writes the bucket's test entries: n good routes in VPC blue, a
// VPCConfig, a firewall rule, and the bad ones verify reports: a value
// that does not decode, a key matching no template, a key whose typed
// parameter does not parse; plus a deleted key, which is no entry.
func fill(t *testing.T, kv jetstream.KeyValue, n int) {
	t.Helper()
	ctx := t.Context()
	put := func(key, value string) {
		t.Helper()
		if _, err := kv.PutString(ctx, key, value); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		put(fmt.Sprintf("vpc.blue.route.r%04d", i), fmt.Sprintf(`{"cidr":"10.1.%d.0/24","next_hop":"10.1.0.1","metric":%d}`, i%256, i))
	}
	put("vpc.blue", `{"name":"blue","cidr":"10.1.0.0/16"}`)
	put("vpc.green.firewall.10", `{"action":"allow","cidr":"0.0.0.0/0","port":443}`)
	put("vpc.blue.route.bad", `{"cidr":"10.9.0.0/24","metric":"high"}`)
	put("vpc.blue.junk.1", `whatever`)
	put("vpc.green.firewall.010", `{"action":"deny"}`)
	put("vpc.green.route.gone", `{}`)
	if err := kv.Delete(ctx, "vpc.green.route.gone"); err != nil {
		t.Fatal(err)
	}
}

// filledServer starts a server with bucket network filled with n good routes.
func filledServer(t *testing.T, n int) (url string, js jetstream.JetStream, kv jetstream.KeyValue) {
	t.Helper()
	return filledServerWith(t, n, 1)
}

// filledServerWith is filledServer with a bucket keeping history entries
// a key.
func filledServerWith(t *testing.T, n, history int) (url string, js jetstream.JetStream, kv jetstream.KeyValue) {
	t.Helper()
	s := kvwatchtest.Server(t)
	_, js = kvwatchtest.Connect(t, s)
	kv = kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", History: uint8(history)})
	fill(t, kv, n)
	return s.ClientURL(), js, kv
}
