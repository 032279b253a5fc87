package kvwatchimpl

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
}

// ScopeSpec is one way to narrow a watcher: a token-aligned prefix of one
// or more key templates, such as "vpc.{vpc}".
type ScopeSpec struct {
	Name   string // Go name, used in errors
	Prefix string // template prefix
}
