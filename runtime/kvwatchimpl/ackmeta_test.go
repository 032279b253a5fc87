package kvwatchimpl

import "testing"

func TestParseAckMeta(t *testing.T) {
	for reply, want := range map[string]ackMeta{
		"$JS.ACK.KV_b.cons.1.42.7.1700000000000000000.3":                     {streamSeq: 42, consumerSeq: 7, timestamp: 1700000000000000000, pending: 3},
		"$JS.ACK.hub.ACCHASH.KV_b.cons.1.42.7.1700000000000000000.3":         {streamSeq: 42, consumerSeq: 7, timestamp: 1700000000000000000, pending: 3},
		"$JS.ACK.hub.ACCHASH.KV_b.cons.1.42.7.1700000000000000000.3.random1": {streamSeq: 42, consumerSeq: 7, timestamp: 1700000000000000000, pending: 3},
	} {
		got, ok := parseAckMeta(reply)
		if !ok || got != want {
			t.Errorf("parseAckMeta(%q) = %+v, %v; want %+v", reply, got, ok, want)
		}
	}
	for _, bad := range []string{"", "_INBOX.x", "$JS.ACK.a.b.c", "$JS.ACK.a.b.c.d.e.f.g.h", "$JS.ACK.a.b.c.d.e.f"} {
		if _, ok := parseAckMeta(bad); ok {
			t.Errorf("parseAckMeta(%q) accepted", bad)
		}
	}
	if n := testing.AllocsPerRun(100, func() { parseAckMeta("$JS.ACK.KV_b.cons.1.42.7.1700000000000000000.3") }); n != 0 {
		t.Errorf("parseAckMeta allocates %v times", n)
	}
}
