// Command e2edriver is the driver of internal/compat's end-to-end test
// (e2e_test.go): for every case of golden/compat it writes sample values
// with one generated package and watches them with the other, both ways,
// against the server at -url, and prints what each side saw as one JSON
// report on stdout. The test generates cases.go beside it (the table of
// the cases, by the generated packages they use), and a file in each
// generated package that registers its entry points (e2eapi); everything
// else goes through reflection, the way a user's code would call the
// generated API.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"

	"example.com/compate2e/driver/e2eapi"
)

// caseAPI is one case: the folders of its old and new package, which
// registered their buckets with e2eapi.
type caseAPI struct {
	Name     string
	Old, New string
}

// Report is what the driver prints.
type Report struct {
	Cases []CaseReport
}

// CaseReport is one case: each bucket both versions have.
type CaseReport struct {
	Name    string
	Buckets []BucketReport
}

// BucketReport is one bucket of a case.
type BucketReport struct {
	Bucket string
	Err    []string `json:",omitempty"` // deleting the bucket between runs failed
	// OldToNew: old writers, then a new watcher; NewToOld the reverse,
	// on a fresh bucket.
	OldToNew, NewToOld Run
	// Update is the new package's CreateOrUpdate on the bucket the old
	// package made (only where either schema has config:).
	Update *Update `json:",omitempty"`
	// Limits are old writers and watchers on the bucket the new package
	// made (only where either schema has config:).
	Limits *Limits `json:",omitempty"`
}

// Run is one direction: what the writers wrote and the watcher saw.
type Run struct {
	Err     string  `json:",omitempty"` // a step that failed: the run is void
	Written []Entry // in write order
	// Caches are the watcher's caches after it synced, by kind.
	Caches      map[string][]Entry
	DataErrors  uint64
	UnknownKeys uint64
	Errors      []Reported // what OnError received
}

// Entry is one value written or cached.
type Entry struct {
	Kind string
	Key  string
	// JSON is the Go value encoded with encoding/json; Raw is the value
	// itself where its Go type is a string or a []byte.
	JSON json.RawMessage
	Raw  []byte `json:",omitempty"`
	// Stored is what the bucket holds for a written value.
	Stored []byte `json:",omitempty"`
	Err    string `json:",omitempty"` // the write's error
}

// Reported is one error OnError received.
type Reported struct {
	Type string // DataError, UnknownKeyError or other
	Kind string `json:",omitempty"`
	Key  string `json:",omitempty"`
	Text string
}

func main() {
	url := flag.String("url", nats.DefaultURL, "the server")
	only := flag.String("case", "", "run only these cases (a comma-separated list)")
	flag.Parse()
	nc, err := nats.Connect(*url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A bucket kept for the whole run: nats-server removes an account's
	// empty streams folder in the background after its last stream is
	// deleted, which races with creating the next file stream ("could not
	// create storage directory").
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "compat_e2e_keep"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var rep Report
	for _, c := range cases {
		if *only == "" || slices.Contains(strings.Split(*only, ","), c.Name) {
			rep.Cases = append(rep.Cases, runCase(ctx, js, c))
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// runCase runs each bucket both versions declare, both ways.
func runCase(ctx context.Context, js jetstream.JetStream, c caseAPI) CaseReport {
	r := CaseReport{Name: c.Name}
	for _, o := range e2eapi.Packages[c.Old] {
		for _, n := range e2eapi.Packages[c.New] {
			if o.Name != n.Name {
				continue
			}
			br := BucketReport{Bucket: o.Name}
			configured := o.Config != nil || n.Config != nil
			remove := func() {
				if err := js.DeleteKeyValue(ctx, o.Name); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
					br.Err = append(br.Err, "deleting the bucket: "+err.Error())
				}
			}
			remove()
			br.OldToNew = run(ctx, js, o, n)
			if configured {
				br.Update = update(ctx, js, n)
			}
			remove()
			br.NewToOld = run(ctx, js, n, o)
			if configured {
				br.Limits = limits(ctx, js, o, n.Config)
			}
			remove()
			r.Buckets = append(r.Buckets, br)
		}
	}
	return r
}

// run creates the bucket with writer's package, writes two samples per
// kind with its client, then watches the whole bucket with reader's
// package until synced.
func run(ctx context.Context, js jetstream.JetStream, writer, reader e2eapi.Bucket) Run {
	var r Run
	bucket, err := createFresh(ctx, js, writer)
	if err != nil {
		r.Err = "create: " + err.Error()
		return r
	}
	r.Written, err = write(ctx, bucket, writer)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	w, stop, reported, err := watch(ctx, js, reader)
	if err != nil {
		r.Err = "watch: " + err.Error()
		return r
	}
	defer stop()
	stats := w.Interface().(kvwatch.Watcher).Stats()
	r.DataErrors, r.UnknownKeys = stats.DataErrors, stats.UnknownKeys
	r.Errors = reported()
	r.Caches = map[string][]Entry{}
	for _, k := range reader.Kinds {
		list := w.MethodByName(k.Cache).Call(nil)[0].MethodByName("List").Call(nil)[0]
		for i := range list.Len() {
			e := list.Index(i)
			r.Caches[k.Name] = append(r.Caches[k.Name], entry(k.Name, e.FieldByName("Key"), e.FieldByName("Value")))
		}
	}
	return r
}

// call calls fn, a package's CreateOrUpdate<Bucket>Bucket or
// Open<Bucket>Bucket, with opts.
// createFresh creates the bucket with b's CreateOrUpdate, empty: a file
// stream deleted and at once created again under its name sometimes holds
// the deleted stream's messages on nats-server 2.15.2, so a bucket found
// with messages is deleted and created again, until it is empty or ctx
// ends.
func createFresh(ctx context.Context, js jetstream.JetStream, b e2eapi.Bucket) (reflect.Value, error) {
	for {
		bucket, err := call(ctx, js, b.Create)
		if err != nil {
			return bucket, err
		}
		s, err := js.Stream(ctx, "KV_"+b.Name)
		if err != nil {
			return bucket, err
		}
		if s.CachedInfo().State.Msgs == 0 {
			return bucket, nil
		}
		if err := js.DeleteKeyValue(ctx, b.Name); err != nil {
			return bucket, err
		}
		select {
		case <-ctx.Done():
			return bucket, fmt.Errorf("bucket %s still holds the messages of a deleted stream: %w", b.Name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func call(ctx context.Context, js jetstream.JetStream, fn any, opts ...any) (reflect.Value, error) {
	args := []reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(js)}
	for _, o := range opts {
		args = append(args, reflect.ValueOf(o))
	}
	out := reflect.ValueOf(fn).Call(args)
	return out[0], asError(out[1])
}

// write puts two samples of each kind (fewer where both have one key).
func write(ctx context.Context, bucket reflect.Value, b e2eapi.Bucket) ([]Entry, error) {
	kv := bucket.MethodByName("KeyValue").Call(nil)[0].Interface().(jetstream.KeyValue)
	var written []Entry
	for _, k := range b.Kinds {
		put := bucket.MethodByName(k.Put)
		seen := map[string]bool{}
		for variant := range 2 {
			key := fillKey(put.Type().In(1), variant, "")
			value := fill(put.Type().In(2), variant, 0, 0)
			e := entry(k.Name, key, value)
			if seen[e.Key] {
				continue
			}
			seen[e.Key] = true
			out := put.Call([]reflect.Value{reflect.ValueOf(ctx), key, value})
			if err := asError(out[1]); err != nil {
				e.Err = err.Error()
			} else if got, err := kv.Get(ctx, e.Key); err != nil {
				return nil, fmt.Errorf("reading back %s: %w", e.Key, err)
			} else {
				e.Stored = got.Value()
			}
			written = append(written, e)
		}
	}
	return written, nil
}

// watch starts the package's watcher over the whole bucket and waits
// until it is synced and its handlers ran every event and error queued.
// reported returns what OnError received.
func watch(ctx context.Context, js jetstream.JetStream, b e2eapi.Bucket) (w reflect.Value, stop func(), reported func() []Reported, err error) {
	fn := reflect.ValueOf(b.Watch)
	scopes := reflect.New(fn.Type().In(2)).Elem()
	scopes.FieldByName("All").SetBool(true)
	handlers := reflect.New(fn.Type().In(3)).Elem()
	var mu sync.Mutex
	var errs []Reported
	handlers.FieldByName("OnError").Set(reflect.ValueOf(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, describe(err))
	}))
	synced := make(chan struct{})
	handlers.FieldByName("OnSynced").Set(reflect.ValueOf(func() { close(synced) }))
	out := fn.Call([]reflect.Value{reflect.ValueOf(ctx), reflect.ValueOf(js), scopes, handlers})
	if err := asError(out[1]); err != nil {
		return reflect.Value{}, nil, nil, err
	}
	w = out[0]
	kw := w.Interface().(kvwatch.Watcher)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := kw.WaitSynced(wctx); err != nil {
		kw.Stop()
		return reflect.Value{}, nil, nil, fmt.Errorf("WaitSynced: %w", err)
	}
	select {
	case <-synced:
	case <-wctx.Done():
		kw.Stop()
		return reflect.Value{}, nil, nil, errors.New("OnSynced was not called within 30s")
	}
	for kw.Stats().Queued > 0 {
		select {
		case <-wctx.Done():
			kw.Stop()
			return reflect.Value{}, nil, nil, errors.New("the handlers did not run what was queued within 30s")
		case <-time.After(2 * time.Millisecond):
		}
	}
	reported = func() []Reported {
		mu.Lock()
		defer mu.Unlock()
		return append([]Reported(nil), errs...)
	}
	return w, kw.Stop, reported, nil
}

// describe records an error OnError received.
func describe(err error) Reported {
	var de *kvwatch.DataError
	var ue *kvwatch.UnknownKeyError
	switch {
	case errors.As(err, &de):
		return Reported{Type: "DataError", Kind: de.Kind, Key: de.Key, Text: err.Error()}
	case errors.As(err, &ue):
		return Reported{Type: "UnknownKeyError", Key: ue.Key, Text: err.Error()}
	}
	return Reported{Type: "other", Text: err.Error()}
}

// entry records a typed key and value.
func entry(kind string, key, value reflect.Value) Entry {
	e := Entry{Kind: kind, Key: key.MethodByName("String").Call(nil)[0].String()}
	data, err := json.Marshal(value.Interface())
	if err != nil {
		data, _ = json.Marshal("json.Marshal: " + err.Error())
	}
	e.JSON = data
	switch {
	case value.Kind() == reflect.String:
		e.Raw = []byte(value.String())
	case value.Kind() == reflect.Slice && value.Type().Elem().Kind() == reflect.Uint8:
		e.Raw = append([]byte{}, value.Bytes()...)
	}
	return e
}

// asError is the error a reflect call returned, nil for none.
func asError(v reflect.Value) error {
	if v.IsNil() {
		return nil
	}
	return v.Interface().(error)
}
