package kvwatchgen_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	typed "github.com/kvwatchgen/kvwatchgen/golden/typed_params/want"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchtest"
)

// Typed key parameters round-trip: Parse(k.String()) == k for any int64
// and uint64, and a token that is not the canonical form of one is
// rejected, so keys and key structs map one to one.
func TestTypedKeysRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ints := []int64{0, 1, -1, math.MaxInt64, math.MinInt64}
	uints := []uint64{0, 1, math.MaxUint64}
	for range 1000 {
		ints = append(ints, int64(rng.Uint64()))
		uints = append(uints, rng.Uint64())
	}
	for i, n := range ints {
		k := typed.ReplicaKey{Region: "eu-1", Shard: n, Replica: uints[i%len(uints)]}
		got, err := typed.ParseReplicaKey(k.String())
		if err != nil || got != k {
			t.Fatalf("ParseReplicaKey(%q) = %+v, %v; want %+v", k.String(), got, err, k)
		}
	}
	for token, why := range map[string]string{
		"01": "canonical", "+1": "outside the key charset", "-0": "canonical", "1e3": "not an int64",
		"9223372036854775808": "not an int64", "-9223372036854775809": "not an int64", "x": "not an int64",
	} {
		_, err := typed.ParseShardKey("region.eu.shard." + token)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseShardKey(shard %q) = %v, want an error saying %q", token, err, why)
		}
	}
	for _, token := range []string{"-1", "18446744073709551616", "007"} {
		if _, err := typed.ParseEpochKey("epoch." + token); err == nil {
			t.Errorf("ParseEpochKey(%q) accepted", token)
		}
	}
}

// Scopes with several parameters and with none watch what they name, on
// one consumer.
func TestMultiParameterAndParameterlessScopes(t *testing.T) {
	js := kvwatchtest.JetStream(t)
	kv := kvwatchtest.Bucket(t, js, "shards")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := typed.NewShardsBucket(kv)
	mustPut := func(_ uint64, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	mustPut(b.PutShard(ctx, typed.ShardKey{Region: "eu", Shard: 3}, "eu-3"))
	mustPut(b.PutShard(ctx, typed.ShardKey{Region: "eu", Shard: -3}, "eu-minus-3"))
	mustPut(b.PutReplica(ctx, typed.ReplicaKey{Region: "eu", Shard: 3, Replica: 1}, typed.Replica{Host: "h1"}))
	mustPut(b.PutReplica(ctx, typed.ReplicaKey{Region: "eu", Shard: 4, Replica: 1}, typed.Replica{Host: "h2"}))
	mustPut(b.PutGlobal(ctx, typed.GlobalKey{}, typed.Replica{Host: "global"}))
	mustPut(b.PutEpoch(ctx, typed.EpochKey{N: 9}, 9))

	w, err := typed.WatchShards(ctx, js, typed.ShardsScopes{
		Shard:  []typed.ShardsShardScope{{Region: "eu", Shard: 3}},
		Global: true,
	}, typed.ShardsHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := w.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(w.Filters()), "[$KV.shards.global $KV.shards.region.eu.shard.3 $KV.shards.region.eu.shard.3.>]"; got != want {
		t.Errorf("filters = %s, want %s", got, want)
	}
	if v, ok := w.ShardCache().Get(typed.ShardKey{Region: "eu", Shard: 3}); !ok || v != "eu-3" {
		t.Errorf("shard eu/3 = %q, %v", v, ok)
	}
	if w.ShardCache().Len() != 1 || w.ReplicaCache().Len() != 1 || w.GlobalCache().Len() != 1 || w.EpochCache().Len() != 0 {
		t.Errorf("cache sizes: shard %d replica %d global %d epoch %d; want 1 1 1 0",
			w.ShardCache().Len(), w.ReplicaCache().Len(), w.GlobalCache().Len(), w.EpochCache().Len())
	}
	if n := kvwatchtest.Consumers(t, js, "shards"); n != 1 {
		t.Errorf("consumers = %d, want 1", n)
	}
}
