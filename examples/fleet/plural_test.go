package main

import "testing"

// Counts in the example's output are plural only when they are not 1.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "delete", "0 deletes"},
		{1, "delete", "1 delete"},
		{2, "delete", "2 deletes"},
		{1, "VPC config", "1 VPC config"},
		{3, "firewall rule", "3 firewall rules"},
	} {
		if got := count(c.n, c.noun); got != c.want {
			t.Errorf("count(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}
