package live

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// expectFailure runs args and checks the exit code and that stderr says
// each of wants.
func expectFailure(t *testing.T, env Env, errOut *syncBuffer, code int, wants []string, args ...string) {
	t.Helper()
	if got := run(t, env, args...); got != code {
		t.Errorf("%v: exit %d, want %d\n%s", args, got, code, errOut)
	}
	for _, want := range wants {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("%v: stderr lacks %q:\n%s", args, want, errOut)
		}
	}
}

// Errors say what went wrong and what to do, with exit status 2: no
// server at the URL, no JetStream, no such bucket, credentials refused.
func TestErrorsSayWhatToDo(t *testing.T) {
	env, _, errOut := testEnv(t, "NATS_URL=nats://127.0.0.1:1")
	expectFailure(t, env, errOut, ExitUsage, []string{
		"cannot connect to nats://127.0.0.1:1 (from NATS_URL): no server answers there; start one, or give its URL with -server",
	}, "verify", "-schema", fleetSchema)

	noJS, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, JetStream: false})
	if err != nil {
		t.Fatal(err)
	}
	noJS.Start()
	t.Cleanup(noJS.Shutdown)
	if !noJS.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	env, _, errOut = testEnv(t)
	expectFailure(t, env, errOut, ExitUsage, []string{"JetStream is not enabled on " + noJS.ClientURL(), "enable it (nats-server -js)"},
		"describe", "-schema", fleetSchema, "-s", noJS.ClientURL())

	s := kvwatchtest.ServerWith(t, &server.Options{Users: []*server.User{{Username: "admin", Password: "admin"}}})
	env, _, errOut = testEnv(t)
	expectFailure(t, env, errOut, ExitUsage, []string{"bucket network (stream KV_network) not found on nats://admin:xxxxx@" + s.Addr().String(), "create it"},
		"verify", "-schema", fleetSchema, "-s", "nats://admin:admin@"+s.Addr().String())
	env, out, errOut := testEnv(t)
	if code := run(t, env, "describe", "-schema", fleetSchema, "-s", "nats://admin:admin@"+s.Addr().String()); code != ExitError ||
		!strings.Contains(out.String(), "bucket network (stream KV_network)\n  bucket network (stream KV_network) not found") {
		t.Errorf("describe of a missing bucket: exit %d\n%s%s", code, out, errOut)
	}
	env, _, errOut = testEnv(t)
	expectFailure(t, env, errOut, ExitUsage, []string{"refused the credentials: give them with -creds or -context"},
		"watch", "-schema", fleetSchema, "-s", s.ClientURL())
}

// A request the user may not send fails at once, naming the subject.
func TestPermissionDenied(t *testing.T) {
	s := kvwatchtest.ServerWith(t, &server.Options{Users: []*server.User{
		{Username: "admin", Password: "admin"},
		{Username: "reader", Password: "reader", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"$JS.API.STREAM.INFO.KV_network"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
		}},
	}})
	_, admin := kvwatchtest.Connect(t, s, nats.UserInfo("admin", "admin"))
	fill(t, kvwatchtest.Bucket(t, admin, "network"), 3)
	env, _, errOut := testEnv(t)
	start := time.Now()
	expectFailure(t, env, errOut, ExitUsage, []string{`permission denied: nats: permissions violation: Permissions Violation for Publish to "$JS.API.DIRECT.GET.KV_network"`},
		"verify", "-schema", fleetSchema, "-s", "nats://reader:reader@"+s.Addr().String())
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the refusal took %v: it waited for a timeout", d)
	}
}

// The nats CLI's selected context gives the URL and credentials; -server
// overrides its URL; a context that is not there says how to list them.
func TestNatsContext(t *testing.T) {
	s := kvwatchtest.ServerWith(t, &server.Options{Users: []*server.User{{Username: "admin", Password: "admin"}}})
	_, admin := kvwatchtest.Connect(t, s, nats.UserInfo("admin", "admin"))
	fill(t, kvwatchtest.Bucket(t, admin, "network"), 3)
	env, out, errOut := testEnv(t)
	dir := filepath.Join(env.Getenv("XDG_CONFIG_HOME"), "nats")
	if err := os.MkdirAll(filepath.Join(dir, "context"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctxFile := `{"description":"test","url":"` + s.ClientURL() + `","user":"admin","password":"admin","inbox_prefix":"_MY"}`
	if err := os.WriteFile(filepath.Join(dir, "context", "lab.json"), []byte(ctxFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "context.txt"), []byte("lab\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := run(t, env, "verify", "-schema", fleetSchema); code != ExitError || !strings.Contains(out.String(), "8 entries, 3 problems") {
		t.Fatalf("verify through the selected context: exit %d\n%s%s", code, out, errOut)
	}
	env2, _, errOut := testEnv(t, "XDG_CONFIG_HOME="+env.Getenv("XDG_CONFIG_HOME"))
	expectFailure(t, env2, errOut, ExitUsage, []string{"cannot connect to nats://127.0.0.1:1 (from -server)"},
		"describe", "-schema", fleetSchema, "-s", "nats://127.0.0.1:1")
	env2, _, errOut = testEnv(t, "XDG_CONFIG_HOME="+env.Getenv("XDG_CONFIG_HOME"))
	expectFailure(t, env2, errOut, ExitUsage, []string{`nats context "prod" not found`, `nats context ls`},
		"describe", "-schema", fleetSchema, "-context", "prod")
}

// Usage errors name what is wrong and what there is.
func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "-schema", fleetSchema, "-bucket", "nets"}, `the schema has no bucket "nets" (it has network)`},
		{[]string{"verify", "-schema", fleetSchema, "-scope", "Tenant=a"}, `bucket network has no scope Tenant (its scopes: VPC (vpc.{vpc}))`},
		{[]string{"watch", "-schema", fleetSchema, "-scope", "VPC=a.b"}, `-scope VPC: vpc "a.b": `},
		{[]string{"verify", "-schema", "missing.yaml"}, "missing.yaml"},
		{[]string{"describe", "-schema", fleetSchema, "extra"}, `unexpected argument "extra"`},
		{[]string{"describe", "-schema", fleetSchema, "-bucket", "network=a.b"}, `"a.b" is not a bucket name`},
	} {
		env, _, errOut := testEnv(t)
		expectFailure(t, env, errOut, ExitUsage, []string{tc.want}, tc.args...)
	}
}
