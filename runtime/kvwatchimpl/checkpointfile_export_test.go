package kvwatchimpl

import (
	"github.com/kvwatchgen/kvwatchgen/runtime/internal/config"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

// CheckpointFileFault makes f see every stage of each save of the
// checkpoint file ("create", "write", "sync", "rename"): an error it
// returns fails the save there, and a call that blocks holds the save
// there (a slow disk).
func CheckpointFileFault(f func(stage string) error) kvwatch.CheckpointFileOption {
	return func(c *config.CheckpointFile) { c.Fault = f }
}
