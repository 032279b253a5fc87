package kvwatchtest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// storeFolders lists the store folders StartServer made under dir.
func storeFolders(t *testing.T, dir string) []string {
	t.Helper()
	made, err := filepath.Glob(filepath.Join(dir, "kvwatchtest-*"))
	if err != nil {
		t.Fatal(err)
	}
	return made
}

// StartServer, without a testing.TB, starts a server whose JetStream
// answers, on a random loopback port, with its store in a temporary folder
// that stop removes; stop can be called again.
func TestStartServer(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s, stop, err := StartServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	made := storeFolders(t, tmp)
	if len(made) != 1 || !strings.HasPrefix(s.StoreDir(), made[0]) {
		t.Fatalf("store %s, folders made %v: want one, holding the store", s.StoreDir(), made)
	}
	if !strings.HasPrefix(s.ClientURL(), "nats://127.0.0.1:") || s.ClientURL() == "nats://127.0.0.1:4222" {
		t.Errorf("ClientURL %s, want a random loopback port", s.ClientURL())
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "network"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.PutString(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, "k"); err != nil || string(e.Value()) != "v" {
		t.Fatalf("Get = %v, %v", e, err)
	}
	nc.Close()

	stop()
	if s.Running() {
		t.Error("the server runs after stop")
	}
	if made := storeFolders(t, tmp); len(made) != 0 {
		t.Errorf("store folders left after stop: %v", made)
	}
	stop()
}

// A store folder given in the options is the caller's: stop leaves it, and
// the options are not changed.
func TestStartServerInAGivenFolder(t *testing.T) {
	dir := t.TempDir()
	opts := &server.Options{StoreDir: dir}
	s, stop, err := StartServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if s.Running() {
		t.Error("the server runs after stop")
	}
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Errorf("the given store after stop: %v", err)
	}
	if opts.JetStream || opts.Host != "" || opts.Port != 0 || opts.NoSigs || opts.StoreDir != dir {
		t.Errorf("StartServer changed its options: %+v", *opts)
	}
}

// A server that cannot start says why at once (here, its port is taken),
// and the store folder made for it is removed.
func TestStartServerOnATakenPort(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	start := time.Now()
	_, _, err = StartServer(&server.Options{Port: taken.Addr().(*net.TCPAddr).Port})
	if err == nil || !strings.Contains(err.Error(), "Error listening on port") {
		t.Fatalf("StartServer on a taken port = %v, want the listen error", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("failed after %v, want at once", took)
	}
	if made := storeFolders(t, tmp); len(made) != 0 {
		t.Errorf("store folders left after a failed start: %v", made)
	}
}
