package kvwatchimpl

import "github.com/kvwatchgen/kvwatchgen/internal/version"

// Version guard between generated code and this runtime, in the manner of
// protobuf-go's protoimpl.EnforceVersion. Every generated package contains
//
//	const (
//		_ = kvwatchimpl.GeneratedCodeTooOld_Regenerate(N - kvwatchimpl.MinVersion)
//		_ = kvwatchimpl.RuntimeTooOld_UpgradeModule(kvwatchimpl.MaxVersion - N)
//	)
//
// where N is the GenVersion of the generator that wrote it. Both types are
// unsigned, so a negative constant does not compile, and the compiler names
// the type in its message ("constant -1 overflows
// kvwatchimpl.RuntimeTooOld_UpgradeModule"): the type's name says what to do.
// The underscores are deliberate: these names are read in build errors.

// GeneratedCodeTooOld_Regenerate is the guard that fails when generated
// code is older than MinVersion: regenerate it with the kvwatchgen of the
// module version in go.mod (go tool kvwatchgen).
type GeneratedCodeTooOld_Regenerate uint

// RuntimeTooOld_UpgradeModule is the guard that fails when generated code
// is newer than MaxVersion: upgrade github.com/kvwatchgen/kvwatchgen in
// go.mod to the generator's version (or regenerate with the older
// generator).
type RuntimeTooOld_UpgradeModule uint

// Versions: 2 added the JSON codec's fast path (JSON.Fast, JSONReader). 3
// moved what only generated code uses from kvwatch to this package. 4
// compiled each key template once, into the Kind (Kind.Key), and read and
// wrote checkpoints by kind (EntriesOf, WithEntries). 5 split the runtime
// by audience before the first release: kvwatch holds what a user of a
// watcher names (the watcher, cache and registration as interfaces), the
// new kvclient what a user of a typed client names, and this package the
// engine and everything else generated code calls; nothing released
// depends on versions 2 to 4, so this runtime builds none before version
// 5. 6 added the schema a bucket's spec comes from (BucketSpec.Schema, a
// SchemaID): CreateOrUpdateBucket records it in the bucket's stream
// metadata, and watchers compare it with that record. Version 5 code
// still builds: its spec has no Schema, so nothing is recorded or
// compared for it.
const (
	// GenVersion is the version of generated code this runtime was
	// released with; the generator writes it into generated files (both
	// read internal/version).
	GenVersion = version.Gen
	// MinVersion is the oldest generated code this runtime supports.
	MinVersion = 5
	// MaxVersion is the newest generated code this runtime supports.
	MaxVersion = GenVersion
)
