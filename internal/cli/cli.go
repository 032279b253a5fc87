// Package cli is the kvwatchgen command: flags, the schema -> gen -> files
// pipeline, and exit codes. cmd/kvwatchgen is a thin main around Run, and
// the golden tests drive Run in-process exactly as a user runs the tool.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"

	"github.com/kvwatchgen/kvwatchgen/gen"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// Exit codes.
const (
	ExitOK    = 0 // generated, or up to date with -check
	ExitError = 1 // schema errors, a failed check, or an I/O error
	ExitUsage = 2 // bad flags or arguments
)

const usage = `usage: kvwatchgen [-schema FILE] [-out DIR] [-check] [-v]
       kvwatchgen -version

Generates typed NATS KV watchers from a kvwatchgen schema.

`

// Run runs kvwatchgen with args (without the program name) and returns the
// exit code. Output goes to stdout, diagnostics to stderr.
func Run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kvwatchgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	schemaPath := fs.String("schema", "kvwatch.yaml", "schema `file`")
	out := fs.String("out", "", "output `folder` (default: the schema's folder)")
	check := fs.Bool("check", false, "write nothing; exit 1 and list missing, stale and extra generated files")
	verbose := fs.Bool("v", false, "list the files written and removed")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "kvwatchgen: unexpected argument %q (the schema is given with -schema)\n", fs.Arg(0))
		fs.Usage()
		return ExitUsage
	}
	if *version {
		fmt.Fprintf(stdout, "kvwatchgen %s (generated code API %d)\n", moduleVersion(), gen.GenVersion)
		return ExitOK
	}
	dir := *out
	if dir == "" {
		dir = filepath.Dir(*schemaPath)
	}

	s, err := schema.LoadFile(*schemaPath)
	if err != nil {
		var list schema.ErrorList
		if errors.As(err, &list) {
			fmt.Fprintln(stderr, list.Error())
		} else {
			fmt.Fprintf(stderr, "kvwatchgen: %v\n", err)
		}
		return ExitError
	}
	files, err := gen.Generate(s)
	if err != nil {
		fmt.Fprintf(stderr, "kvwatchgen: %v\n", err)
		return ExitError
	}
	if *check {
		return runCheck(dir, *schemaPath, files, stderr)
	}
	written, removed, err := gen.Write(dir, files)
	if err != nil {
		fmt.Fprintf(stderr, "kvwatchgen: %v\n", err)
		return ExitError
	}
	if *verbose {
		for _, name := range written {
			fmt.Fprintf(stdout, "wrote %s\n", filepath.Join(dir, name))
		}
		for _, name := range removed {
			fmt.Fprintf(stdout, "removed %s\n", filepath.Join(dir, name))
		}
	}
	return ExitOK
}

// runCheck reports how dir differs from the generated files.
func runCheck(dir, schemaPath string, files []gen.File, stderr io.Writer) int {
	problems, err := gen.Check(dir, files)
	if err != nil {
		fmt.Fprintf(stderr, "kvwatchgen: %v\n", err)
		return ExitError
	}
	if len(problems) == 0 {
		return ExitOK
	}
	for _, p := range problems {
		fmt.Fprintf(stderr, "%s\n", filepath.Join(dir, p.String()))
	}
	fmt.Fprintf(stderr, "kvwatchgen: %s is not up to date with %s; run: kvwatchgen -schema %s -out %s\n", dir, schemaPath, schemaPath, dir)
	return ExitError
}

// moduleVersion returns the version of the kvwatchgen module this binary
// was built from: the main module when built inside it ("(devel)" for a
// local build), or the dependency version when run with go tool.
func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	const module = "github.com/kvwatchgen/kvwatchgen"
	if info.Main.Path == module {
		return info.Main.Version
	}
	for _, dep := range info.Deps {
		if dep.Path == module {
			return dep.Version
		}
	}
	return "(unknown)"
}
