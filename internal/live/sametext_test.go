package live

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/examples/fleet/fleetkv"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// One failure, one text: on the same bad entries, verify and watch print
// the error a generated watcher's OnError and Get… give (docs/operations.md
// promises "the error the generated code gives"), never a type built at
// run time.
func TestToolsGiveTheGeneratedCodesTexts(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.Bucket(t, js, "network")
	ctx := t.Context()
	bad := []struct {
		key, value string
		get        func(*fleetkv.NetworkBucket) error
	}{
		{"vpc.blue", `[1,2]`, func(b *fleetkv.NetworkBucket) error {
			_, err := b.GetVPCConfig(ctx, fleetkv.VPCConfigKey{VPC: "blue"})
			return err
		}},
		{"vpc.blue.route.r1", `{"cidr":"10.1.1.0/24","metric":"high"}`, func(b *fleetkv.NetworkBucket) error {
			_, err := b.GetRoute(ctx, fleetkv.RouteKey{VPC: "blue", RouteID: "r1"})
			return err
		}},
		{"vpc.blue.route.r2", `{"cidr":7}`, func(b *fleetkv.NetworkBucket) error {
			_, err := b.GetRoute(ctx, fleetkv.RouteKey{VPC: "blue", RouteID: "r2"})
			return err
		}},
	}
	for _, e := range bad {
		if _, err := kv.PutString(ctx, e.key, e.value); err != nil {
			t.Fatal(err)
		}
	}

	// The library's texts: Get… and a watcher's OnError.
	b, err := fleetkv.OpenNetworkBucket(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	watched := map[string]string{} // key -> OnError's text
	w, err := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"blue"}}, fleetkv.NetworkHandlers{
		OnError: func(err error) {
			var data *kvwatch.DataError
			if errors.As(err, &data) {
				mu.Lock()
				watched[data.Key] = err.Error()
				mu.Unlock()
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}

	env, out, errOut := testEnv(t)
	if code := run(t, env, "verify", "-schema", fleetSchema, "-server", s.ClientURL()); code != ExitError {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	wenv, _, werrOut := testEnv(t)
	stop := startWatch(t, wenv, "-schema", fleetSchema, "-server", s.ClientURL(), "-scope", "VPC=blue")
	for _, e := range bad {
		waitFor(t, werrOut, e.key)
	}
	stop()

	mu.Lock()
	defer mu.Unlock()
	for _, e := range bad {
		getErr := e.get(b)
		var data *kvwatch.DataError
		if !errors.As(getErr, &data) {
			t.Errorf("%s: Get gives %v, want a *kvwatch.DataError", e.key, getErr)
			continue
		}
		decodeText := data.Err.Error()
		if strings.Contains(decodeText, "struct {") {
			t.Errorf("%s: the generated code's text names an unnamed struct: %s", e.key, decodeText)
		}
		if watched[e.key] != getErr.Error() {
			t.Errorf("%s: OnError gives\n%s\nGet gives\n%s", e.key, watched[e.key], getErr)
		}
		if want := "network " + e.key + " rev "; !strings.Contains(out.String(), want) ||
			!strings.Contains(out.String(), ": bad value: "+decodeText+"\n") {
			t.Errorf("%s: verify does not say %q:\n%s", e.key, "bad value: "+decodeText, out)
		}
		if want := "kvwatchgen watch: network: " + getErr.Error() + "\n"; !strings.Contains(werrOut.String(), want) {
			t.Errorf("%s: watch does not say\n%s\nits stderr:\n%s", e.key, want, werrOut)
		}
	}
}

// A missing bucket reads the same from Open…Bucket, Watch… and the
// command, and says what to do; only the knobs are named as each has them
// (options in a program, flags on the command line).
func TestMissingBucketOneText(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	ctx := t.Context()
	_, openErr := fleetkv.OpenNetworkBucket(ctx, js)
	_, watchErr := fleetkv.WatchNetwork(ctx, js, fleetkv.NetworkScopes{VPC: []string{"blue"}}, fleetkv.NetworkHandlers{})
	if openErr == nil || watchErr == nil {
		t.Fatalf("Open: %v; Watch: %v; want both to fail", openErr, watchErr)
	}
	want := "kvwatch: bucket network (stream KV_network) not found on " + s.ClientURL() +
		": create it (the generated CreateOrUpdate…Bucket), or name the live bucket (kvclient.WithBucketName and kvwatch.WithBucket)," +
		" or connect where it is (the connection's URL, or jetstream.NewWithDomain): nats: bucket not found"
	for _, err := range []error{openErr, watchErr} {
		if err.Error() != want {
			t.Errorf("got  %s\nwant %s", err, want)
		}
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			t.Errorf("%v does not match jetstream.ErrBucketNotFound", err)
		}
	}
	cmdWant := strings.NewReplacer("kvwatch: ", "",
		"(kvclient.WithBucketName and kvwatch.WithBucket)", "(-bucket SCHEMA=LIVE)",
		"(the connection's URL, or jetstream.NewWithDomain)", "(-server, -context)").Replace(want)
	for _, sub := range []string{"verify", "watch"} {
		env, _, errOut := testEnv(t)
		if code := run(t, env, sub, "-schema", fleetSchema, "-server", s.ClientURL()); code != ExitUsage {
			t.Errorf("%s: exit %d, want %d", sub, code, ExitUsage)
		}
		if !strings.Contains(errOut.String(), cmdWant+"\n") {
			t.Errorf("%s says\n%s\nwant\n%s", sub, errOut, cmdWant)
		}
	}
}
