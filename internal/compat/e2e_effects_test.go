package compat_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/internal/compat"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// This file says what each change compat reports must do to a reader,
// and checks that it does.

// effect is what a change does that the driver can observe.
type effect int

const (
	// effDataError: the watcher reports a *kvwatch.DataError for a written
	// entry of a kind the change affects (and skips it).
	effDataError effect = iota
	// effUnknownKey: Stats().UnknownKeys counts entries, and an entry of
	// an affected kind is in no cache and has no DataError.
	effUnknownKey
	// effValueDiffers: the watcher holds an entry of an affected kind
	// with another value than was written (in the changed field, for a
	// field's change).
	effValueDiffers
	// effZeroField: the watcher holds an entry of an affected kind whose
	// changed field is its zero value.
	effZeroField
	// effOtherKind: an entry of an affected kind is held in the cache of
	// a kind with other keys, or is skipped with an error.
	effOtherKind
	// effBreaks: effDataError or effValueDiffers.
	effBreaks
	// effRefusedUnlessAllowed: the new CreateOrUpdate on the old bucket
	// returns a *kvclient.BucketConfigError refusing the setting, and with
	// kvclient.AllowDataLoss() does not refuse it.
	effRefusedUnlessAllowed
	// effRefusedAlways: refused, with kvclient.AllowDataLoss() too.
	effRefusedAlways
	// effValueTooLarge: an old client's put of a 64 KiB value into the
	// new bucket fails.
	effValueTooLarge
	// effBatchDisabled: an old client's batch into the new bucket fails
	// with kvclient.ErrBatchDisabled.
	effBatchDisabled
	// effFull: an old client's puts into the new bucket fail before twice
	// its max_bytes are written.
	effFull
	// effConsumerLimit: old watchers on the new bucket fail with
	// kvwatch.ErrConsumerLimit before more than max_consumers start.
	effConsumerLimit
	// effListed: CreateOrUpdate applies the setting, or lists it among the
	// changes it refused to apply.
	effListed
)

func (e effect) String() string {
	return [...]string{
		"a DataError for a written entry", "UnknownKeys counted for a written entry no cache holds",
		"the watcher holds another value than was written", "the watcher holds the field as its zero value",
		"an entry held as a kind with other keys, or skipped with an error", "a DataError or another value",
		"CreateOrUpdate refuses the setting, and applies it with AllowDataLoss", "CreateOrUpdate refuses the setting, with AllowDataLoss too",
		"an old client's put of a 64 KiB value fails", "an old client's batch fails with ErrBatchDisabled",
		"old clients' puts fail once the bucket holds max_bytes", "old watchers fail with ErrConsumerLimit beyond max_consumers",
		"CreateOrUpdate applies or lists the setting",
	}[e]
}

// effects maps each rule, by what its message says, to the effect that
// must show. A change of a reader or config class that is not safe and
// matches no row fails the test: every rule's effect is checked.
var effects = []struct {
	rule, says string
	effect     effect
}{
	{"field-type", "(DataError)", effDataError},
	{"field-type", "decode rounded", effValueDiffers},
	{"field-type", "(DataError likely)", effBreaks},
	{"value-type", "(DataError)", effDataError},
	{"value-type", "decode rounded", effValueDiffers},
	{"value-type", "(DataError likely)", effBreaks},
	{"value-type", "cannot be shown to decode", effBreaks},
	{"field-removed", "as its zero value", effZeroField},
	{"codec", "(DataError)", effDataError},
	{"codec", "another value", effValueDiffers},
	{"key-template", "(UnknownKeyError)", effUnknownKey},
	{"key-template", "(DataError: a parameter does not parse)", effDataError},
	{"key-overlap", "decode", effOtherKind},
	{"kind-added", "(UnknownKeyError)", effUnknownKey},
	{"kind-removed", "(UnknownKeyError)", effUnknownKey},
	{"config", "CreateOrUpdate refuses it without kvclient.AllowDataLoss", effRefusedUnlessAllowed},
	{"config", "CreateOrUpdate always refuses it", effRefusedAlways},
	{"config", "the server refuses writes of larger values", effValueTooLarge},
	{"config", "old clients' batches fail", effBatchDisabled},
	{"config", "writes fail once the bucket holds that much", effFull},
	{"config", "watchers beyond it cannot start", effConsumerLimit},
	{"config", "no more limit markers", effListed},
}

// effectsOf are the effects a change must show.
func effectsOf(ch *compat.Change) []effect {
	var out []effect
	for _, e := range effects {
		if e.rule == ch.Rule && strings.Contains(ch.Message, e.says) {
			out = append(out, e.effect)
		}
	}
	return out
}

// side is one version of a bucket.
type side struct {
	schema *schema.Schema
	bucket *schema.Bucket
}

func (s side) kind(name string) *schema.Kind {
	for _, k := range s.bucket.Kinds {
		if k.GoName == name {
			return k
		}
	}
	return nil
}

// direction is one run: writers of one version, a watcher of the other.
type direction struct {
	name           string
	class          compat.Class
	writer, reader side
}

// expectation is one effect a change must show in a direction.
type expectation struct {
	change *compat.Change
	effect effect
	kinds  map[string]bool // the writer's kinds it affects
	field  string          // the field it changes, lower case ("" for none)
}

// affectedKinds are the writer's kinds whose entries a change of a
// reader class is about: the kinds named, or those whose values hold
// the type a field belongs to.
func affectedKinds(ch *compat.Change, w side) map[string]bool {
	kinds := map[string]bool{}
	switch ch.Rule {
	case "field-type", "field-removed", "field-added", "field-name-case":
		typ, _, _ := strings.Cut(ch.Subject, ".")
		for _, k := range w.bucket.Kinds {
			if reaches(k.Value, typ, map[*schema.Type]bool{}) {
				kinds[k.GoName] = true
			}
		}
	default:
		for name := range strings.SplitSeq(ch.Subject, "/") {
			kinds[name] = true
		}
	}
	return kinds
}

// reaches reports whether a value of type t holds a value of the struct
// type named typ.
func reaches(t *schema.TypeRef, typ string, seen map[*schema.Type]bool) bool {
	switch t.Kind {
	case schema.TypeSlice, schema.TypeMap:
		return reaches(t.Elem, typ, seen)
	case schema.TypeNamed:
		if t.Named.Name == typ {
			return true
		}
		if seen[t.Named] {
			return false
		}
		seen[t.Named] = true
		for _, f := range t.Named.Fields {
			if reaches(f.Type, typ, seen) {
				return true
			}
		}
	}
	return false
}

// changedField is the field a field-level change is about, lower case.
func changedField(ch *compat.Change) string {
	if ch.Rule != "field-type" && ch.Rule != "field-removed" {
		return ""
	}
	_, field, _ := strings.Cut(ch.Subject, ".")
	return strings.ToLower(field)
}

// sameKeys reports whether two templates match the same keys, as the
// same parameter types at the same places.
func sameKeys(a, b *schema.Template) bool {
	if len(a.Tokens) != len(b.Tokens) {
		return false
	}
	for i, t := range a.Tokens {
		u := b.Tokens[i]
		switch {
		case (t.Param == nil) != (u.Param == nil):
			return false
		case t.Param == nil && t.Literal != u.Literal:
			return false
		case t.Param != nil && t.Param.Type != u.Param.Type:
			return false
		}
	}
	return true
}

// sameKind reports whether the reader's kind named r is the writer's kind
// named w: the same name, or the same keys.
func (d direction) sameKind(w, r string) bool {
	wk, rk := d.writer.kind(w), d.reader.kind(r)
	return w == r || wk != nil && rk != nil && sameKeys(wk.Template, rk.Template)
}

func (d direction) codecs(w, r string) (schema.Codec, schema.Codec) {
	var wc, rc schema.Codec
	if k := d.writer.kind(w); k != nil {
		wc = k.Codec
	}
	if k := d.reader.kind(r); k != nil {
		rc = k.Codec
	}
	return wc, rc
}

// shows reports whether x's effect shows in run.
func (d direction) shows(x *expectation, run *runReport) bool {
	for _, w := range run.Written {
		if !x.kinds[w.Kind] || w.Err != "" {
			continue
		}
		kind, held, ok := run.cached(w.Key)
		dataError := len(run.reported(w.Key, "DataError")) > 0
		var differs bool
		if ok {
			wc, rc := d.codecs(w.Kind, kind)
			differs = slices.ContainsFunc(differences(w, wc, held, rc, nil), func(diff string) bool { return x.field == "" || atField(diff, x.field) })
		}
		var shown bool
		switch x.effect {
		case effDataError:
			shown = dataError
		case effUnknownKey:
			shown = run.UnknownKeys > 0 && !ok && !dataError
		case effValueDiffers:
			shown = ok && differs
		case effZeroField:
			shown = ok && zeroField(held.JSON, x.field)
		case effOtherKind:
			shown = ok && !d.sameKind(w.Kind, kind) || !ok && (dataError || run.UnknownKeys > 0)
		case effBreaks:
			shown = dataError || ok && differs
		}
		if shown {
			return true
		}
	}
	return false
}

// atField reports whether a difference (its path first: "$.hops[0].weight
// (…)") is at or below an object key equal to field ignoring case.
func atField(diff, field string) bool {
	path, _, _ := strings.Cut(diff, " ")
	for seg := range strings.SplitSeq(path, ".") {
		seg, _, _ = strings.Cut(seg, "[")
		if strings.EqualFold(seg, field) {
			return true
		}
	}
	return false
}

// checkReaders checks one direction against compat's changes of its
// class.
func checkReaders(t *testing.T, c *corpusCase, d direction, run *runReport) {
	t.Helper()
	if run.Err != "" {
		t.Errorf("%s: the run failed: %s", d.name, run.Err)
		return
	}
	var problems []string
	var expects []*expectation
	for _, ch := range c.changes {
		if ch.Class != d.class || ch.Verdict == compat.Safe {
			continue
		}
		if ch.Rule == "scope-prefix" {
			// What a watcher narrowed by the scope reads: this run's
			// watchers watch the whole bucket, which a prefix does not
			// change, so there is no effect here to check.
			continue
		}
		effs := effectsOf(ch)
		if len(effs) == 0 {
			problems = append(problems, fmt.Sprintf("compat says %s, and the effects table knows no effect of it", ch))
		}
		for _, e := range effs {
			expects = append(expects, &expectation{change: ch, effect: e, kinds: affectedKinds(ch, d.writer), field: changedField(ch)})
		}
	}
	for _, x := range expects {
		if !d.shows(x, run) {
			problems = append(problems, fmt.Sprintf("compat says %s\n      so this must show: %s; it does not", x.change, x.effect))
		}
	}
	allowDataErrors, allowUnknownKeys := false, false
	for _, x := range expects {
		switch x.effect {
		case effDataError, effBreaks:
			allowDataErrors = true
		case effUnknownKey:
			allowUnknownKeys = true
		case effOtherKind:
			allowDataErrors, allowUnknownKeys = true, true
		}
	}
	for _, w := range run.Written {
		if w.Err != "" {
			problems = append(problems, fmt.Sprintf("writing %s %s failed: %s", w.Kind, w.Key, w.Err))
			continue
		}
		// Entries no change is about must read back as written; those
		// only field changes are about, in every other field.
		ignore, fieldsOnly, affected := map[string]bool{}, true, false
		for _, x := range expects {
			if x.kinds[w.Kind] {
				affected = true
				fieldsOnly = fieldsOnly && x.field != ""
				ignore[x.field] = true
			}
		}
		kind, held, ok := run.cached(w.Key)
		switch {
		case affected && !fieldsOnly:
			continue
		case affected && !ok:
			continue // a field change may make it fail: its effect says
		case !ok:
			problems = append(problems, fmt.Sprintf("%s %s is in no cache, and compat reports nothing that keeps it out", w.Kind, w.Key))
			continue
		case !d.sameKind(w.Kind, kind):
			problems = append(problems, fmt.Sprintf("%s %s is held as %s, a kind with other keys, and compat reports no overlap", w.Kind, w.Key, kind))
		}
		for _, e := range run.reported(w.Key, "DataError") {
			problems = append(problems, fmt.Sprintf("%s %s: a DataError compat reports nothing for: %s", w.Kind, w.Key, e.Text))
		}
		wc, rc := d.codecs(w.Kind, kind)
		for _, diff := range differences(w, wc, held, rc, ignore) {
			problems = append(problems, fmt.Sprintf("%s %s: the watcher holds another value at %s, and compat reports no change that does that", w.Kind, w.Key, diff))
		}
	}
	if run.DataErrors > 0 && !allowDataErrors {
		problems = append(problems, fmt.Sprintf("Stats().DataErrors is %d, and compat reports no change that makes data errors", run.DataErrors))
	}
	if run.UnknownKeys > 0 && !allowUnknownKeys {
		problems = append(problems, fmt.Sprintf("Stats().UnknownKeys is %d, and compat reports no change that makes unknown keys", run.UnknownKeys))
	}
	for _, e := range run.Errors {
		if e.Type == "other" {
			problems = append(problems, "OnError received: "+e.Text)
		}
	}
	if len(problems) > 0 {
		t.Errorf("%s: compat disagrees with the generated code (class %q):\n  - %s\n  what happened:%s",
			d.name, d.class, strings.Join(problems, "\n  - "), run.sides())
	}
}
