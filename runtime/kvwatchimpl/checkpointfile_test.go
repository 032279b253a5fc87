package kvwatchimpl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// startFile starts a network watcher of scopes, both kinds recorded by r,
// with opts (a WithCheckpointFile among them), and waits until it is
// synced. It is stopped when the test ends.
func startFile(t *testing.T, js jetstream.JetStream, scopes kvwatchimpl.Scopes, r *recorder, opts ...kvwatch.Option) (*kvwatchimpl.Watcher, *kvwatchimpl.Binding[routeKey, route], *kvwatchimpl.Binding[vpcKey, vpcConfig]) {
	t.Helper()
	routes, configs, bindings := networkBindings(r)
	w, err := kvwatchimpl.Start(context.Background(), js, &network, scopes, bindings, append(r.options(), opts...)...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(w.Stop)
	waitSynced(t, w)
	return w, routes, configs
}

// waitSaves waits until w's checkpoint file was saved n times.
func waitSaves(t *testing.T, w *kvwatchimpl.Watcher, n uint64) kvwatch.CheckpointFileStats {
	t.Helper()
	kvwatchtest.Eventually(t, 10*time.Second, "checkpoint file saves", func() bool { return w.CheckpointFileStats().Saves >= n })
	return w.CheckpointFileStats()
}

// fileHeader reads the first line of a checkpoint file.
func fileHeader(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	var h map[string]any
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatalf("header %q: %v", line, err)
	}
	return h
}

// onlyFile fails the test unless dir holds only the file named name (no
// temporary file left).
func onlyFile(t *testing.T, dir, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{name}) {
		t.Errorf("directory holds %v, want only %s", names, name)
	}
}

// A watcher with a checkpoint file saves it when synced and when stopped;
// the next one resumes from it by delta and delivers only what changed in
// between, with caches equal to the bucket.
func TestCheckpointFileResumesByDelta(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{Name: "a"})
	put(t, kv, "vpc.a.route.r1", route{CIDR: "10.0.0.0/8"})
	put(t, kv, "vpc.a.route.r2", route{CIDR: "10.1.0.0/16"})
	put(t, kv, "vpc.a.route.r3", route{CIDR: "10.2.0.0/16"})
	dir := t.TempDir()
	path := filepath.Join(dir, "network.checkpoint")

	w1, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path))
	st := waitSaves(t, w1, 1) // saved once synced
	if st.Loaded || st.LoadError != nil || st.Path != path {
		t.Errorf("first start: %+v, want nothing loaded and no error", st)
	}
	rev := put(t, kv, "vpc.a.route.r1", route{CIDR: "10.0.0.0/9"}) // saved at Stop
	waitRevision(t, w1, rev)
	w1.Stop()
	if st := w1.CheckpointFileStats(); st.LastRevision != rev || st.LastError != nil {
		t.Fatalf("after Stop: %+v, want the last save at revision %d", st, rev)
	}
	if h := fileHeader(t, path); h["format"] != "kvwatch-checkpoint" || h["version"] != 1.0 || h["bucket"] != "network" || h["revision"] != float64(rev) {
		t.Errorf("header %v", h)
	}
	onlyFile(t, dir, "network.checkpoint")

	put(t, kv, "vpc.a.route.r2", route{CIDR: "10.9.0.0/16"})
	if err := kv.Delete(context.Background(), "vpc.a.route.r3"); err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	w2, routes, configs := startFile(t, js, vpcs("a"), r, kvwatch.WithCheckpointFile(path))
	if s := w2.Stats(); s.Resume != "delta" || s.InitialState != "resume" {
		t.Errorf("Resume = %q, InitialState = %q; want delta, resume", s.Resume, s.InitialState)
	}
	if st := w2.CheckpointFileStats(); !st.Loaded || st.LoadError != nil {
		t.Errorf("second start: %+v, want the file loaded", st)
	}
	events, errs := r.snapshot()
	var log []string
	for _, e := range events {
		log = append(log, e.Op.String()+" "+e.Key)
	}
	if want := []string{"put vpc.a.route.r2", "delete vpc.a.route.r3"}; !slices.Equal(log, want) || len(errs) > 0 {
		t.Errorf("resumed watcher delivered %v (errors %v), want only what changed: %v", log, errs, want)
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, "a"); !slices.Equal(got, want) {
		t.Errorf("caches\n%v\nwant\n%v", got, want)
	}
}

// The file is read fully and never trusted: a file cut short anywhere,
// one with a byte changed, another bucket's, another schema's, another
// format version's, garbage, an empty file and one that cannot be read
// are each reported (OnError, a *CheckpointFileError) and ignored: the
// watcher reads the whole state, and its caches are exact. It then saves
// a good file, which the next watcher resumes from.
func TestCheckpointFileIgnoresBadFiles(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{Name: "a"})
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		put(t, kv, "vpc.a.route."+id, route{CIDR: "10.0.0.0/8", NextHop: id})
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	w, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(good))
	waitSaves(t, w, 1)
	w.Stop()
	valid, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(valid, []byte("\n"))
	lines = lines[:len(lines)-1] // "" after the last newline
	if len(lines) != 7 {         // header, 5 entries, trailer
		t.Fatalf("the file has %d lines, want 7:\n%s", len(lines), valid)
	}

	// Another bucket with the same kinds: its watcher's file is foreign.
	otherKV := kvwatchtest.Bucket(t, js, "network-other")
	if _, err := otherKV.Put(context.Background(), "vpc.a", []byte(`{"name":"other"}`)); err != nil {
		t.Fatal(err)
	}
	otherPath := filepath.Join(dir, "other")
	wo, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(otherPath), kvwatch.WithBucket("network-other"))
	waitSaves(t, wo, 1)
	wo.Stop()
	otherBucket, err := os.ReadFile(otherPath)
	if err != nil {
		t.Fatal(err)
	}

	flipped := bytes.Clone(valid)
	i := bytes.Index(flipped, []byte(`"next_hop":"r2"`)) + len(`"next_hop":"r`)
	flipped[i] = '7' // still JSON, still a route: only the checksum tells
	versioned := bytes.Replace(valid, []byte(`"version":1`), []byte(`"version":2`), 1)
	otherKinds := bytes.Replace(valid, []byte(`"key":"vpc.{vpc}.route.{route_id}"`), []byte(`"key":"vpc.{vpc}.rt.{route_id}"`), 1)
	cases := []struct {
		name, want string
		data       []byte // nil: path is a directory
	}{
		{"header only", "cut short", lines[0]},
		{"cut in an entry", "cut short", valid[:len(lines[0])+len(lines[1])+len(lines[2])/2]},
		{"no trailer", "cut short", bytes.Join(lines[:6], nil)},
		{"trailer without its newline", "cut short", valid[:len(valid)-1]},
		{"one byte changed", "checksum mismatch", flipped},
		{"another bucket", "written for bucket network-other", otherBucket},
		{"another format version", "format version 2", versioned},
		{"another schema's kinds", "key template", otherKinds},
		{"garbage", "not a kvwatch checkpoint file", []byte("\x00\x01garbage\n")},
		{"empty", "empty", []byte{}},
		{"a directory", "is a directory", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cp")
			if c.data == nil {
				if err := os.Mkdir(path, 0o755); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			r := newRecorder()
			w, routes, configs := startFile(t, js, vpcs("a"), r, kvwatch.WithCheckpointFile(path))
			_, errs := r.snapshot()
			var cfe *kvwatch.CheckpointFileError
			if len(errs) != 1 || !errors.As(errs[0], &cfe) || cfe.Op != "load" || cfe.Path != path || !strings.Contains(cfe.Error(), c.want) {
				t.Errorf("OnError got %v, want one *CheckpointFileError (load) saying %q", errs, c.want)
			}
			if s := w.Stats(); s.Resume != "" || s.InitialState != "direct-get" || s.Puts != 5 {
				t.Errorf("Resume %q, InitialState %q, %d puts: want a full read of 5 keys", s.Resume, s.InitialState, s.Puts)
			}
			if st := w.CheckpointFileStats(); st.Loaded || !errors.Is(st.LoadError, cfe.Err) {
				t.Errorf("CheckpointFileStats %+v, want the load error", st)
			}
			if got, want := cacheState(routes, configs), bucketState(t, kv, "a"); !slices.Equal(got, want) {
				t.Errorf("caches\n%v\nwant\n%v", got, want)
			}
			if c.data == nil {
				return // a directory stays one: every save fails
			}
			waitSaves(t, w, 1) // the full read is saved over the bad file
			w.Stop()
			w2, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path))
			if s := w2.Stats(); s.Resume != "delta" {
				t.Errorf("after the bad file was replaced: Resume %q, want delta", s.Resume)
			}
		})
	}
}

// Resume's own checks still apply to a valid file: after the bucket was
// deleted and made again, the watcher re-lists.
func TestCheckpointFileOfARecreatedBucketRelists(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a.route.r1", route{CIDR: "old"})
	put(t, kv, "vpc.a.route.r2", route{CIDR: "old"})
	path := filepath.Join(t.TempDir(), "cp")
	w, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path))
	waitSaves(t, w, 1)
	w.Stop()
	if err := js.DeleteKeyValue(context.Background(), "network"); err != nil {
		t.Fatal(err)
	}
	kv = kvwatchtest.Bucket(t, js, "network")
	put(t, kv, "vpc.a.route.r1", route{CIDR: "new"})
	r := newRecorder()
	w2, routes, configs := startFile(t, js, vpcs("a"), r, kvwatch.WithCheckpointFile(path))
	if s := w2.Stats(); s.Resume != "relist" || !w2.CheckpointFileStats().Loaded {
		t.Errorf("Resume %q (file loaded %v), want relist from the loaded file", s.Resume, w2.CheckpointFileStats().Loaded)
	}
	if got, want := cacheState(routes, configs), bucketState(t, kv, "a"); !slices.Equal(got, want) {
		t.Errorf("caches\n%v\nwant\n%v", got, want)
	}
	if !hasKey(r.waitFor(t, "r2 deleted", func(ev []got, _ []error) bool { return hasKey(ev, "vpc.a.route.r2", kvwatch.OpDelete) }),
		"vpc.a.route.r1", kvwatch.OpPut) {
		t.Error("r1's new value was not delivered")
	}
}

// SaveEvery(n) saves once n changes happened since the last save, and
// SaveInterval(d) once d passed with anything changed; each save holds
// the watcher's revision.
func TestCheckpointFileSavesEveryNChangesAndInterval(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{Name: "a"})
	path := filepath.Join(t.TempDir(), "cp")
	w, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path, kvwatch.SaveEvery(5), kvwatch.SaveInterval(0)))
	waitSaves(t, w, 1)
	var rev uint64
	for i := range 5 {
		rev = put(t, kv, "vpc.a.route.r"+string(rune('0'+i)), route{CIDR: "10.0.0.0/8"})
	}
	st := waitSaves(t, w, 2)
	if st.Saves != 2 || st.LastRevision != rev {
		t.Errorf("after 5 changes: %d saves, last at revision %d; want 2, at %d", st.Saves, st.LastRevision, rev)
	}
	if h := fileHeader(t, path); h["revision"] != float64(rev) {
		t.Errorf("file at revision %v, want %d", h["revision"], rev)
	}
	w.Stop()

	w2, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path, kvwatch.SaveEvery(0), kvwatch.SaveInterval(20*time.Millisecond)))
	if w2.Stats().Resume != "delta" {
		t.Fatalf("Resume %q, want delta", w2.Stats().Resume)
	}
	rev = put(t, kv, "vpc.a", vpcConfig{Name: "a2"})
	kvwatchtest.Eventually(t, 10*time.Second, "a save on the interval", func() bool { return w2.CheckpointFileStats().LastRevision == rev })
	// Nothing changed at Stop: no save.
	saves := w2.CheckpointFileStats().Saves
	w2.Stop()
	if got := w2.CheckpointFileStats().Saves; got != saves {
		t.Errorf("Stop with nothing changed saved again (%d saves, then %d)", saves, got)
	}
}

// A save that fails at any stage (creating, writing, syncing, renaming)
// leaves the previous file as it was, whole, and no temporary file; the
// watch goes on, and a later save succeeds. A temporary file a crash left
// is removed at Start.
func TestCheckpointFileFailedSavesKeepThePreviousFile(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{Name: "a"})
	dir := t.TempDir()
	path := filepath.Join(dir, "cp")
	leftover := filepath.Join(dir, ".cp.tmp-123456")
	if err := os.WriteFile(leftover, []byte("half a checkpo"), 0o600); err != nil {
		t.Fatal(err)
	}
	var failAt atomic.Value
	failAt.Store("")
	fault := kvwatchimpl.CheckpointFileFault(func(stage string) error {
		if stage == failAt.Load() {
			return errors.New("injected failure at " + stage)
		}
		return nil
	})
	w, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path, kvwatch.SaveEvery(1), fault))
	if _, err := os.Stat(leftover); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the leftover temporary file is still there: %v", err)
	}
	first := waitSaves(t, w, 1)
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for n, stage := range []string{"create", "write", "sync", "rename"} {
		failAt.Store(stage)
		put(t, kv, "vpc.a.route."+stage, route{CIDR: "10.0.0.0/8"})
		kvwatchtest.Eventually(t, 10*time.Second, "a failed save at "+stage, func() bool { return w.CheckpointFileStats().Failures > uint64(n) })
		st := w.CheckpointFileStats()
		var cfe *kvwatch.CheckpointFileError
		if !errors.As(st.LastError, &cfe) || cfe.Op != "save" || !strings.Contains(cfe.Error(), stage) {
			t.Errorf("%s: LastError %v, want a *CheckpointFileError (save)", stage, st.LastError)
		}
		if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, saved) {
			t.Errorf("%s: the file changed after a failed save (%v)", stage, err)
		}
		onlyFile(t, dir, "cp")
	}
	if first.Saves != w.CheckpointFileStats().Saves {
		t.Errorf("saves counted while failing")
	}
	// The previous file still loads.
	w.Stop()
	failAt.Store("")
	w2, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path))
	if st := w2.CheckpointFileStats(); !st.Loaded || w2.Stats().Resume != "delta" {
		t.Errorf("the file kept after failed saves: loaded %v, Resume %q; want delta", st.Loaded, w2.Stats().Resume)
	}
	waitSaves(t, w2, 1) // and saving works again
	onlyFile(t, dir, "cp")
}

// In a directory made read-only after the first save, saves fail and the
// first file stays, whole. (Root writes anyway: the fault injection test
// above covers each stage there.)
func TestCheckpointFileReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes into read-only directories")
	}
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{Name: "a"})
	dir := t.TempDir()
	path := filepath.Join(dir, "cp")
	w, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path, kvwatch.SaveEvery(1)))
	waitSaves(t, w, 1)
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	put(t, kv, "vpc.a.route.r1", route{CIDR: "10.0.0.0/8"})
	kvwatchtest.Eventually(t, 10*time.Second, "a failed save", func() bool { return w.CheckpointFileStats().Failures > 0 })
	w.Stop()
	onlyFile(t, dir, "cp")
	w2, _, _ := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path))
	if w2.Stats().Resume != "delta" {
		t.Errorf("Resume %q, want delta from the first file", w2.Stats().Resume)
	}
}

// Stop waits for the last save at most SaveTimeout: a disk that does not
// answer does not hold it.
func TestCheckpointFileStopIsBoundedOnASlowDisk(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{Name: "a"})
	dir := t.TempDir()
	path := filepath.Join(dir, "cp")
	var stall atomic.Bool
	release := make(chan struct{})
	t.Cleanup(func() {
		// Let the abandoned save end before the directory is removed.
		close(release)
		kvwatchtest.Eventually(t, 10*time.Second, "the abandoned save ended", func() bool {
			entries, _ := os.ReadDir(dir)
			return len(entries) == 1
		})
	})
	fault := kvwatchimpl.CheckpointFileFault(func(stage string) error {
		if stage == "sync" && stall.Load() {
			<-release
		}
		return nil
	})
	w, _, _ := startFile(t, js, vpcs("a"), newRecorder(),
		kvwatch.WithCheckpointFile(path, kvwatch.SaveInterval(0), kvwatch.SaveTimeout(200*time.Millisecond), fault))
	waitSaves(t, w, 1)
	stall.Store(true)
	rev := put(t, kv, "vpc.a", vpcConfig{Name: "a2"})
	waitRevision(t, w, rev)
	start := time.Now()
	w.Stop()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Stop took %v with the last save stalled, want about the 200ms save timeout", took)
	}
	if st := w.CheckpointFileStats(); st.Saves != 1 {
		t.Errorf("%d saves, want only the first (the last one stalled)", st.Saves)
	}
}

// Values of a kind whose codec is not JSON (here strings with newlines and
// quotes, and raw bytes) round-trip through the file.
func TestCheckpointFileNonJSONCodecs(t *testing.T) {
	js, kv := setup(t)
	labelTemplate := kvwatchimpl.MustTemplate("vpc.{vpc}.label.{name}")
	parse := func(key string) (string, error) {
		var p [2]string
		if err := labelTemplate.Split(key, p[:]); err != nil {
			return "", err
		}
		return "vpc." + p[0] + ".label." + p[1], nil
	}
	identity := func(k string) string { return k }
	labels := kvwatchimpl.Kind[string, string]{Name: "Label", Key: labelTemplate, ParseKey: parse, FormatKey: identity, Codec: kvwatchimpl.String{}}
	blobTemplate := kvwatchimpl.MustTemplate("vpc.{vpc}.blob.{name}")
	parseBlob := func(key string) (string, error) {
		var p [2]string
		if err := blobTemplate.Split(key, p[:]); err != nil {
			return "", err
		}
		return "vpc." + p[0] + ".blob." + p[1], nil
	}
	blobs := kvwatchimpl.Kind[string, []byte]{Name: "Blob", Key: blobTemplate, ParseKey: parseBlob, FormatKey: identity, Codec: kvwatchimpl.Bytes{},
		Clone: func(b []byte) []byte { return slices.Clone(b) }}
	spec := kvwatchimpl.BucketSpec{Bucket: "network", Scopes: []kvwatchimpl.ScopeSpec{{Name: "VPC", Prefix: "vpc.{vpc}"}}}
	ctx := context.Background()
	label := "line one\nline \"two\"\t<&>"
	blob := []byte{0, 1, 2, '\n', 0xff, '{'}
	if _, err := kv.Put(ctx, "vpc.a.label.l1", []byte(label)); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "vpc.a.blob.b1", blob); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cp")
	start := func() (*kvwatchimpl.Watcher, *kvwatchimpl.Binding[string, string], *kvwatchimpl.Binding[string, []byte]) {
		l, b := kvwatchimpl.Bind(&labels, nil), kvwatchimpl.Bind(&blobs, nil)
		w, err := kvwatchimpl.Start(ctx, js, &spec, vpcs("a"), []kvwatchimpl.AnyBinding{l, b}, kvwatch.WithCheckpointFile(path))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		waitSynced(t, w)
		return w, l, b
	}
	w, _, _ := start()
	waitSaves(t, w, 1)
	w.Stop()
	w2, l, b := start()
	if st := w2.CheckpointFileStats(); !st.Loaded || w2.Stats().Resume != "delta" {
		t.Fatalf("loaded %v, Resume %q (load error %v), want delta", st.Loaded, w2.Stats().Resume, st.LoadError)
	}
	if got, _ := l.Cache().Get("vpc.a.label.l1"); got != label {
		t.Errorf("label %q, want %q", got, label)
	}
	if got, _ := b.Cache().Get("vpc.a.blob.b1"); !bytes.Equal(got, blob) {
		t.Errorf("blob %v, want %v", got, blob)
	}
}

// The file is JSON lines that any JSON tool can rewrite: re-encoded by
// encoding/json (fields in another order, numbers as floats where exact)
// with its CRC-32C recomputed, it still loads and resumes by delta.
func TestCheckpointFileIsPlainJSONLines(t *testing.T) {
	js, kv := setup(t)
	put(t, kv, "vpc.a", vpcConfig{Name: "a <&> \"quoted\""})
	put(t, kv, "vpc.a.route.r1", route{CIDR: "10.0.0.0/8"})
	path := filepath.Join(t.TempDir(), "cp")
	w, routes, configs := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path))
	waitSaves(t, w, 1)
	want := cacheState(routes, configs)
	w.Stop()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var out bytes.Buffer
	for _, line := range lines[:len(lines)-1] {
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if _, isEntry := m["k"]; isEntry {
			if _, ok := m["v"]; !ok {
				t.Fatalf("entry %q has no JSON value", line)
			}
		}
		again, _ := json.Marshal(m) // keys sorted: another layout
		out.Write(append(again, '\n'))
	}
	sum := crc32.Checksum(out.Bytes(), crc32.MakeTable(crc32.Castagnoli))
	fmt.Fprintf(&out, `{"end":"kvwatch-checkpoint","entries":%d,"crc32c":"%08x"}`+"\n", len(lines)-2, sum)
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	w2, routes2, configs2 := startFile(t, js, vpcs("a"), newRecorder(), kvwatch.WithCheckpointFile(path))
	if st := w2.CheckpointFileStats(); !st.Loaded || w2.Stats().Resume != "delta" {
		t.Fatalf("rewritten file: loaded %v (%v), Resume %q; want delta", st.Loaded, st.LoadError, w2.Stats().Resume)
	}
	if got := cacheState(routes2, configs2); !slices.Equal(got, want) {
		t.Errorf("caches\n%v\nwant\n%v", got, want)
	}
}
