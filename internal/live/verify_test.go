package live

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// verify reads a bucket of more than 1,024 keys without a consumer and
// reports each entry that does not fit, with a summary per kind; exit 1.
func TestVerifyReportsWhatDoesNotFit(t *testing.T) {
	url, js, _ := filledServer(t, 1500)
	env, out, errOut := testEnv(t)
	code := run(t, env, "verify", "-schema", fleetSchema, "-server", url)
	if code != ExitError {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitError, out, errOut)
	}
	got := out.String()
	for _, want := range []string{
		`network vpc.blue.route.bad rev 1503 Route: bad value: json: cannot unmarshal string into Go struct field Route.metric of type int`,
		`network vpc.blue.junk.1 rev 1504 (no kind): unknown key: matches no key template of bucket network`,
		`network vpc.green.firewall.010 rev 1505 FirewallRule: bad key: `,
		"bucket network, whole bucket, as of revision 1507: 1505 entries, 3 problems",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, row := range [][]string{{"VPCConfig", "1", "0", "full"}, {"Route", "1501", "1"}, {"FirewallRule", "2", "1"}, {"(no kind)", "1", "1"}} {
		if !hasRow(got, row...) {
			t.Errorf("summary lacks the row %v:\n%s", row, got)
		}
	}
	if strings.Count(got, "\n") != 3+1+5 {
		t.Errorf("want 3 problems and a summary of 5 lines:\n%s", got)
	}
	if errOut.String() != "" {
		t.Errorf("stderr (not a terminal) holds %q", errOut)
	}
	if n := kvwatchtest.Consumers(t, js, "network"); n != 0 {
		t.Errorf("%d consumers on the stream, want none", n)
	}
}

// hasRow reports whether a line of out holds fields, in order, as its
// first fields.
func hasRow(out string, fields ...string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(strings.Join(strings.Fields(line), " ")+" ", strings.Join(fields, " ")+" ") {
			return true
		}
	}
	return false
}

// Within scopes that hold only good entries, verify exits 0; -json writes
// one line per problem and one summary per bucket.
func TestVerifyScopesAndJSON(t *testing.T) {
	url, _, _ := filledServer(t, 10)
	env, out, errOut := testEnv(t, "NATS_URL="+url)
	if code := run(t, env, "verify", "-schema", fleetSchema, "-scope", "VPC=amber", "-scope", "VPC=blue"); code != ExitError {
		t.Fatalf("blue: exit %d\n%s%s", code, out, errOut)
	}
	env, out, errOut = testEnv(t, "NATS_URL="+url)
	if code := run(t, env, "verify", "-schema", fleetSchema, "-scope", "VPC=green"); code != ExitError ||
		!strings.Contains(out.String(), ": 2 entries, 1 problem\n") {
		t.Errorf("green: exit %d, want a summary of 1 problem (singular)\n%s%s", code, out, errOut)
	}
	env, out, errOut = testEnv(t, "NATS_URL="+url)
	if code := run(t, env, "verify", "-schema", fleetSchema, "-scope", "VPC=green,amber", "-json"); code != ExitError {
		t.Fatalf("green: exit %d\n%s%s", code, out, errOut)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %s", sc.Text())
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 || lines[0]["type"] != "problem" || lines[0]["key"] != "vpc.green.firewall.010" || lines[0]["problem"] != "bad key" {
		t.Fatalf("want the bad key and a summary, got %v", lines)
	}
	if s := lines[1]; s["type"] != "summary" || s["entries"] != 2.0 || s["problems"] != 1.0 || s["scope"] != "scopes VPC=green,amber" {
		t.Fatalf("summary %v", s)
	}

	env, out, errOut = testEnv(t, "NATS_URL="+url)
	if code := run(t, env, "verify", "-schema", fleetSchema, "-scope", "VPC=amber"); code != ExitOK {
		t.Fatalf("amber: exit %d\n%s%s", code, out, errOut)
	}
}

// Answers the server cuts short at their byte limit (1,024 routes of 8 KiB
// each are more than one answer holds) are asked again for what they left
// out: every entry is read once, and none is reported.
func TestVerifyReadsAnswersCutShort(t *testing.T) {
	s := kvwatchtest.Server(t)
	_, js := kvwatchtest.Connect(t, s)
	kv := kvwatchtest.Bucket(t, js, "network")
	tag := strings.Repeat("t", 8<<10)
	const routes = 1100
	for i := range routes {
		value := fmt.Sprintf(`{"cidr":"10.1.%d.0/24","tags":[%q]}`, i%256, tag)
		if _, err := kv.PutString(t.Context(), fmt.Sprintf("vpc.blue.route.r%04d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	env, out, errOut := testEnv(t, "NATS_URL="+s.ClientURL())
	if code := run(t, env, "verify", "-schema", fleetSchema, "-json"); code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var summary map[string]any
	if err := json.Unmarshal([]byte(out.String()), &summary); err != nil {
		t.Fatalf("want one summary line, got %q", out)
	}
	if summary["entries"] != float64(routes) || summary["problems"] != 0.0 {
		t.Fatalf("summary %v, want %d entries and no problem", summary, routes)
	}
}

// On a terminal, a read shows its progress on stderr, overwritten in
// place and cleared at the end.
func TestVerifyShowsProgressOnATerminal(t *testing.T) {
	url, _, _ := filledServer(t, 1100)
	env, out, errOut := testEnv(t)
	env.Terminal = true
	if code := run(t, env, "verify", "-schema", fleetSchema, "-s", url); code != ExitError {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if got := errOut.String(); !strings.Contains(got, "\rverify network: read 1106 of 1106 entries\x1b[K") || !strings.HasSuffix(got, "\r\x1b[K") {
		t.Fatalf("progress: %q", got)
	}
}
