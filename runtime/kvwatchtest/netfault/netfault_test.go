package netfault_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest/netfault"
)

// connect connects to the server through p, reconnecting every 50 ms
// without end.
func connect(t *testing.T, p *netfault.Proxy) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(p.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// Each fault does to a NATS connection what its name says, and Heal
// brings the connection back.
func TestFaults(t *testing.T) {
	s := kvwatchtest.Server(t)
	p := netfault.Start(t, s.ClientURL())
	nc := connect(t, p)
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		t.Fatal(err)
	}

	t.Run("latency", func(t *testing.T) {
		p.Latency(100*time.Millisecond, 10*time.Millisecond)
		defer p.Heal()
		rtt, err := nc.RTT()
		if err != nil {
			t.Fatal(err)
		}
		if rtt < 180*time.Millisecond {
			t.Errorf("RTT %v with 100 ms each way", rtt)
		}
	})
	healed(t, nc)

	t.Run("blackhole", func(t *testing.T) {
		p.Blackhole()
		if err := nc.FlushTimeout(300 * time.Millisecond); err == nil {
			t.Error("a flush was answered through a blackhole")
		}
		if !nc.IsConnected() {
			t.Error("the connection closed: a blackhole holds it open, silent")
		}
		if got := p.Faults(); len(got) != 2 {
			t.Errorf("faults on: %v", got)
		}
		p.Heal()
	})
	healed(t, nc)

	t.Run("one way", func(t *testing.T) {
		sub, err := nc.SubscribeSync("netfault.test")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		p.BlackholeOneWay(netfault.ToDownstream)
		direct, _ := kvwatchtest.Connect(t, s)
		if err := direct.Publish("netfault.test", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := sub.NextMsg(200 * time.Millisecond); err == nil {
			t.Error("a message came through the silent direction")
		}
		// The other way still carries: the server gets what the client
		// sends (its publish reaches a subscriber of the direct one).
		back, err := direct.SubscribeSync("netfault.back")
		if err != nil {
			t.Fatal(err)
		}
		if err := direct.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish("netfault.back", []byte("y")); err != nil {
			t.Fatal(err)
		}
		if _, err := back.NextMsg(5 * time.Second); err != nil {
			t.Errorf("nothing came the open way: %v", err)
		}
		p.Heal()
	})
	healed(t, nc)

	t.Run("reset mid-message", func(t *testing.T) {
		before := nc.Stats().Reconnects
		p.ResetMidMessage()
		nc.Flush() //nolint:errcheck // reset on the way
		kvwatchtest.Eventually(t, 10*time.Second, "a reconnect after the reset", func() bool {
			if nc.Stats().Reconnects > before {
				p.Heal()
				return true
			}
			nc.Publish("netfault.poke", nil) //nolint:errcheck // may be reset
			return false
		})
	})
	healed(t, nc)

	t.Run("partition", func(t *testing.T) {
		p.Partition()
		kvwatchtest.Eventually(t, 10*time.Second, "disconnected", func() bool { return !nc.IsConnected() })
		if err := nc.FlushTimeout(200 * time.Millisecond); err == nil {
			t.Error("a flush was answered across a partition")
		}
		p.Heal()
	})
	healed(t, nc)
}

// healed waits until nc works again.
func healed(t *testing.T, nc *nats.Conn) {
	t.Helper()
	kvwatchtest.Eventually(t, 10*time.Second, "the connection working again", func() bool {
		return nc.FlushTimeout(200*time.Millisecond) == nil
	})
}
