package kvwatch

import "github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"

// KeyMismatchError says why a key does not match a kind's key template:
// the error of a generated ParseXKey, and of a *DataError when a key in
// scope does not parse. Its fields are Key (the key as given), Template
// (the template it was matched against) and Reason (what differs).
type KeyMismatchError = kvwatchimpl.KeyMismatchError
