package kvwatchimpl

import "fmt"

// BucketSpec describes a bucket to the runtime. Generated code declares one
// per bucket; it is read-only after that.
type BucketSpec struct {
	// Bucket is the NATS KV bucket name; its stream is "KV_" + Bucket.
	Bucket string
	// Scopes are the ways a watcher of this bucket can be narrowed.
	Scopes []ScopeSpec
	// Config is the configuration the schema declares for the bucket's
	// stream (zero: none, every default applies).
	Config BucketConfig
	// Schema identifies the schema the spec was generated from (since
	// generated-code version 6; zero in older code, for which nothing is
	// recorded or compared: see SchemaID).
	Schema SchemaID
}

// SchemaID identifies the schema a bucket's generated code comes from.
// CreateOrUpdateBucket records it in the bucket's stream metadata, and a
// watcher compares it with that record (kvwatch.Stats.Schema). A SchemaID
// without a fingerprint (a spec of generated code before version 6, or
// written by hand) is no schema: nothing is recorded, and nothing
// compared.
type SchemaID struct {
	// Revision is the schema's revision: (0 when it declares none).
	Revision int
	// Fingerprint is the bucket's fingerprint in the schema (16 hex
	// digits): what its kinds, scopes and config mean to the data.
	Fingerprint string
}

// ScopeSpec is one way to narrow a watcher: a token-aligned prefix of one
// or more key templates, such as "vpc.{vpc}".
type ScopeSpec struct {
	Name   string // Go name, used in errors
	Prefix string // template prefix
}

// validBucketName checks a bucket name given at run time (WithBucket) as
// schema/ checks the schema's: a NATS KV bucket name.
func validBucketName(name string) error {
	if name == "" {
		return fmt.Errorf("kvwatch: empty bucket name")
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return fmt.Errorf("kvwatch: bucket name %q: %q is not allowed (only A-Z, a-z, 0-9, _ and -)", name, c)
		}
	}
	return nil
}
