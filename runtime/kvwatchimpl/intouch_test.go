package kvwatchimpl

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A stream's info speaks for the stream when a server not replicated
// answered it, or a leader that heard lately from a quorum with itself.
func TestInTouch(t *testing.T) {
	current := jetstream.PeerInfo{Current: true, Active: 500 * time.Millisecond}
	silent := jetstream.PeerInfo{Current: true, Active: 4 * time.Second}
	behind := jetstream.PeerInfo{Current: false, Active: 500 * time.Millisecond}
	offline := jetstream.PeerInfo{Current: true, Offline: true}
	for _, tt := range []struct {
		name string
		c    *jetstream.ClusterInfo
		want bool
	}{
		{"no cluster info", nil, true},
		{"one server", &jetstream.ClusterInfo{Leader: "s1"}, true},
		{"R1 in a cluster", &jetstream.ClusterInfo{Name: "c", Leader: "n1"}, true},
		{"R1 without a leader", &jetstream.ClusterInfo{Name: "c"}, false},
		{"R3 leader, both replicas current", &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{&current, &current}}, true},
		{"R3 leader, one replica current", &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{&current, &offline}}, true},
		{"R3 leader cut off", &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{&silent, &silent}}, false},
		{"R3 leader, replicas behind", &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{&behind, &offline}}, false},
		{"R3 without a leader", &jetstream.ClusterInfo{Replicas: []*jetstream.PeerInfo{&current, &current}}, false},
		{"R5 leader, two current", &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{&current, &current, &silent, &offline}}, true},
		{"R5 leader, one current", &jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{&current, &silent, &silent, &offline}}, false},
	} {
		if got := inTouch(tt.c); got != tt.want {
			t.Errorf("%s: inTouch = %v, want %v", tt.name, got, tt.want)
		}
	}
}
