// Package e2eapi is where the generated packages of internal/compat's
// end-to-end test register their entry points for the driver: the test
// adds a file to each package that calls Register from an init function.
// Registering from inside each package, rather than naming every
// package's functions in the driver's main package, keeps that package
// quick to compile.
package e2eapi

// Bucket is what a generated package declares for one bucket.
type Bucket struct {
	Name   string // the bucket's name
	Create any    // CreateOrUpdate<Bucket>Bucket
	Open   any    // Open<Bucket>Bucket
	Watch  any    // Watch<Bucket>
	Kinds  []Kind
	// Config is the schema's config: of the bucket, nil for none.
	Config *Limits
}

// Kind names one kind's methods.
type Kind struct {
	Name  string // the kind's Go name
	Put   string // the client's Put<Kind>
	Cache string // the watcher's <Kind>Cache
}

// Limits are the config settings the limit probes need.
type Limits struct {
	MaxValueSize int32
	MaxBytes     int64
	MaxConsumers int
}

// Packages holds the buckets of each registered package, by the name of
// its folder.
var Packages = map[string][]Bucket{}

// Register records the buckets of the package in folder pkg.
func Register(pkg string, buckets ...Bucket) { Packages[pkg] = buckets }
