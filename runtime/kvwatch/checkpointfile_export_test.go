package kvwatch

// CheckpointFileFault makes f see every stage of each save of the
// checkpoint file ("create", "write", "sync", "rename"): an error it
// returns fails the save there, and a call that blocks holds the save
// there (a slow disk).
func CheckpointFileFault(f func(stage string) error) CheckpointFileOption {
	return func(c *checkpointFileConfig) { c.fault = f }
}
