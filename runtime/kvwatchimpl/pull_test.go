package kvwatchimpl

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// A feed whose pull is answered by a burst of messages, which then go
// quiet: the feed hands the messages out in order and reports missed
// heartbeats only two heartbeats after it handed out the last one, though
// it reads the clock only for the last of a run of waiting messages
// (pull.go, took). The event goroutine is held between the first message
// and the rest (as a slow handler holds it), so that a feed that timed
// the silence from the first message, or from its own start, would give
// up early. A stop ends it at once, even with messages waiting.
func TestPullFeedHeartbeatsFromTheLastMessage(t *testing.T) {
	s := kvwatchtest.Server(t)
	nc, _ := kvwatchtest.Connect(t, s)
	// An API prefix of the test's own: the "server" is the test, not
	// JetStream, which would answer the pulls too.
	js, err := jetstream.NewWithAPIPrefix(nc, "feedtest.API")
	if err != nil {
		t.Fatal(err)
	}
	const burst, heartbeat = 100, 200 * time.Millisecond
	subject := "feedtest.API.CONSUMER.MSG.NEXT.S.C"
	// The "server": the first pull is answered by a burst, then nothing,
	// not even heartbeats.
	pulls := make(chan string, 8)
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) { pulls <- m.Reply })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	f, err := newPullFeed(js, "S", "C", heartbeat, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()
	inbox := <-pulls
	// A message of the stream is one with a reply subject (a client may
	// not publish the server's $JS.ACK ones).
	for i := 1; i <= burst; i++ {
		if err := nc.PublishMsg(&nats.Msg{Subject: inbox, Reply: "ack", Data: []byte(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	kvwatchtest.Eventually(t, 10*time.Second, "the burst waiting in the feed", func() bool { return len(f.msgs) == burst })

	first, err := f.next(0)
	if err != nil || first.Reply == "" {
		t.Fatalf("first message: %v, %v", first, err)
	}
	// Held past one and a half heartbeats since the feed started: a feed
	// timing the silence from there gives up half a heartbeat after the
	// last message below.
	time.Sleep(heartbeat * 3 / 2)
	var before time.Time // before the last message was taken: the feed's clock read comes after
	for i := 2; i <= burst; i++ {
		before = time.Now()
		msg, err := f.next(0)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if string(msg.Data) != strconv.Itoa(i) {
			t.Fatalf("message %d is %s", i, msg.Data)
		}
	}
	_, err = f.next(0)
	if !errors.Is(err, jetstream.ErrNoHeartbeat) {
		t.Fatalf("after the burst: %v, want missed heartbeats", err)
	}
	if quiet := time.Since(before); quiet < 2*heartbeat {
		t.Fatalf("missed heartbeats reported %v after the last message, before two heartbeats (%v)", quiet, 2*heartbeat)
	}

	// A stop ends the feed with messages still waiting.
	g, err := newPullFeed(js, "S", "C", time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	inbox = <-pulls
	for i := 1; i <= 10; i++ {
		nc.PublishMsg(&nats.Msg{Subject: inbox, Reply: "ack", Data: []byte("v")})
	}
	kvwatchtest.Eventually(t, 10*time.Second, "messages waiting in the feed", func() bool { return len(g.msgs) == 10 })
	g.stop()
	if _, err := g.next(0); !errors.Is(err, errFeedStopped) {
		t.Fatalf("next after stop, messages waiting: %v, want the feed stopped", err)
	}
}
