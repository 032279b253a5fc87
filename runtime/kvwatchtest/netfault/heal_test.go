package netfault_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// Setting and healing a reset return however busy the connections are: a subscriber and a publisher stream through the proxy while the
// fault is set and healed over and over. Removing a sliced reset from
// live links once hung for an hour in toxiproxy (a stage blocked sending
// to the one being removed).
func TestHealAfterResetUnderTraffic(t *testing.T) {
	s := kvwatchtest.Server(t)
	p := netfault.Start(t, s.ClientURL())
	sub := connect(t, p)
	pub := connect(t, p)
	if _, err := sub.Subscribe("load", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		payload := make([]byte, 512)
		for {
			select {
			case <-stop:
				return
			default:
			}
			pub.Publish("load", payload) //nolint:errcheck // while reset, publishes fail or buffer
		}
	}()
	defer func() { close(stop); <-done }()

	for i := range 60 {
		returned := make(chan struct{})
		go func() { p.ResetMidMessage(); p.Heal(); close(returned) }()
		select {
		case <-returned:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: setting and healing the reset did not return in 20 s", i+1)
		}
		if err := waitConnected(sub, pub); err != nil {
			t.Fatalf("round %d: %v", i+1, err)
		}
	}
}

// waitConnected waits until every connection given answers a flush, for
// at most 10 s. Each flush may wait until that deadline: its PONG comes
// behind everything the publisher queued (on a busy machine, more than a
// flush of 200 ms ever waited, though both connections were up). A flush
// cut short by the connection resetting again is sent again.
func waitConnected(ncs ...*nats.Conn) error {
	deadline := time.Now().Add(10 * time.Second)
	for i, nc := range ncs {
		for {
			left := time.Until(deadline)
			if left <= 0 {
				return fmt.Errorf("connection %d did not answer a flush in 10 s (%v, %d reconnects)", i, nc.Status(), nc.Stats().Reconnects)
			}
			if nc.FlushTimeout(left) == nil {
				break
			}
		}
	}
	return nil
}
