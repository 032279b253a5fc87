package directget_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// A read whose context ends while it waits for an answer says so (the
// context's error), not nats.go's "invalid subscription" of the
// subscription the context's end closed: a watcher logged that, unexplained,
// after a server restart.
func TestGetterSaysItsContextEnded(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	// A server that takes the requests and never answers.
	sub, err := js.Conn().Subscribe("$JS.API.DIRECT.GET.SILENT", func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := js.Conn().Flush(); err != nil {
		t.Fatal(err)
	}
	g := directget.New(js, "SILENT", time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := g.Open(ctx); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_, err = g.Read(directget.Request{Seq: 1, NextBySubj: ">", Batch: 1}, func(*nats.Msg) {})
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "invalid subscription") {
		t.Fatalf("error %v, want the context's deadline", err)
	}
}
