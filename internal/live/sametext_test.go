package live

import (
	"errors"
	"strings"
	"sync"
	"testing"

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
