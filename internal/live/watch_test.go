package live

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/internal/live/interp"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// startWatch runs watch until the returned stop is called, which returns
// its exit code.
func startWatch(t *testing.T, env Env, args ...string) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	code := make(chan int, 1)
	go func() { code <- Run(ctx, append([]string{"watch"}, args...), env) }()
	return func() int {
		cancel()
		select {
		case c := <-code:
			return c
		case <-time.After(20 * time.Second):
			t.Fatal("watch did not return after its context ended")
			return -1
		}
	}
}

// waitFor waits until buf holds want; a failure shows buf as it is then.
func waitFor(t *testing.T, buf *syncBuffer, want string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(buf.String(), want); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 20 s: output holds %s:\n%s", want, buf.String())
		}
	}
}

// watch writes the state in scope, a line at sync, then each change in
// stream order; what does not decode goes to stderr and the watch goes on.
// It holds one consumer, and none once it is stopped.
func TestWatchTailsTyped(t *testing.T) {
	// A history of a few entries a key: with one, a put deleted before the
	// consumer delivers it is gone from the stream, and the watch goes
	// from the value before to the delete (exact, without that write),
	// which a busy machine showed now and then; this test checks the line
	// of every change.
	url, js, kv := filledServerWith(t, 3, 8)
	env, out, errOut := testEnv(t)
	stop := startWatch(t, env, "-schema", fleetSchema, "-server", url, "-scope", "VPC=green", "-prev")
	waitFor(t, out, "-- synced at revision 10: 1 entry; live changes follow\n")
	if !strings.Contains(out.String(), "network rev 5 FirewallRule put vpc=green priority=10 (initial) {\"action\":\"allow\",\"cidr\":\"0.0.0.0/0\",\"port\":443}\n") {
		t.Fatalf("initial state:\n%s", out)
	}
	if !strings.Contains(errOut.String(), `vpc.green.firewall.010`) {
		t.Fatalf("the bad key was not reported on stderr: %q", errOut)
	}
	if n := kvwatchtest.Consumers(t, js, "network"); n != 1 {
		t.Fatalf("%d consumers, want 1", n)
	}
	ctx := t.Context()
	kv.PutString(ctx, "vpc.green.firewall.10", `{"action":"deny","cidr":"0.0.0.0/0","port":443}`)
	kv.PutString(ctx, "vpc.blue.route.r0000", `{"cidr":"ignored, out of scope"}`)
	kv.PutString(ctx, "vpc.green.route.r1", `{"cidr":"10.2.0.0/24","metric":"bad"}`)
	kv.Delete(ctx, "vpc.green.firewall.10")
	waitFor(t, out, "network rev 14 FirewallRule delete vpc=green priority=10 prev {\"action\":\"deny\",\"cidr\":\"0.0.0.0/0\",\"port\":443}\n")
	want := "network rev 11 FirewallRule put vpc=green priority=10 {\"action\":\"deny\",\"cidr\":\"0.0.0.0/0\",\"port\":443} prev {\"action\":\"allow\",\"cidr\":\"0.0.0.0/0\",\"port\":443}\n"
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "r0000") {
		t.Fatalf("live changes:\n%s", out)
	}
	waitFor(t, errOut, "vpc.green.route.r1")
	if code := stop(); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if n := kvwatchtest.Consumers(t, js, "network"); n != 0 {
		t.Fatalf("%d consumers after the watch, want none", n)
	}
}

// -json writes one JSON object a line, events with the key's parameters
// and the value as JSON.
func TestWatchJSON(t *testing.T) {
	url, _, _ := filledServer(t, 2)
	env, out, errOut := testEnv(t)
	stop := startWatch(t, env, "-schema", fleetSchema, "-s", url, "-json", "-scope", "VPC=blue")
	waitFor(t, out, `"type":"synced"`)
	if code := stop(); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	var events []watchEvent
	for sc.Scan() {
		var ev watchEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		events = append(events, ev)
	}
	// vpc.blue, two routes; the bad route and the unknown key on stderr.
	if len(events) != 4 || events[3].Type != "synced" || events[3].Entries != 3 {
		t.Fatalf("events: %s", out)
	}
	var r watchEvent
	for _, ev := range events {
		if ev.Key == "vpc.blue.route.r0000" {
			r = ev
		}
	}
	if r.Kind != "Route" || len(r.Params) != 2 || r.Params[1] != (interp.Param{Name: "route_id", Value: "r0000"}) || !r.Initial {
		t.Fatalf("first route: %+v", r)
	}
	if v, ok := r.Value.(map[string]any); !ok || v["cidr"] != "10.1.0.0/24" {
		t.Fatalf("value %#v", r.Value)
	}
	if !strings.Contains(errOut.String(), `"type":"problem"`) {
		t.Fatalf("stderr: %s", errOut)
	}
}
