// Command kvwatchgen generates typed NATS JetStream KV watchers from a
// YAML schema.
//
//	kvwatchgen -schema kvwatch.yaml -out ./fleetkv   # generate
//	kvwatchgen -check ...                            # verify, write nothing
//	kvwatchgen -version
//
// Exit status: 0 on success, 1 on schema errors or a failed check, 2 on
// usage errors. See docs/schema.md for the schema format.
package main

import (
	"io"
	"os"

	"github.com/kvwatchgen/kvwatchgen/internal/cli"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is main without the process: testable in-process.
func run(args []string, stdout, stderr io.Writer) int { return cli.Run(args, stdout, stderr) }
