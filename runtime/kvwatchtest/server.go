package kvwatchtest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartServer starts a nats-server with JetStream in this process and
// returns once it takes connections, at s.ClientURL(). It needs no
// testing.TB, for a demo's or a tool's main; every other helper of this
// package starts its servers through it and stops them when the test ends.
//
// opts (nil is the zero Options) is copied, never changed. StartServer
// turns JetStream on, installs no signal handlers, and fills in what opts
// leaves empty: the host (127.0.0.1), the client port (a random free one
// when Port is 0; -1 also means random) and the store folder (a new
// temporary folder when StoreDir is empty). Everything else, leaf nodes,
// routes, domains, limits, is taken as given.
//
// It fails with the server's own reason as soon as the server gives up
// (a port taken, invalid options), or when the server does not take
// connections within 20 s; it then leaves nothing running and no folder
// behind.
//
// The caller owns the server and must call stop: it shuts the server down,
// waits until it is down and removes the store folder if StartServer made
// it (a StoreDir given in opts is left in place, so that a server can be
// started on it again). stop may be called more than once. The server
// logs nothing; s.SetLoggerV2 gives it a logger.
//
// It is for demos, tools and tests, not for production: the store is
// temporary unless given, nothing is authenticated and nothing is tuned.
func StartServer(opts *server.Options) (s *server.Server, stop func(), err error) {
	if opts == nil {
		opts = &server.Options{}
	}
	o := *opts // the server keeps and changes the options it is given
	o.JetStream = true
	o.NoSigs = true
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = -1
	}
	made := ""
	if o.StoreDir == "" {
		if made, err = os.MkdirTemp("", "kvwatchtest-"); err != nil {
			return nil, nil, fmt.Errorf("kvwatchtest: store folder: %w", err)
		}
		o.StoreDir = made
	}
	if s, err = launch(&o); err != nil {
		if made != "" {
			os.RemoveAll(made)
		}
		if o.ServerName != "" {
			return nil, nil, fmt.Errorf("kvwatchtest: server %s: %w", o.ServerName, err)
		}
		return nil, nil, fmt.Errorf("kvwatchtest: server: %w", err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			s.Shutdown()
			s.WaitForShutdown()
			if made != "" {
				os.RemoveAll(made)
			}
		})
	}
	return s, stop, nil
}

// launch starts a server with opts and waits until it takes connections.
// A server that gives up at start, as one whose listener cannot bind (a
// port picked free and taken since, by another test's server), fails at
// once with its own reason instead of after the wait.
func launch(opts *server.Options) (*server.Server, error) {
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	fatal := &fatalLog{}
	s.SetLoggerV2(fatal, false, false, false)
	s.Start()
	deadline := time.Now().Add(20 * time.Second)
	for !s.ReadyForConnections(100 * time.Millisecond) {
		msg := fatal.first()
		if msg == "" && time.Now().Before(deadline) {
			continue
		}
		s.Shutdown()
		s.WaitForShutdown()
		if msg == "" {
			msg = "not ready within 20s"
		}
		return nil, errors.New(msg)
	}
	return s, nil
}

// fatalLog is a server logger that keeps the server's first fatal error
// (which includes a listener that cannot bind) and drops everything else.
type fatalLog struct {
	mu  sync.Mutex
	msg string
}

func (l *fatalLog) Fatalf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.msg == "" {
		l.msg = fmt.Sprintf(format, v...)
	}
}

func (l *fatalLog) first() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.msg
}

func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}
