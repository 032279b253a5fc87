// Package compat compares two versions of a kvwatchgen schema and says
// which changes are safe for a fleet that runs both at once: old watchers
// read what new writers write, new watchers read what old writers wrote
// and what the bucket still holds, old and new code compile against their
// own packages, and CreateOrUpdate applies the new bucket configuration.
// Its rules are what the generated decoders and key parsers do
// (encoding/json semantics into the declared Go types; canonical decimal
// key parameters), not guesses; the end-to-end test of kvwatchgen's
// compat corpus runs both generated packages against a real server to
// prove it. The package is pure: two loaded schemas in, changes out.
package compat

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/kvwatchgen/kvwatchgen/schema"
)

// Class is who a change can break.
type Class string

// The classes.
const (
	// OldReaders: old watchers (and old clients' reads) during a rollout,
	// reading what new writers write.
	OldReaders Class = "old readers of new writes"
	// NewReaders: new watchers reading what old writers still write and
	// what the bucket holds (until overwritten, or for its ttl).
	NewReaders Class = "new readers of old data"
	// GoAPI: code that compiles against the old generated package and not
	// the new one (buf's FILE category).
	GoAPI Class = "generated Go API"
	// BucketConfig: what CreateOrUpdate would refuse or lose, or what
	// writers of the old configuration would now be refused.
	BucketConfig Class = "bucket config"
	// Schema: the schema's own bookkeeping (revision, accepted changes).
	Schema Class = "schema"
)

// Verdict says what a change does to a fleet running both versions.
type Verdict string

// The verdicts. Only Breaking fails the check.
const (
	// Breaking: some reader, writer or build fails or gets other values.
	Breaking Verdict = "breaking"
	// Accepted: breaking, and accepted on purpose in the new schema
	// (compat: accept:), with its reason.
	Accepted Verdict = "accepted"
	// Notice: nothing is lost, but the change shows: old watchers skip
	// the keys of a new kind (each reported once, every write counted),
	// a setting limits writes, a bookkeeping slip.
	Notice Verdict = "notice"
	// Safe: both versions read and write it with no error and no other
	// value.
	Safe Verdict = "safe"
)

// Change is one difference between the two schemas, for one class.
type Change struct {
	// File and Pos locate it: in the new schema, or in the old one for
	// what was removed.
	File string
	Pos  schema.Pos
	// Rule and Subject name it, together its ID: "field-type Route.metric".
	// A schema accepts a breaking change by its ID.
	Rule, Subject string
	Class         Class
	Verdict       Verdict
	Message       string
	// Reason is the accepted change's reason, "" otherwise.
	Reason string
}

// ID is how a schema accepts the change: its rule and its subject.
func (c *Change) ID() string { return c.Rule + " " + c.Subject }

// String writes the change as kvwatchgen prints it:
// "FILE:LINE:COL: VERDICT (CLASS): MESSAGE [ID]".
func (c *Change) String() string {
	s := fmt.Sprintf("%s:%d:%d: %s (%s): %s [%s]", c.File, c.Pos.Line, c.Pos.Col, c.Verdict, c.Class, c.Message, c.ID())
	if c.Reason != "" {
		s += ": " + c.Reason
	}
	return s
}

// Compare returns the changes from old (read from oldFile) to new (from
// newFile): breaking changes accepted in new's compat: accept: marked
// Accepted, sorted with new's positions first, then old's, each by
// position, then by class; changes at one place stay in the order found
// (config settings in the order of config:). Equal schemas give none.
func Compare(oldFile string, old *schema.Schema, newFile string, new *schema.Schema) []*Change {
	c := &comparison{oldFile: oldFile, newFile: newFile, old: old, new: new, seen: map[string]bool{}, walked: map[[2]*schema.Type]bool{}}
	c.buckets()
	c.types()
	c.revision()
	c.accept()
	slices.SortStableFunc(c.changes, func(a, b *Change) int {
		return cmp.Or(
			cmp.Compare(fileRank(a, newFile), fileRank(b, newFile)),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col),
			cmp.Compare(classRank(a.Class), classRank(b.Class)),
		)
	})
	return c.changes
}

// classRank orders the classes of one change as the docs list them.
func classRank(c Class) int {
	return slices.Index([]Class{OldReaders, NewReaders, GoAPI, BucketConfig, Schema}, c)
}

func fileRank(c *Change, newFile string) int {
	if c.File == newFile {
		return 0
	}
	return 1
}

// Fails reports whether any of changes is breaking (and not accepted):
// the check fails.
func Fails(changes []*Change) bool {
	return slices.ContainsFunc(changes, func(c *Change) bool { return c.Verdict == Breaking })
}

// comparison collects the changes between two schemas.
type comparison struct {
	oldFile, newFile string
	old, new         *schema.Schema
	changes          []*Change
	seen             map[string]bool          // class + ID: a type shared by kinds is reported once
	walked           map[[2]*schema.Type]bool // struct pairs compared (structs)
}

// at is a location in one of the two schemas.
type at struct {
	file string
	pos  schema.Pos
}

func (c *comparison) inNew(p schema.Pos) at { return at{c.newFile, p} }
func (c *comparison) inOld(p schema.Pos) at { return at{c.oldFile, p} }

// add records a change once per class and ID.
func (c *comparison) add(where at, class Class, verdict Verdict, rule, subject, format string, args ...any) {
	key := string(class) + "\x00" + rule + " " + subject
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	c.changes = append(c.changes, &Change{
		File: where.file, Pos: where.pos, Rule: rule, Subject: subject,
		Class: class, Verdict: verdict, Message: fmt.Sprintf(format, args...),
	})
}

// revision notes a schema that changed without raising its revision:
// buckets and watchers then cannot tell the two apart by it.
func (c *comparison) revision() {
	if len(c.changes) == 0 {
		return
	}
	switch {
	case c.new.Revision == 0:
		c.add(c.inNew(schema.Pos{Line: 1, Col: 1}), Schema, Notice, "revision", "schema",
			"the schema changed and declares no revision: add revision: %d, so that buckets and watchers can tell which schema is newer", c.old.Revision+1)
	case c.new.Revision <= c.old.Revision:
		c.add(c.inNew(schema.Pos{Line: 1, Col: 1}), Schema, Notice, "revision", "schema",
			"the schema changed and its revision is %d, was %d: raise it, so that buckets and watchers can tell which schema is newer", c.new.Revision, c.old.Revision)
	}
}

// accept marks the breaking changes the new schema accepts, and notes an
// accepted change that matches none (only one new in this schema: an
// entry kept from an earlier change matches nothing, as it should).
func (c *comparison) accept() {
	used := map[*schema.Accept]bool{}
	for _, ch := range c.changes {
		if ch.Verdict != Breaking {
			continue
		}
		for _, a := range c.new.Accepts {
			if a.Change == ch.ID() {
				ch.Verdict, ch.Reason = Accepted, a.Reason
				used[a] = true
			}
		}
	}
	var ids []string
	for _, ch := range c.changes {
		if ch.Verdict == Breaking {
			ids = append(ids, ch.ID())
		}
	}
	for _, a := range c.new.Accepts {
		if used[a] || slices.ContainsFunc(c.old.Accepts, func(o *schema.Accept) bool { return o.Change == a.Change }) {
			continue
		}
		hint := ""
		if best := schema.Closest(a.Change, ids); best != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", best)
		}
		c.add(c.inNew(a.Pos), Schema, Notice, "accept", strings.ReplaceAll(a.Change, " ", ":"),
			"accepted change %q matches no breaking change%s", a.Change, hint)
	}
}
