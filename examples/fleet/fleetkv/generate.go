// Package fleetkv is the typed KV access of the fleet example, generated
// by kvwatchgen from kvwatch.yaml.
package fleetkv

//go:generate go run github.com/kvwatchgen/kvwatchgen/cmd/kvwatchgen -schema kvwatch.yaml
