package kvwatchtest_test

import (
	"context"
	"fmt"
	"log"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A program's main starts its own embedded JetStream server, on a random
// loopback port with a temporary store that stop removes.
func ExampleStartServer() {
	s, stop, err := kvwatchtest.StartServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "network"})
	if err != nil {
		log.Fatal(err)
	}
	rev, err := kv.PutString(ctx, "vpc.a", "10.0.0.0/16")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("revision", rev)
	// Output: revision 1
}
