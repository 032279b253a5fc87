package live

import (
	"context"
	"errors"
)

// runDescribe is not written yet (a later commit of this branch).
func runDescribe(ctx context.Context, o *options) int {
	return o.fail(ExitUsage, errors.New("describe: not implemented yet"))
}

