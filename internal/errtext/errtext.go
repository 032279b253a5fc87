// Package errtext holds the texts of failures that the runtime (a user's
// program) and the command (verify, watch, describe) both report, so that
// one failure reads the same wherever it surfaces, with the same fix. Only
// the names of the knobs differ: an option in a program, a flag on the
// command line.
package errtext

import (
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// BucketFixes names, where a missing bucket is reported, the two ways
// other than creating it: naming the bucket the data is really in, and
// connecting where it is.
type BucketFixes struct {
	Rename  string // e.g. "kvclient.WithBucketName and kvwatch.WithBucket"
	Connect string // e.g. "-server, -context"
}

// Program is what a program can change: the options that name the live
// bucket, and its connection or JetStream domain.
var Program = BucketFixes{
	Rename:  "kvclient.WithBucketName and kvwatch.WithBucket",
	Connect: "the connection's URL, or jetstream.NewWithDomain",
}

// Command is what the live-bucket subcommands take.
var Command = BucketFixes{
	Rename:  "-bucket SCHEMA=LIVE",
	Connect: "-server, -context",
}

// BucketNotFound is the error of a bucket whose stream KV_<bucket> is not
// there: prefix (such as "kvwatch: ", or empty), the bucket, where it was
// looked for (a URL and domain, or empty when unknown), and what to do. It
// matches jetstream.ErrBucketNotFound.
func BucketNotFound(prefix, bucket, where string, fixes BucketFixes) error {
	if where != "" {
		where = " on " + where
	}
	return fmt.Errorf("%sbucket %s (stream KV_%s) not found%s: create it (the generated CreateOrUpdate…Bucket), "+
		"or name the live bucket (%s), or connect where it is (%s): %w",
		prefix, bucket, bucket, where, fixes.Rename, fixes.Connect, jetstream.ErrBucketNotFound)
}

// Where describes a JetStream context for BucketNotFound: the server's
// URL (its password hidden) and the JetStream domain, when one is set.
func Where(url, domain string) string {
	if domain != "" {
		return url + " in JetStream domain " + domain
	}
	return url
}
