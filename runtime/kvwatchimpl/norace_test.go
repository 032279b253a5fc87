//go:build !race

package kvwatchimpl_test

// raceDetector reports whether the tests run with -race, which slows the
// client several times over on 2 cores.
const raceDetector = false
