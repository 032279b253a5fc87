package duration

import (
	"testing"
	"time"
)

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour:                    "24h",
		90 * time.Minute:                  "1h30m",
		90 * time.Second:                  "1m30s",
		1500 * time.Millisecond:           "1.5s",
		time.Hour + time.Second:           "1h0m1s",
		100 * time.Millisecond:            "100ms",
		2*time.Hour + 30*time.Millisecond: "2h0m0.03s",
	} {
		got := Format(d)
		if got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back, err, d)
		}
	}
}

func TestOrNone(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "none", -time.Second: "none", 24 * time.Hour: "24h", 90 * time.Second: "1m30s"} {
		if got := OrNone(d); got != want {
			t.Errorf("OrNone(%v) = %q, want %q", d, got, want)
		}
	}
}
