package bucketconfig

// Hand-written tests of the generated CreateOrUpdate<Bucket>Bucket
// functions against a real server: the schema's config reaches the
// stream, defaults fill what it does not declare, applying again changes
// nothing, and a change the server cannot make is refused.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

func streamConfig(t *testing.T, js jetstream.JetStream, bucket string) jetstream.StreamConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config
}

// Each bucket's stream gets what its config declares and the defaults for
// the rest; the client it returns reads and writes; applying it again
// succeeds.
func TestCreateOrUpdateDeclaredConfig(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	routes, err := CreateOrUpdateRoutesBucket(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	c := streamConfig(t, js, "routes")
	if c.MaxMsgsPerSubject != 8 || c.MaxAge != 90*time.Minute || c.MaxMsgSize != 65536 || c.MaxBytes != 1048576 ||
		c.Storage != jetstream.FileStorage || c.Replicas != 1 || c.MaxConsumers != 5000 ||
		c.SubjectDeleteMarkerTTL != 90*time.Second || c.Description != `Routes, "quoted".` {
		t.Errorf("routes: stream config %+v is not the schema's", c)
	}
	if _, err := routes.PutRoute(ctx, RouteKey{ID: "a"}, "via b"); err != nil {
		t.Fatal(err)
	}
	if item, err := routes.GetRoute(ctx, RouteKey{ID: "a"}); err != nil || item.Value != "via b" {
		t.Errorf("GetRoute = %+v, %v", item, err)
	}
	if _, err := CreateOrUpdateRoutesBucket(ctx, js); err != nil {
		t.Errorf("applying routes again: %v", err)
	}

	if _, err := CreateOrUpdateSessionsBucket(ctx, js); err != nil {
		t.Fatal(err)
	}
	if c := streamConfig(t, js, "sessions"); c.Storage != jetstream.MemoryStorage || c.MaxAge != 500*time.Millisecond ||
		c.MaxMsgsPerSubject != 1 || c.MaxConsumers != kvwatchimpl.DefaultMaxConsumers {
		t.Errorf("sessions: stream config %+v is not the schema's", c)
	}

	for _, b := range []struct {
		name   string
		create func(context.Context, jetstream.JetStream, ...kvclient.BucketOption) error
	}{
		{"empty", func(ctx context.Context, js jetstream.JetStream, opts ...kvclient.BucketOption) error {
			_, err := CreateOrUpdateEmptyBucket(ctx, js, opts...)
			return err
		}},
		{"plain", func(ctx context.Context, js jetstream.JetStream, opts ...kvclient.BucketOption) error {
			_, err := CreateOrUpdatePlainBucket(ctx, js, opts...)
			return err
		}},
	} {
		name := b.name
		if err := b.create(ctx, js); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if c := streamConfig(t, js, name); c.MaxMsgsPerSubject != 1 || c.Storage != jetstream.FileStorage ||
			c.MaxConsumers != kvwatchimpl.DefaultMaxConsumers || c.MaxAge != 0 {
			t.Errorf("%s: stream config %+v: want the defaults", name, c)
		}
	}
}

// A bucket that exists on file storage is not moved to the schema's memory
// storage, even with AllowDataLoss, and is left as it was.
func TestCreateOrUpdateRefusesStorageChange(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kvwatchtest.Bucket(t, js, "sessions")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := CreateOrUpdateSessionsBucket(ctx, js, kvclient.AllowDataLoss())
	var ce *kvclient.BucketConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *kvwatch.BucketConfigError", err)
	}
	if c := streamConfig(t, js, "sessions"); c.Storage != jetstream.FileStorage || c.MaxAge != 0 {
		t.Errorf("the refusal changed the stream: %+v", c)
	}
}
