package compat_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvwatchgen/kvwatchgen/internal/apidump"
	"github.com/kvwatchgen/kvwatchgen/internal/compat"
)

// This file checks compat's generated Go API class against the exported
// API of the two generated packages, read from their export data.

// loadAPIs returns the exported API of every generated package of the
// module at dir, by package name (pkg/<name>), each line without its
// "pkg PATH, " prefix so that two packages compare.
func loadAPIs(t *testing.T, dir string) map[string][]string {
	t.Helper()
	// The driver's build flags: go list -export then finds the packages
	// compiled in the build cache.
	t.Setenv("GOFLAGS", "-mod=mod -trimpath")
	t.Setenv("GOWORK", "off")
	start := time.Now()
	pkgs, err := apidump.Load(dir, "./pkg/...")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read the API of %d generated packages in %v", len(pkgs), time.Since(start).Round(time.Millisecond))
	apis := map[string][]string{}
	for _, p := range pkgs {
		name := p.Path[strings.LastIndex(p.Path, "/")+1:]
		prefix := "pkg " + p.Path + ", "
		for _, line := range p.Lines {
			apis[name] = append(apis[name], strings.TrimPrefix(line, prefix))
		}
	}
	return apis
}

// checkGoAPI checks that compat reports a change of the generated Go API
// that breaks code ("no longer compiles") exactly where the new package
// removes or changes a declaration of the old one, each such change
// naming a declaration removed or changed.
func checkGoAPI(t *testing.T, c *corpusCase, oldAPI, newAPI []string) {
	t.Helper()
	if oldAPI == nil || newAPI == nil {
		t.Errorf("no API read of a generated package (old %d lines, new %d)", len(oldAPI), len(newAPI))
		return
	}
	var breaks, added []string
	for _, ch := range apidump.Compare(oldAPI, newAPI) {
		if ch.Class.Breaking() {
			breaks = append(breaks, ch.String())
		} else {
			added = append(added, ch.String())
		}
	}
	var says []*compat.Change
	for _, ch := range c.changes {
		if ch.Class == compat.GoAPI && (ch.Verdict == compat.Breaking || ch.Verdict == compat.Accepted) && strings.Contains(ch.Message, "no longer compiles") {
			says = append(says, ch)
		}
	}
	var problems []string
	for _, ch := range says {
		if !slices.ContainsFunc(breaks, func(line string) bool { return namesIn(ch.Message, line) }) {
			problems = append(problems, fmt.Sprintf("compat says %s\n      and the new package removes or changes no declaration it names", ch))
		}
	}
	if len(says) == 0 && len(breaks) > 0 {
		problems = append(problems, "the new package removes or changes declarations of the old, and compat reports no change of the Go API that breaks code")
	}
	if len(problems) > 0 {
		t.Errorf("compat disagrees with the generated packages' exported API:\n  - %s\n  the API's changes:\n    %s",
			strings.Join(problems, "\n  - "), strings.Join(append(breaks, added...), "\n    "))
	}
}

// identifier matches an exported Go name, or two joined by a dot (a
// field or method: Route.Metric).
var identifier = regexp.MustCompile(`\b[A-Z][A-Za-z0-9_]*(\.[A-Z][A-Za-z0-9_]*)?\b`)

// namesIn reports whether an API line holds a name message names: every
// part of a dotted one, as words.
func namesIn(message, line string) bool {
	words := map[string]bool{}
	for _, w := range regexp.MustCompile(`[A-Za-z0-9_]+`).FindAllString(line, -1) {
		words[w] = true
	}
	for _, name := range identifier.FindAllString(message, -1) {
		all := true
		for part := range strings.SplitSeq(name, ".") {
			all = all && words[part]
		}
		if all {
			return true
		}
	}
	return false
}
