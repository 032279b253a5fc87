package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/internal/compat"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// gitPrefix marks -compat's OLD as the schema at a git revision: git:main,
// git:v1.4.0, git:HEAD~1 (buf's --against '.git#branch=main').
const gitPrefix = "git:"

// runCompat compares the schema at oldArg (a file, or git:REV for the
// -schema file at revision REV) with the one at newPath, prints every
// change on stdout and a summary on stderr, and returns ExitError when a
// change breaks, ExitOK when none does, ExitUsage when OLD cannot be read.
func runCompat(oldArg, newPath string, stdout, stderr io.Writer) int {
	oldName, oldSrc, err := readOld(oldArg, newPath)
	if err != nil {
		fmt.Fprintf(stderr, "kvwatchgen: -compat: %v\n", err)
		return ExitUsage
	}
	newSrc, err := os.ReadFile(newPath)
	if err != nil {
		fmt.Fprintf(stderr, "kvwatchgen: %v\n", err)
		return ExitUsage
	}
	old, oldErr := schema.Load(oldName, oldSrc)
	new, newErr := schema.Load(newPath, newSrc)
	if oldErr != nil || newErr != nil {
		for _, err := range []error{newErr, oldErr} {
			if err != nil {
				fmt.Fprintln(stderr, err)
			}
		}
		fmt.Fprintln(stderr, "kvwatchgen: -compat compares valid schemas only: fix the errors above")
		return ExitError
	}
	changes := compat.Compare(oldName, old, newPath, new)
	counts := map[compat.Verdict]int{}
	for _, c := range changes {
		fmt.Fprintln(stdout, c)
		counts[c.Verdict]++
	}
	if len(changes) == 0 {
		fmt.Fprintf(stderr, "kvwatchgen: no change from %s to %s\n", oldName, newPath)
		return ExitOK
	}
	summary := fmt.Sprintf("%d breaking, %d accepted, %s, %d safe", counts[compat.Breaking], counts[compat.Accepted],
		plural(counts[compat.Notice], "notice", "notices"), counts[compat.Safe])
	if compat.Fails(changes) {
		fmt.Fprintf(stderr, "kvwatchgen: %s is not safe to roll out over %s (%s): see docs/evolution.md; accept a break on purpose under compat: accept: in the schema\n", newPath, oldName, summary)
		return ExitError
	}
	safe := "safe"
	if n := counts[compat.Accepted]; n > 0 {
		safe += " with " + plural(n, "accepted breaking change", "accepted breaking changes")
	}
	fmt.Fprintf(stderr, "kvwatchgen: %s is %s to roll out over %s (%s)\n", newPath, safe, oldName, summary)
	return ExitOK
}

// readOld reads -compat's OLD: the file at arg, or for git:REV the file
// at newPath as git has it at REV. It returns the name errors and
// changes carry: the path, or newPath@REV.
func readOld(arg, newPath string) (name string, src []byte, err error) {
	rev, ok := strings.CutPrefix(arg, gitPrefix)
	if !ok {
		src, err = os.ReadFile(arg)
		return arg, src, err
	}
	if rev == "" {
		return "", nil, errors.New("git: needs a revision, such as git:main or git:HEAD~1")
	}
	dir, base := filepath.Split(newPath)
	if dir == "" {
		dir = "."
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command("git", "-C", dir, "show", rev+":./"+base)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", nil, fmt.Errorf("git show %s:./%s in %s: %w: %s", rev, base, dir, err, strings.TrimSpace(errOut.String()))
	}
	return newPath + "@" + rev, out.Bytes(), nil
}

// plural is n and the noun: one when n is 1, many otherwise.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
