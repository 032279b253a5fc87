package gen

import "testing"

// Generated docs write "an" before a name that is read starting with a
// vowel sound, "a" before the others.
func TestArticle(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"Instance", "an"}, {"Item", "an"}, {"AppWatcher", "an"}, {"EmptyWatcher", "an"},
		{"OtherEvent", "an"}, {"Route", "a"}, {"NetworkWatcher", "a"}, {"FirewallRule", "a"},
		{"VPCConfig", "a"},
		// Initialisms are read letter by letter.
		{"AWatcher", "an"}, {"APIKey", "an"}, {"HTTPRoute", "an"}, {"SSHKey", "an"},
		{"MTU", "an"}, {"RPCTarget", "an"}, {"XMLDoc", "an"}, {"LBPool", "an"},
		{"URLMap", "a"}, {"UUID", "a"}, {"VPC", "a"}, {"DNSZone", "a"},
		// ... unless read as a word.
		{"NATSAccount", "a"}, {"NATGateway", "a"}, {"LANSegment", "a"}, {"RAMDisk", "a"},
		// Words whose first letter does not give their first sound.
		{"User", "a"}, {"Unit", "a"}, {"UniqueName", "a"}, {"Usage", "a"}, {"Update", "an"},
		{"Upstream", "an"}, {"Unknown", "an"}, {"Unused", "an"}, {"Euro", "a"}, {"OneShot", "a"},
		{"Hour", "an"}, {"HonestBroker", "an"}, {"Host", "a"},
		{"x", "a"}, {"item", "an"}, {"", "a"},
	} {
		if got := article(c.name); got != c.want {
			t.Errorf("article(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}
