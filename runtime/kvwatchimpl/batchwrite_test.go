package kvwatchimpl

import (
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
)

// A batch's answer is read as the server writes it: the commit's sequence,
// and errors with nats.go's sentinels, a lost compare-and-set under both
// codes servers use for it (10071 and, nats.go says on replicated streams,
// 10164; the servers of these tests answer 10071 only).
func TestBatchAck(t *testing.T) {
	if seq, err := batchAck([]byte(`{"stream":"KV_network","seq":42,"batch":"x","count":3}`)); err != nil || seq != 42 {
		t.Errorf("commit ack = %d, %v; want 42", seq, err)
	}
	for _, code := range []string{"10071", "10164"} {
		_, err := batchAck([]byte(`{"error":{"code":400,"err_code":` + code + `,"description":"wrong last sequence: 5"}}`))
		var apiErr *jetstream.APIError
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) || !errors.As(err, &apiErr) {
			t.Errorf("error %s = %v, want ErrKeyRevisionMismatch and the APIError", code, err)
		}
	}
	if _, err := batchAck([]byte(`{"error":{"code":400,"err_code":10174,"description":"atomic publish is disabled"}}`)); !errors.Is(err, kvclient.ErrBatchDisabled) {
		t.Errorf("error 10174 = %v, want ErrBatchDisabled", err)
	}
	if _, err := batchAck([]byte(`not json`)); err == nil {
		t.Error("an unreadable answer was taken")
	}
}
