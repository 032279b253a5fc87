package main

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"

	"example.com/compate2e/driver/e2eapi"
)

// Update is the new package's CreateOrUpdate on the bucket the old
// package made.
type Update struct {
	Err     string `json:",omitempty"`
	Refused bool   // the error is a *kvclient.BucketConfigError
	Changes []kvclient.BucketChange
	// AllowDataLoss is the same with kvclient.AllowDataLoss(), tried
	// where the first was refused.
	AllowDataLoss *Update `json:",omitempty"`
}

// update runs n's CreateOrUpdate on the existing bucket.
func update(ctx context.Context, js jetstream.JetStream, n e2eapi.Bucket) *Update {
	_, err := call(ctx, js, n.Create)
	u := configResult(err)
	if u.Refused {
		_, err = call(ctx, js, n.Create, kvclient.AllowDataLoss())
		u.AllowDataLoss = configResult(err)
	}
	return u
}

func configResult(err error) *Update {
	u := &Update{}
	if err == nil {
		return u
	}
	u.Err = err.Error()
	var bce *kvclient.BucketConfigError
	if errors.As(err, &bce) {
		u.Refused, u.Changes = true, bce.Changes
	}
	return u
}

// Limits are old writers and watchers on the bucket the new package made,
// each probe an attempt to go beyond one of its limits.
type Limits struct {
	Err string `json:",omitempty"` // a probe could not be set up
	// ConsumersProbed is set where the new schema sets max_consumers, to
	// at most maxProbedConsumers; Watchers is then how many old watchers
	// started and synced, up to MaxConsumers+1, before one failed with
	// WatcherErr.
	ConsumersProbed bool
	Watchers        int
	WatcherErr      string `json:",omitempty"`
	ConsumerLimit   bool   // WatcherErr matches kvwatch.ErrConsumerLimit
	// BatchErr is the error of an old client's batch of one put.
	BatchErr      string `json:",omitempty"`
	BatchDisabled bool   // BatchErr matches kvclient.ErrBatchDisabled
	// Oversized is the size of a value of 64 KiB strings an old client
	// put, 0 for none (no kind has a string); OversizedErr its error.
	Oversized    int
	OversizedErr string `json:",omitempty"`
	// FillProbed is set where the new schema sets max_bytes, to at most
	// maxProbedBytes; FillWrites is then how many puts of distinct keys an
	// old client made before FillErr, writing past max_bytes.
	FillProbed bool
	FillWrites int
	FillErr    string `json:",omitempty"`
}

// The largest limits probed: each takes a watcher, or a put of 1 KiB.
const (
	maxProbedConsumers = 200
	maxProbedBytes     = 4 << 20
)

// limits probes the limits of the bucket made by the new package with
// old's client and watchers.
func limits(ctx context.Context, js jetstream.JetStream, old e2eapi.Bucket, cfg *e2eapi.Limits) *Limits {
	l := &Limits{}
	if len(old.Kinds) == 0 {
		l.Err = "no kinds"
		return l
	}
	bucket, err := call(ctx, js, old.Open)
	if err != nil {
		l.Err = "open: " + err.Error()
		return l
	}
	if cfg != nil && cfg.MaxConsumers > 0 && cfg.MaxConsumers <= maxProbedConsumers {
		l.ConsumersProbed = true
		var stops []func()
		for range cfg.MaxConsumers + 1 {
			_, stop, _, err := watch(ctx, js, old)
			if err != nil {
				l.WatcherErr, l.ConsumerLimit = err.Error(), errors.Is(err, kvwatch.ErrConsumerLimit)
				break
			}
			stops = append(stops, stop)
			l.Watchers++
		}
		for _, stop := range stops {
			stop()
		}
	}

	k := old.Kinds[0]
	put := bucket.MethodByName(k.Put)
	batch := bucket.MethodByName("Batch").Call(nil)[0]
	batch = batch.MethodByName(k.Put).Call([]reflect.Value{fillKey(put.Type().In(1), 0, ""), fill(put.Type().In(2), 0, 0, 0)})[0]
	out := batch.MethodByName("Commit").Call([]reflect.Value{reflect.ValueOf(ctx)})
	if err := asError(out[1]); err != nil {
		l.BatchErr, l.BatchDisabled = err.Error(), errors.Is(err, kvclient.ErrBatchDisabled)
	}

	for _, k := range old.Kinds {
		put := bucket.MethodByName(k.Put)
		key, value := fillKey(put.Type().In(1), 0, ""), fill(put.Type().In(2), 0, 64<<10, 0)
		if e := entry(k.Name, key, value); len(e.JSON) > 64<<10 {
			l.Oversized = len(e.JSON)
			out := put.Call([]reflect.Value{reflect.ValueOf(ctx), key, value})
			if err := asError(out[1]); err != nil {
				l.OversizedErr = err.Error()
			}
			break
		}
	}

	if cfg != nil && cfg.MaxBytes > 0 && cfg.MaxBytes <= maxProbedBytes {
		l.FillProbed = true
		l.FillErr = fillBucket(ctx, bucket, old, cfg, &l.FillWrites)
	}
	return l
}

// fillBucket puts values of about 1 KiB under distinct keys until a put
// fails (its error returned) or well past cfg.MaxBytes ("").
func fillBucket(ctx context.Context, bucket reflect.Value, old e2eapi.Bucket, cfg *e2eapi.Limits, writes *int) string {
	strLen := 1024
	if cfg.MaxValueSize > 0 {
		strLen = min(strLen, int(cfg.MaxValueSize)/8)
	}
	for _, k := range old.Kinds {
		put := bucket.MethodByName(k.Put)
		keyType := put.Type().In(1)
		if entry(k.Name, fillKey(keyType, 0, "f-0"), reflect.Zero(put.Type().In(2))).Key == entry(k.Name, fillKey(keyType, 0, "f-1"), reflect.Zero(put.Type().In(2))).Key {
			continue // no string parameter to make keys distinct
		}
		value := fill(put.Type().In(2), 0, strLen, 0)
		for i := range int(cfg.MaxBytes)/strLen + 256 {
			out := put.Call([]reflect.Value{reflect.ValueOf(ctx), fillKey(keyType, 0, fmt.Sprintf("f-%d", i)), value})
			if err := asError(out[1]); err != nil {
				return err.Error()
			}
			*writes++
		}
		return ""
	}
	return "no kind has a string key parameter"
}
