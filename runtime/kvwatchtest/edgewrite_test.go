package kvwatchtest

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A write through Edge.Connect's connection, whose replies from the hub
// the edge denies, fails within seconds with an error naming
// ConnectWriter, even with a context that has no deadline; it does not
// wait for a timeout of minutes.
func TestEdgeConnectWriteFailsFast(t *testing.T) {
	f := StartFleet(t, jetstream.KeyValueConfig{Bucket: "network"}, FleetOptions{})
	_, js := f.Edges[0].Connect(t)
	kv, err := js.KeyValue(t.Context(), "network")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := kv.PutString(t.Context(), "k", "v")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "ConnectWriter") {
			t.Errorf("a write through Edge.Connect after %v: %v, want an error naming ConnectWriter", time.Since(start), err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("the write failed after %v, want within a few seconds", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a write through Edge.Connect has not failed after 15 s")
	}
}
