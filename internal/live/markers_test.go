package live

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// A bucket with a TTL and limit markers whose entries all expired holds
// only the server's markers (Nats-Marker-Reason: MaxAge): no entry, for
// verify and describe as for the watcher and watch, not bad values.
func TestLiveToolsReadExpiryMarkersAsTheWatcherDoes(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.BucketWith(t, js, jetstream.KeyValueConfig{Bucket: "network", TTL: time.Second, LimitMarkerTTL: time.Minute})
	keys := []string{"vpc.blue", "vpc.blue.route.r1", "vpc.blue.route.r2", "vpc.green.firewall.10"}
	for _, k := range keys {
		if _, err := kv.PutString(t.Context(), k, `{}`); err != nil {
			t.Fatal(err)
		}
	}
	kvwatchtest.Eventually(t, 20*time.Second, "every entry expired, a marker in its place", func() bool {
		stream, err := js.Stream(t.Context(), "KV_network")
		if err != nil {
			return false
		}
		for _, k := range keys {
			msg, err := stream.GetLastMsgForSubject(t.Context(), "$KV.network."+k)
			if err != nil || msg.Header.Get("Nats-Marker-Reason") != "MaxAge" {
				return false
			}
		}
		_, err = kv.Get(t.Context(), keys[0])
		return errors.Is(err, jetstream.ErrKeyNotFound)
	})

	env, out, errOut := testEnv(t)
	if code := run(t, env, "verify", "-schema", fleetSchema, "-server", s.ClientURL()); code != ExitOK {
		t.Errorf("verify: exit %d, want %d\n%s\n%s", code, ExitOK, out, errOut)
	}
	if got := out.String(); !strings.Contains(got, ": 0 entries, 0 problems") || strings.Contains(got, "bad value") {
		t.Errorf("verify on expired entries:\n%s", got)
	}
	env, out, errOut = testEnv(t)
	if code := run(t, env, "describe", "-schema", fleetSchema, "-server", s.ClientURL()); code != ExitOK {
		t.Errorf("describe: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := out.String(); !strings.Contains(got, "  entries: 0 as of revision") {
		t.Errorf("describe on expired entries:\n%s", got)
	}
}
