package kvwatchimpl_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// Puts, deletes and purges become typed events; a value that does not
// decode and a key that matches no template are reported with key and
// revision, and the watch goes on.
func TestOpsAndBadDataAreReported(t *testing.T) {
	js, kv := setup(t)
	ctx := context.Background()
	badInitial, _ := kv.PutString(ctx, "vpc.a.route.bad0", "{not json")
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r)
	waitSynced(t, w)

	put(t, kv, "vpc.a.route.r1", route{CIDR: "1"})
	badValue, _ := kv.PutString(ctx, "vpc.a.route.r2", "not json")
	unknown, _ := kv.PutString(ctx, "vpc.a.policy.p1", "{}")
	put(t, kv, "vpc.a.route.r3", route{CIDR: "3"})
	// With history 1 a later write removes an earlier revision from the
	// stream; wait for the puts so that the delete and the purge cannot
	// take them away before the consumer delivers them.
	r.waitFor(t, "the puts", func(ev []got, _ []error) bool { return hasKey(ev, "vpc.a.route.r3", kvwatch.OpPut) })
	if err := kv.Delete(ctx, "vpc.a.route.r1"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "vpc.a.route.r3"); err != nil {
		t.Fatal(err)
	}
	put(t, kv, "vpc.a", vpcConfig{Name: "after the bad data"})

	events := r.waitFor(t, "the write after the bad data", func(ev []got, _ []error) bool { return hasKey(ev, "vpc.a", kvwatch.OpPut) })
	_, errs := r.snapshot()
	var ops []string
	for _, e := range events {
		ops = append(ops, fmt.Sprintf("%s %s prev=%s", e.Op, e.Key, e.Prev))
	}
	want := []string{
		"put vpc.a.route.r1 prev=",
		"put vpc.a.route.r3 prev=",
		`delete vpc.a.route.r1 prev={"cidr":"1","next_hop":""}`,
		`purge vpc.a.route.r3 prev={"cidr":"3","next_hop":""}`,
		"put vpc.a prev=",
	}
	if strings.Join(ops, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(ops, "\n"), strings.Join(want, "\n"))
	}
	if len(errs) != 3 {
		t.Fatalf("errors = %v, want 3", errs)
	}
	var de *kvwatch.DataError
	if !errors.As(errs[0], &de) || de.Key != "vpc.a.route.bad0" || de.Revision != badInitial || de.Kind != "Route" {
		t.Errorf("errs[0] = %v, want a DataError for vpc.a.route.bad0 at %d", errs[0], badInitial)
	}
	if !errors.As(errs[1], &de) || de.Key != "vpc.a.route.r2" || de.Revision != badValue {
		t.Errorf("errs[1] = %v, want a DataError for vpc.a.route.r2 at %d", errs[1], badValue)
	}
	var ue *kvwatch.UnknownKeyError
	if !errors.As(errs[2], &ue) || ue.Key != "vpc.a.policy.p1" || ue.Revision != unknown {
		t.Errorf("errs[2] = %v, want an UnknownKeyError for vpc.a.policy.p1 at %d", errs[2], unknown)
	}
	s := w.Stats()
	if s.DataErrors != 2 || s.UnknownKeys != 1 || s.Puts != 3 || s.Deletes != 1 || s.Purges != 1 {
		t.Errorf("stats = %+v", s)
	}
}

// A panicking handler is reported and later events still arrive.
func TestHandlerPanicDoesNotStopTheWatch(t *testing.T) {
	js, kv := setup(t)
	r := newRecorder()
	record := recordEvent[routeKey, route](r, "Route")
	bindings := []kvwatchimpl.AnyBinding{
		kvwatchimpl.Bind(&routeKind, func(ev kvwatch.Event[routeKey, route]) {
			if ev.Key.RouteID == "boom" {
				panic("handler bug")
			}
			record(ev)
		}),
		kvwatchimpl.Bind(&vpcKind, nil),
	}
	w, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), bindings, r.options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	waitSynced(t, w)
	put(t, kv, "vpc.a.route.boom", route{})
	put(t, kv, "vpc.a.route.after", route{})
	r.waitFor(t, "the event after the panic", func(ev []got, _ []error) bool { return hasKey(ev, "vpc.a.route.after", kvwatch.OpPut) })
	_, errs := r.snapshot()
	var he *kvwatch.HandlerError
	if len(errs) != 1 || !errors.As(errs[0], &he) || he.Panic != "handler bug" || he.Key != "vpc.a.route.boom" {
		t.Fatalf("errors = %v, want one HandlerError", errs)
	}
	if w.Stats().HandlerPanics != 1 {
		t.Errorf("HandlerPanics = %d", w.Stats().HandlerPanics)
	}
}

// Stop returns after every goroutine of the watcher has exited, and the
// consumer is gone from the server.
func TestStopLeavesNothingBehind(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{})
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a", "b"), r)
	waitSynced(t, w)
	if stacks := ourGoroutines(); len(stacks) == 0 {
		t.Fatal("no watcher goroutine found while running: the check below would prove nothing")
	}
	w.Stop()
	if stacks := ourGoroutines(); len(stacks) > 0 {
		// A goroutine that has signalled its exit may still show its last
		// frame for a moment; one still there after a second is left over.
		kvwatchtest.Eventually(t, time.Second, "no watcher goroutine left after Stop; right after it:\n"+strings.Join(stacks, "\n\n"),
			func() bool { return len(ourGoroutines()) == 0 })
	}
	if n := kvwatchtest.Consumers(t, js, "network"); n != 0 {
		t.Fatalf("consumers after Stop = %d, want 0", n)
	}
	select {
	case <-w.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	w.Stop() // idempotent
	if err := w.WaitSynced(context.Background()); err != nil {
		t.Fatalf("WaitSynced after Stop of a synced watcher = %v", err)
	}
}

// ourGoroutines returns the stacks of goroutines running code of package
// kvwatch (not its tests).
func ourGoroutines() []string {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	var ours []string
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "runtime/kvwatchimpl.(*Watcher)") {
			ours = append(ours, g)
		}
	}
	return ours
}

// A watch ended by its context reports no error and exits.
func TestContextEndsTheWatch(t *testing.T) {
	js, _ := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := kvwatchimpl.Start(ctx, js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil), kvwatchimpl.Bind(&vpcKind, nil)})
	if err != nil {
		t.Fatal(err)
	}
	waitSynced(t, w)
	cancel()
	select {
	case <-w.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not end within 10s of its context")
	}
	if w.Err() != nil {
		t.Fatalf("Err = %v, want nil", w.Err())
	}
}

// A missing bucket is a clear error from Start.
func TestMissingBucket(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	_, err := kvwatchimpl.Start(context.Background(), js, &network, vpcs("a"), []kvwatchimpl.AnyBinding{kvwatchimpl.Bind(&routeKind, nil)})
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("err = %v, want ErrBucketNotFound", err)
	}
}
