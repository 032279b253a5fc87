// Package exampleserver starts an embedded JetStream nats-server for the
// repository's runnable examples (Example functions), which have no
// testing.T to hand to runtime/kvwatchtest.
package exampleserver

import (
	"errors"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Start starts a JetStream server on a random local port with a temporary
// store and returns its client URL and a function that shuts it down and
// removes the store.
func Start() (url string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "kvwatchgen-example-")
	if err != nil {
		return "", nil, err
	}
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoSigs: true})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		os.RemoveAll(dir)
		return "", nil, errors.New("exampleserver: nats-server did not start within 10s")
	}
	return s.ClientURL(), func() { s.Shutdown(); s.WaitForShutdown(); os.RemoveAll(dir) }, nil
}
