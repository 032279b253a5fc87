package compat_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/internal/compat"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatchimpl"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// A schema compared with itself has no change, and Compare is
// deterministic; FuzzCompare checks both on any pair of valid schemas,
// seeded with the corpus.
func FuzzCompare(f *testing.F) {
	pairs, err := filepath.Glob("../../golden/compat/*/old.yaml")
	if err != nil || len(pairs) == 0 {
		f.Fatalf("no corpus: %v", err)
	}
	for _, old := range pairs {
		a, errA := os.ReadFile(old)
		b, errB := os.ReadFile(filepath.Join(filepath.Dir(old), "new.yaml"))
		if errA != nil || errB != nil {
			f.Fatal(errA, errB)
		}
		f.Add(a, b)
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		old, err := schema.Load("old.yaml", a)
		if err != nil {
			return
		}
		new, err := schema.Load("new.yaml", b)
		if err != nil {
			return
		}
		if same := compat.Compare("old.yaml", old, "old.yaml", old); len(same) != 0 {
			t.Fatalf("a schema compared with itself has changes: %v", same[0])
		}
		first, second := compat.Compare("old.yaml", old, "new.yaml", new), compat.Compare("old.yaml", old, "new.yaml", new)
		if !slices.EqualFunc(first, second, func(x, y *compat.Change) bool { return *x == *y }) {
			t.Fatal("Compare is not deterministic")
		}
		for _, c := range first {
			if c.File != "old.yaml" && c.File != "new.yaml" || c.Pos.Line < 1 || c.Message == "" || strings.Contains(c.Subject, " ") {
				t.Fatalf("malformed change %+v", c)
			}
		}
	})
}

// The config check fills in the defaults CreateOrUpdate writes.
func TestDefaultMaxConsumersAgreesWithTheRuntime(t *testing.T) {
	load := func(cfg string) *schema.Schema {
		s, err := schema.Load("f.yaml", []byte("version: 1\npackage: p\nbuckets:\n  - bucket: b\n"+cfg+"    keys: [{name: K, key: k, value: string}]\n"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	old := load("")
	declared := load("    config: {max_consumers: " + strconv.Itoa(kvwatchimpl.DefaultMaxConsumers) + "}\n")
	if changes := compat.Compare("a", old, "b", declared); len(changes) != 0 {
		t.Errorf("declaring the runtime's default max_consumers is a change: %v", changes[0])
	}
}

// compareFiles compares two schema files.
func compareFiles(t *testing.T, oldPath, newPath string) []*compat.Change {
	t.Helper()
	old, err := schema.LoadFile(oldPath)
	if err != nil {
		t.Fatal(err)
	}
	new, err := schema.LoadFile(newPath)
	if err != nil {
		t.Fatal(err)
	}
	return compat.Compare(oldPath, old, newPath, new)
}

// A changed scope prefix breaks what watchers narrowed by the scope read,
// not the Go API: the code compiles as it did.
func TestScopePrefixIsClassedByWhatItBreaks(t *testing.T) {
	changes := compareFiles(t, "../../golden/compat/scope_prefix/old.yaml", "../../golden/compat/scope_prefix/new.yaml")
	found := false
	for _, c := range changes {
		if c.Rule != "scope-prefix" {
			continue
		}
		found = true
		if c.Class != compat.NewReaders || !strings.Contains(c.Message, "compiles unchanged") {
			t.Errorf("%s: want class %q, saying the code compiles", c, compat.NewReaders)
		}
	}
	if !found {
		t.Fatal("no scope-prefix change")
	}
}

// A changed key template's unreadable keys are reported only by the
// watchers they reach: the whole bucket's, and those of scopes holding
// them; a watcher of a scope that held the old keys only sees nothing.
func TestKeyTemplateSaysWhichWatchersReport(t *testing.T) {
	changes := compareFiles(t, "../../golden/compat/key_template_scoped/old.yaml", "../../golden/compat/key_template_scoped/new.yaml")
	want := map[compat.Class][]string{
		compat.OldReaders: {"old watchers of the whole bucket or of scope VPC do not read keys new writers write",
			"old watchers narrowed by scope Routes do not see them at all, and report nothing"},
		compat.NewReaders: {"new watchers of the whole bucket or of scope VPC do not read keys old writers wrote",
			"new watchers narrowed by scope Routes do not see them at all, and report nothing"},
	}
	for _, c := range changes {
		if c.Rule != "key-template" {
			continue
		}
		for _, w := range want[c.Class] {
			if !strings.Contains(c.Message, w) {
				t.Errorf("%s\ndoes not say %q", c, w)
			}
		}
		delete(want, c.Class)
	}
	if len(want) > 0 {
		t.Errorf("no key-template change of %v", want)
	}
}
