// Package cli is the kvwatchgen command: flags, the schema -> gen -> files
// pipeline, and exit codes. cmd/kvwatchgen is a thin main around Run, and
// the golden tests drive Run in-process exactly as a user runs the tool.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/gen"
	"github.com/kvwatchgen/kvwatchgen/internal/live"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// Exit codes.
const (
	ExitOK    = 0 // generated, or up to date with -check
	ExitError = 1 // schema errors, a failed check, or an I/O error
	ExitUsage = 2 // bad flags or arguments
)

const usage = `usage: kvwatchgen [-schema FILE] [-out DIR] [-check [-diff]] [-v]
       kvwatchgen -compat OLD [-schema FILE]
       kvwatchgen -version
       kvwatchgen verify|watch|describe -schema FILE -server URL ...  (a live bucket; -h for each)

Generates typed NATS KV watchers from a kvwatchgen schema. With -check it
writes nothing and exits 1 when the generated files are missing, stale or
extra; -diff adds, on stdout, a unified diff of each stale file from the
file on disk (---) to what would be generated (+++).

With -compat it writes nothing and compares the schema with OLD, a file
or git:REV (the same file at a git revision): every change is printed as
FILE:LINE:COL: VERDICT (CLASS): MESSAGE [ID], and it exits 1 when a
change breaks old or new code during a rollout (docs/evolution.md).

`

// Run runs kvwatchgen with args (without the program name) and returns the
// exit code. Output goes to stdout, diagnostics to stderr.
func Run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && live.IsSubcommand(args[0]) {
		return live.Main(args, stdout, stderr)
	}
	fs := flag.NewFlagSet("kvwatchgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	schemaPath := fs.String("schema", "kvwatch.yaml", "schema `file`")
	out := fs.String("out", "", "output `folder` (default: the schema's folder)")
	check := fs.Bool("check", false, "write nothing; exit 1 and list missing, stale and extra generated files")
	diff := fs.Bool("diff", false, "implies -check; also print a unified diff of each stale file (on disk -> generated) to stdout")
	verbose := fs.Bool("v", false, "list the files written and removed")
	version := fs.Bool("version", false, "print the version and exit")
	against := fs.String("compat", "", "write nothing; compare the schema with `OLD` (a file, or git:REV) and exit 1 when a change breaks a rollout")
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
	if *against != "" {
		if *check || *diff || *out != "" {
			fmt.Fprintln(stderr, "kvwatchgen: -compat writes and checks no files: drop -check, -diff and -out")
			return ExitUsage
		}
		return runCompat(*against, *schemaPath, stdout, stderr)
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
		} else if errors.Is(err, iofs.ErrNotExist) {
			fmt.Fprintf(stderr, "kvwatchgen: no schema: %v; give its path with -schema FILE (default kvwatch.yaml, in the current folder)\n", err)
		} else {
			fmt.Fprintf(stderr, "kvwatchgen: %v\n", err)
		}
		return ExitError
	}
	folder, err := gen.InspectFolder(dir, s.Package)
	if err != nil {
		fmt.Fprintf(stderr, "kvwatchgen: %v\n", err)
		return ExitError
	}
	if len(folder.Packages) > 0 {
		fmt.Fprintf(stderr, "kvwatchgen: %s holds %s, but the schema's package: is %s, and go build refuses a folder of two packages: "+
			"give the schema their package, or give those files package %s, or generate into another folder with -out\n",
			dir, strings.Join(folder.Packages, ", "), s.Package, s.Package)
		return ExitError
	}
	files, err := gen.Generate(s, gen.Options{Schema: filepath.Base(*schemaPath), NoPackageDoc: folder.PackageDoc != ""})
	if err != nil {
		fmt.Fprintf(stderr, "kvwatchgen: %v\n", err)
		return ExitError
	}
	if *check || *diff {
		return runCheck(dir, *schemaPath, files, *diff, stdout, stderr)
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

// runCheck reports how dir differs from the generated files on stderr,
// with the command that regenerates them, and with diff, a unified diff
// of each stale file on stdout. It returns ExitOK when there is no
// difference, ExitError otherwise.
func runCheck(dir, schemaPath string, files []gen.File, diff bool, stdout, stderr io.Writer) int {
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
	if diff {
		if err := writeDiffs(stdout, dir, files, problems); err != nil {
			fmt.Fprintf(stderr, "kvwatchgen: %v\n", err)
			return ExitError
		}
	}
	fmt.Fprintf(stderr, "kvwatchgen: %s is not up to date with %s; run: %s\n", dir, schemaPath, regenerateHint(dir, schemaPath))
	return ExitError
}

// writeDiffs writes the unified diff of every stale file among problems,
// from the file in dir to its generated content.
func writeDiffs(w io.Writer, dir string, files []gen.File, problems []gen.Problem) error {
	for _, p := range problems {
		if p.Kind != "stale" {
			continue
		}
		i := slices.IndexFunc(files, func(f gen.File) bool { return f.Name == p.File })
		if i < 0 {
			continue
		}
		path := filepath.Join(dir, p.File)
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, unifiedDiff(path+"\t(on disk)", path+"\t(generated)", old, files[i].Content)); err != nil {
			return err
		}
	}
	return nil
}
