// Package any is a package of external types for the golden case
// import_names: its name is one the generated code uses for something else.
package any

// T is an external value type.
type T struct {
	Tags []string `json:"tags"`
}
