// Package exampleserver starts the embedded JetStream nats-server of the
// repository's runnable examples (Example functions), which have no
// testing.T: it is kvwatchtest.StartServer with default options, reduced
// to what an example prints and needs.
package exampleserver

import "github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"

// Start starts a JetStream server on a random loopback port with a
// temporary store (kvwatchtest.StartServer) and returns its client URL and
// a function that shuts it down and removes the store; the caller must
// call it.
func Start() (url string, stop func(), err error) {
	s, stop, err := kvwatchtest.StartServer(nil)
	if err != nil {
		return "", nil, err
	}
	return s.ClientURL(), stop, nil
}
