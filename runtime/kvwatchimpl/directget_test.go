package kvwatchimpl_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// A read by direct get whose answer the server never sends, because the
// connection reconnected meanwhile (a server restart), fails at once with
// ErrReconnected, to be sent again, instead of waiting for its whole
// timeout. Before, a re-scope in flight during a server restart delivered
// its first event a request timeout (5 s) after the server was back.
func TestDirectGetAfterAReconnectDoesNotWaitItsTimeout(t *testing.T) {
	s := kvwatchtest.Server(t)
	nc, js := kvwatchtest.Connect(t, s, nats.ReconnectWait(10*time.Millisecond))
	// Someone takes the request and never answers: no "no responders".
	silent, _ := kvwatchtest.Connect(t, s)
	if _, err := silent.Subscribe("$JS.API.DIRECT.GET.KV_silent", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	silent.Flush()
	dg := directget.New(js, "KV_silent", time.Minute)
	if err := dg.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer dg.Close()
	p, err := dg.Send(directget.Request{MultiLast: []string{"$KV.silent.>"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		_, err := dg.Receive(p, func(*nats.Msg) {})
		got <- err
	}()
	select {
	case err := <-got:
		if !errors.Is(err, directget.ErrReconnected) {
			t.Errorf("Receive after a reconnect = %v, want ErrReconnected", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Receive still waits 20 s after the reconnect (its timeout is a minute)")
	}
}
