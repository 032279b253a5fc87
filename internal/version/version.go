// Package version holds the one version number that generated code and
// the runtime agree on: the generator writes it into every generated file
// (gen.GenVersion), and the runtime accepts generated code from its
// MinVersion to it (kvwatchimpl.GenVersion, kvwatchimpl.MaxVersion). One constant
// read by both, so that they cannot drift apart.
package version

// Gen is the version of generated code's contract with the runtime. It
// changes only when generated code needs a different runtime API.
const Gen = 6
