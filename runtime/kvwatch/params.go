package kvwatch

import "fmt"

// ParamError reports a key whose token for a typed parameter does not
// parse.
type ParamError struct {
	Key   string // the key
	Param string // the parameter name
	Err   error
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("key %q: parameter %s: %v", e.Key, e.Param, e.Err)
}

// Unwrap returns the parse error.
func (e *ParamError) Unwrap() error { return e.Err }
