// Package duration writes durations as a schema does: the shortest text
// Go's time.ParseDuration reads back as the same duration ("24h", "1h30m",
// "90s", "1.5s"), for the generator's doc comments and the runtime's
// messages alike.
package duration

import (
	"strings"
	"time"
)

// Format writes d without the zero units time.Duration.String keeps
// ("24h0m0s" is "24h").
func Format(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// OrNone writes d as Format does, and a duration that is not set (0 or
// less) as "none": a bucket's ttl or limit-marker ttl, as the runtime's
// BucketChange, kvwatchgen -compat and describe show it.
func OrNone(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return Format(d)
}
