package kvwatch

// Version guard between generated code and this runtime, in the manner of
// protobuf-go's protoimpl.EnforceVersion. Every generated package contains
//
//	const _ = kvwatch.EnforceVersion(N - kvwatch.MinVersion)
//	const _ = kvwatch.EnforceVersion(kvwatch.MaxVersion - N)
//
// where N is GenVersion of the generator that wrote it. EnforceVersion is
// unsigned, so a negative constant does not compile: the build fails in the
// generated file, whose comment says how to fix it.

// EnforceVersion is the type of the version guard constants.
type EnforceVersion uint

const (
	// GenVersion is the version of generated code this runtime was
	// released with; the generator writes it into generated files.
	GenVersion = 1
	// MinVersion is the oldest generated code this runtime supports.
	MinVersion = 1
	// MaxVersion is the newest generated code this runtime supports.
	MaxVersion = 1
)
