// Package live is kvwatchgen's subcommands that read live buckets through
// a schema: verify (does what a bucket holds fit the schema?), watch (a
// typed tail through the runtime) and describe (what an operator asks
// first). The schema is interpreted at run time (package interp): no
// generated code is needed. internal/cli hands these subcommands here;
// the generator's own path never calls into this package, and it does no
// work at program start (no package-level state beyond constant tables).
package live

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/kvwatchgen/kvwatchgen/internal/live/interp"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// Exit codes, the command's own (internal/cli): 0 all is well, 1 the
// bucket does not fit the schema (verify) or is missing (describe), 2 a
// usage or connection error.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// Subcommands are the names Main answers to.
var Subcommands = []string{"verify", "watch", "describe"}

// IsSubcommand reports whether name is one of Subcommands.
func IsSubcommand(name string) bool { return slices.Contains(Subcommands, name) }

// Env is what the subcommands take from the process besides their
// arguments: output, the environment (NATS_URL, NATS_CONTEXT, the nats
// CLI's configuration folder), whether stderr is a terminal (progress).
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Terminal is set when Stderr is a terminal: long reads then show
	// their progress there.
	Terminal bool
}

// Main runs subcommand args[0] as the process does: Ctrl-C (SIGINT) or
// SIGTERM cancels it, and it returns once everything it started is gone.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, Env{Stdout: stdout, Stderr: stderr, Getenv: os.Getenv, Terminal: isTerminal(stderr)})
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Run runs subcommand args[0] with the rest of args; ctx ends it (watch
// runs until then).
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	if len(args) == 0 || !IsSubcommand(args[0]) {
		fmt.Fprintf(env.Stderr, "kvwatchgen: want one of %s\n", strings.Join(Subcommands, ", "))
		return ExitUsage
	}
	o, code := parseFlags(args[0], args[1:], env)
	if o == nil {
		return code
	}
	switch args[0] {
	case "verify":
		return runVerify(ctx, o)
	case "watch":
		return runWatch(ctx, o)
	}
	return runDescribe(ctx, o)
}

// options are a subcommand's flags, its schema loaded and buckets chosen.
type options struct {
	cmd     string
	env     Env
	conn    connFlags
	json    bool
	prev    bool     // watch: print the previous value too
	scopes  []string // -scope, as given
	buckets []*target
	// revision is the schema's revision: (0 when it declares none).
	revision int
}

// target is one bucket to read: the schema's, and the name of the live
// bucket (the same unless -bucket SCHEMA=LIVE renames it).
type target struct {
	*interp.Bucket
	live string
}

const usageText = `usage: kvwatchgen verify   -schema FILE [connection] [-bucket NAME] [-scope Name=v1,v2 ...] [-json]
       kvwatchgen watch    -schema FILE [connection] [-bucket NAME] [-scope Name=v1,v2 ...] [-prev] [-json]
       kvwatchgen describe -schema FILE [connection] [-bucket NAME] [-json]

connection: -server URL (or -s; default $NATS_URL, else the nats context's,
else nats://127.0.0.1:4222), -creds FILE, -context NAME (a context of the
nats CLI; default $NATS_CONTEXT, else the one "nats context select" chose).

verify reads each bucket's current state without a consumer and checks
every entry through the schema: exit 0 when all fits, 1 when anything does
not, 2 on usage or connection errors. watch prints the bucket's state, a
line at sync, then each change, until Ctrl-C. describe shows the stream's
configuration against the schema's, entries per kind, consumers, mirrors
and the schema fingerprint the bucket records. -bucket SCHEMA=LIVE reads
live bucket LIVE through the schema's bucket SCHEMA. A scope with several
parameters takes values as a:b (in its prefix's order).

`

// parseFlags parses a subcommand's flags and loads its schema; nil and
// the exit code when it cannot (usage and schema errors are reported).
func parseFlags(cmd string, args []string, env Env) (*options, int) {
	fs := flag.NewFlagSet("kvwatchgen "+cmd, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprint(env.Stderr, usageText)
		fs.PrintDefaults()
	}
	o := &options{cmd: cmd, env: env}
	schemaPath := fs.String("schema", "kvwatch.yaml", "schema `file`")
	bucket := fs.String("bucket", "", "the schema's bucket `NAME` to read (default: all; watch needs one when there are several), or SCHEMA=LIVE")
	o.conn.register(fs)
	fs.BoolVar(&o.json, "json", false, "write JSON for machines")
	if cmd != "describe" {
		fs.Func("scope", "read only scope `Name=v1,v2` (repeatable; default: the whole bucket)", func(s string) error {
			o.scopes = append(o.scopes, s)
			return nil
		})
	}
	if cmd == "watch" {
		fs.BoolVar(&o.prev, "prev", false, "print each change's previous value too")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, ExitOK
		}
		return nil, ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "kvwatchgen %s: unexpected argument %q\n", cmd, fs.Arg(0))
		return nil, ExitUsage
	}
	s, err := schema.LoadFile(*schemaPath)
	if err != nil {
		var list schema.ErrorList
		if errors.As(err, &list) {
			fmt.Fprintln(env.Stderr, list.Error())
		} else {
			fmt.Fprintf(env.Stderr, "kvwatchgen %s: %v\n", cmd, err)
		}
		return nil, ExitUsage
	}
	o.revision = s.Revision
	if o.buckets, err = chooseBuckets(s, *bucket, cmd == "watch"); err != nil {
		fmt.Fprintf(env.Stderr, "kvwatchgen %s: %v\n", cmd, err)
		return nil, ExitUsage
	}
	if len(o.scopes) > 0 && len(o.buckets) > 1 {
		fmt.Fprintf(env.Stderr, "kvwatchgen %s: -scope needs -bucket: the schema has %d buckets\n", cmd, len(o.buckets))
		return nil, ExitUsage
	}
	return o, ExitOK
}

// chooseBuckets returns the buckets -bucket names (all when it is empty,
// unless one is required).
func chooseBuckets(s *schema.Schema, flagValue string, one bool) ([]*target, error) {
	names := make([]string, len(s.Buckets))
	for i, b := range s.Buckets {
		names[i] = b.Name
	}
	var chosen []*schema.Bucket
	live := ""
	switch {
	case flagValue == "" && one && len(s.Buckets) > 1:
		return nil, fmt.Errorf("the schema has %d buckets (%s): choose one with -bucket", len(s.Buckets), strings.Join(names, ", "))
	case flagValue == "":
		chosen = s.Buckets
	default:
		name, rename, renamed := strings.Cut(flagValue, "=")
		if renamed && !validBucketName(rename) {
			return nil, fmt.Errorf("-bucket %s: %q is not a bucket name (A-Z, a-z, 0-9, _ and -)", flagValue, rename)
		}
		live = rename
		i := slices.Index(names, name)
		if i < 0 {
			return nil, fmt.Errorf("the schema has no bucket %q (it has %s); to read a bucket named otherwise, -bucket SCHEMA=LIVE", name, strings.Join(names, ", "))
		}
		chosen = s.Buckets[i : i+1]
	}
	var out []*target
	for _, b := range chosen {
		ib, err := interp.NewBucket(s.Package, b)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", b.Name, err)
		}
		out = append(out, &target{Bucket: ib, live: cmp.Or(live, b.Name)})
	}
	return out, nil
}

// validBucketName reports whether name is a NATS KV bucket name.
func validBucketName(name string) bool {
	return name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
}

// fail reports err for the subcommand and returns the exit code for it.
func (o *options) fail(code int, err error) int {
	fmt.Fprintf(o.env.Stderr, "kvwatchgen %s: %v\n", o.cmd, err)
	return code
}
