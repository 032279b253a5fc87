package kvwatchimpl_test

import (
	"context"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
)

// The sync point is one step (docs/watching.md, "The sync point"): no
// caller sees the watcher synced while a registration is not, so a
// registration added once the watcher is synced is synced when AddHandlers
// returns. The hook holds the event goroutine inside the sync point while
// the test looks at the watcher from outside.
func TestSyncPointIsOneStep(t *testing.T) {
	js, kv := setup(t)
	writeKeys(t, kv, "a", 3)
	inside, release := make(chan struct{}), make(chan struct{})
	hook := kvwatchimpl.WithSyncPointHook(func(kvwatchimpl.Checkpoint) func() {
		select {
		case inside <- struct{}{}:
			<-release
		default: // a later sync point (none here)
		}
		return nil
	})
	r := newRecorder()
	w := startNetwork(t, js, vpcs("a"), r, hook)
	select {
	case <-inside:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher never reached its sync point")
	}
	seenSynced := w.Synced()
	reg, err := w.AddHandlers(nil, nil, nil)
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	regSynced := reg.Synced()
	close(release)
	if seenSynced && !regSynced {
		t.Error("inside the sync point the watcher is synced, and a registration added then is not")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if err := reg.WaitSynced(ctx); err != nil {
		t.Errorf("a registration added before the sync point: WaitSynced = %v", err)
	}
	synced := make(chan struct{})
	later, err := w.AddHandlers(nil, func() { close(synced) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !later.Synced() {
		t.Error("a registration added after WaitSynced returned is not synced when AddHandlers returns")
	}
	select {
	case <-synced:
	case <-ctx.Done():
		t.Fatal("the later registration's OnSynced never ran")
	}
}
