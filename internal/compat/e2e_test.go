package compat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/internal/compat"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// TestCorpusEndToEnd proves that compat's verdicts are what the generated
// code does. For every case of golden/compat (and of testdata/e2ecases,
// for branches of the rules golden/compat has no case of) it generates
// both packages into one module, and a driver (testdata/e2edriver) that,
// against a real server, writes samples of every kind with the old
// package's client and watches the whole bucket with the new package's
// watcher, then the reverse on a fresh bucket; where either schema has
// config:, it also runs the new CreateOrUpdate on the bucket the old one
// made, and old writers and watchers against the limits of the bucket the
// new one made. Then, per case and direction: where compat reports no
// breaking, accepted or notice change of that direction's class, the
// watcher must have read every written entry, with no error and the same
// value; where it does, the effect its message names must show (the
// table in e2e_effects_test.go). And compat must report code that no
// longer compiles exactly where the new package's exported API removes or
// changes a declaration of the old one's (internal/apidump).
//
// KVWATCH_COMPAT_CASE=a,b runs only those cases; KVWATCH_COMPAT_MODULE=DIR
// writes the module there (kept, for a look); KVWATCH_COMPAT_REPORT=FILE
// appends the driver's reports there.
func TestCorpusEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of every corpus case and runs it against a server")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// golden/compat, and cases of rules' branches it has none of.
	cases := append(loadCorpus(t, filepath.Join(root, "golden", "compat")), loadCorpus(t, filepath.Join("testdata", "e2ecases"))...)
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("two cases are named %s: rename the one in testdata/e2ecases", c.name)
		}
		seen[c.name] = true
	}
	dir := t.TempDir()
	if keep := os.Getenv("KVWATCH_COMPAT_MODULE"); keep != "" {
		dir = keep
	}
	writeModule(t, root, dir, cases)
	bin := buildDriver(t, dir)

	// Cases whose buckets have more than one replica need a cluster; the
	// others run on one server, which is quicker.
	var single, clustered []string
	only := os.Getenv("KVWATCH_COMPAT_CASE")
	for _, c := range cases {
		switch {
		case only != "" && !slices.Contains(strings.Split(only, ","), c.name):
		case needsCluster(c):
			clustered = append(clustered, c.name)
		default:
			single = append(single, c.name)
		}
	}
	var rep driverReport
	if len(single) > 0 {
		srv := kvwatchtest.Server(t)
		runDriver(t, bin, srv.ClientURL(), single, &rep)
	}
	if len(clustered) > 0 {
		cluster := kvwatchtest.StartCluster(t, 3)
		var urls []string
		for _, n := range cluster.Nodes {
			urls = append(urls, n.ClientURL())
		}
		runDriver(t, bin, strings.Join(urls, ","), clustered, &rep)
	}
	apis := loadAPIs(t, dir)
	reports := map[string]caseReport{}
	for _, c := range rep.Cases {
		reports[c.Name] = c
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ok := reports[c.name]
			switch {
			case !ok && only != "":
				t.Skip("not run: KVWATCH_COMPAT_CASE names other cases")
			case !ok:
				t.Fatal("the driver did not report the case")
			}
			checkCase(t, c, r)
			checkGoAPI(t, c, apis[c.oldPkg], apis[c.newPkg])
		})
	}
}

// needsCluster reports whether a case has a bucket of several replicas.
func needsCluster(c *corpusCase) bool {
	for _, b := range append(slices.Clone(c.old.Buckets), c.new.Buckets...) {
		if b.Config != nil && b.Config.Replicas > 1 {
			return true
		}
	}
	return false
}

// runDriver runs the driver on cases against the server at url, and adds
// what it reports to rep.
func runDriver(t *testing.T, bin, url string, cases []string, rep *driverReport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "-url", url, "-case", strings.Join(cases, ","))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("driver: %v\n%s", err, stderr.Bytes())
	}
	var r driverReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("driver report: %v\n%s", err, stdout.Bytes())
	}
	t.Logf("the driver ran %d cases against %s in %v", len(r.Cases), url, time.Since(start).Round(time.Millisecond))
	if path := os.Getenv("KVWATCH_COMPAT_REPORT"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.Write(stdout.Bytes())
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	rep.Cases = append(rep.Cases, r.Cases...)
}

// checkCase checks every bucket both versions of a case have, both ways,
// and its config.
func checkCase(t *testing.T, c *corpusCase, r caseReport) {
	var want []string
	for _, ob := range c.old.Buckets {
		if findBucket(c.new, ob.Name) != nil {
			want = append(want, ob.Name)
		}
	}
	var got []string
	for _, br := range r.Buckets {
		got = append(got, br.Bucket)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the driver ran buckets %q, want %q", got, want)
	}
	for _, br := range r.Buckets {
		for _, err := range br.Err {
			t.Errorf("bucket %s: %s", br.Bucket, err)
		}
		o := side{c.old, findBucket(c.old, br.Bucket)}
		n := side{c.new, findBucket(c.new, br.Bucket)}
		checkReaders(t, c, direction{"old writers, new watcher", compat.NewReaders, o, n}, &br.OldToNew)
		checkReaders(t, c, direction{"new writers, old watcher", compat.OldReaders, n, o}, &br.NewToOld)
		checkConfig(t, c, n.bucket, &br)
	}
}

func findBucket(s *schema.Schema, name string) *schema.Bucket {
	for _, b := range s.Buckets {
		if b.Name == name {
			return b
		}
	}
	return nil
}
