package kvwatchimpl

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kvwatchgen/kvwatchgen/internal/directget"
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// Microbenchmarks of the hot paths, with allocation counts:
//
//	go test ./runtime/kvwatchimpl -run XXX -bench . -benchmem

type benchKey struct{ VPC, ID string }

type benchValue struct {
	Name    string   `json:"name"`
	Owner   string   `json:"owner"`
	CIDR    string   `json:"cidr"`
	NextHop string   `json:"next_hop"`
	Metric  int      `json:"metric"`
	Enabled bool     `json:"enabled"`
	Version int64    `json:"version"`
	Tags    []string `json:"tags"`
	Note    string   `json:"note"`
}

var benchTemplate = MustTemplate("vpc.{vpc}.route.{id}")

var benchKind = Kind[benchKey, benchValue]{
	Name: "Route", Key: benchTemplate,
	ParseKey: func(s string) (benchKey, error) {
		var p [2]string
		if err := benchTemplate.Split(s, p[:]); err != nil {
			return benchKey{}, err
		}
		return benchKey{p[0], p[1]}, nil
	},
	FormatKey: func(k benchKey) string { return "vpc." + k.VPC + ".route." + k.ID },
	Codec:     JSON[benchValue]{},
	Clone:     func(v benchValue) benchValue { v.Tags = CloneSlice(v.Tags, nil); return v },
}

func BenchmarkTemplateMatch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		benchTemplate.Match("vpc.blue.route.r123")
	}
}

func BenchmarkTemplateSplit(b *testing.B) {
	var p [2]string
	b.ReportAllocs()
	for b.Loop() {
		benchTemplate.Split("vpc.blue.route.r123", p[:])
	}
}

// BenchmarkApply is one live event through a watcher: key parse, JSON
// decode of a ~200-byte value, cache update (with its copy), the hand-off
// to the handlers' queue and the handler call (run here, on the same
// goroutine, as the listener's goroutine runs it).
func BenchmarkApply(b *testing.B) { benchApply(b, &benchKind) }

// BenchmarkApplyIndexed is BenchmarkApply on a kind whose cache has an
// index (by Owner, one of 100 owners, changing with every update): the
// difference is what an index costs per update.
func BenchmarkApplyIndexed(b *testing.B) {
	kind := benchKind
	kind.Indexes = []Index[benchValue]{{Name: "ByOwner", Value: func(v benchValue) any { return v.Owner }}}
	benchApply(b, &kind)
}

func benchApply(b *testing.B, kind *Kind[benchKey, benchValue]) {
	w := &Watcher{cfg: config.DefaultWatch()}
	w.listening.Store(&[]*Registration{})
	var seen int
	binding := Bind(kind, func(ev kvwatch.Event[benchKey, benchValue]) { seen += ev.Value.Metric })
	binding.attach(w)
	w.bindings, w.templates = []AnyBinding{binding}, []*Template{benchTemplate}
	w.own = w.newRegistration(nil, nil)
	if err := w.register(w.own, []AnyHandler{binding.ownHandler()}, false, false); err != nil {
		b.Fatal(err)
	}
	l := w.own.l
	values := make([][]byte, 100)
	for i := range values {
		values[i], _ = json.Marshal(benchValue{Name: "item-1", Owner: fmt.Sprintf("team-%02d", i), CIDR: "10.0.1.0/24", NextHop: "10.0.0.1",
			Metric: 1, Enabled: true, Version: 3, Tags: []string{"a", "b"}, Note: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})
	}
	keys := make([]string, 50000)
	for i := range keys {
		keys[i] = fmt.Sprintf("vpc.blue.route.r%d", i)
	}
	now := time.Now()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e := rawEntry{key: keys[i%len(keys)], value: values[(i/len(keys)+i)%len(values)], op: kvwatch.OpPut, revision: uint64(i), created: now, ordered: true}
		w.deliver(e)
		items, _ := l.next(nil, nil)
		for _, d := range items {
			l.begin()
			d.run()
			l.finish(w)
		}
		l.done(items)
		i++
	}
}

// BenchmarkDecodeOnly is the JSON decode BenchmarkApply includes: the
// difference between the two is the runtime's own cost per event.
func BenchmarkDecodeOnly(b *testing.B) {
	value, _ := json.Marshal(benchValue{Name: "item-1", Owner: "team-1", CIDR: "10.0.1.0/24", NextHop: "10.0.0.1",
		Metric: 1, Enabled: true, Version: 3, Tags: []string{"a", "b"}, Note: "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})
	b.ReportAllocs()
	for b.Loop() {
		var v benchValue
		if err := json.Unmarshal(value, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDirectEntry is the per-reply work of a read by direct get before
// the entry is applied: the status check and the headers the entry is
// made from (headers as nats.go decodes them).
func BenchmarkDirectEntry(b *testing.B) {
	w := &Watcher{cfg: config.DefaultWatch(), subjectPrefix: "$KV.network."}
	msg := &nats.Msg{
		Subject: "_INBOX.x.1",
		Header: nats.Header{
			"Nats-Stream":        {"KV_network"},
			"Nats-Subject":       {"$KV.network.vpc.blue.route.r123"},
			"Nats-Sequence":      {"123456"},
			"Nats-Time-Stamp":    {"2026-11-30T09:13:52.650123456Z"},
			"Nats-Num-Pending":   {"512"},
			"Nats-Last-Sequence": {"123455"},
		},
		Data: []byte(`{}`),
	}
	b.ReportAllocs()
	for b.Loop() {
		if msg.Header.Get("Status") != "" || msg.Header.Get("Description") != "" {
			b.Fatal("status")
		}
		w.stats.pending.Store(directget.HeaderUint(msg, "Nats-Num-Pending"))
		if _, ok := w.directEntry(msg); !ok {
			b.Fatal("not in the bucket")
		}
	}
}
