package compat_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/internal/compat"
	"github.com/kvwatchgen/kvwatchgen/runtime/kvclient"
	"github.com/kvwatchgen/kvwatchgen/schema"
)

// checkConfig checks compat's bucket config changes against the new
// CreateOrUpdate on the old bucket, and old clients and watchers on the
// new one.
func checkConfig(t *testing.T, c *corpusCase, nb *schema.Bucket, br *bucketReport) {
	t.Helper()
	var changes []*compat.Change
	for _, ch := range c.changes {
		if ch.Class == compat.BucketConfig && strings.HasPrefix(ch.Subject, br.Bucket+".") {
			changes = append(changes, ch)
		}
	}
	u, l := br.Update, br.Limits
	if u == nil || l == nil {
		if len(changes) > 0 {
			t.Errorf("compat reports %d config changes of bucket %s, and the driver ran no config probe", len(changes), br.Bucket)
		}
		return
	}
	var problems []string
	if u.Err != "" && !u.Refused {
		problems = append(problems, "the new CreateOrUpdate failed, and not with a *kvclient.BucketConfigError: "+u.Err)
	}
	if l.Err != "" {
		problems = append(problems, "the limit probes failed: "+l.Err)
	}
	refuses := false
	var settings []string
	for _, ch := range changes {
		setting := strings.TrimPrefix(ch.Subject, br.Bucket+".")
		settings = append(settings, setting)
		effs := effectsOf(ch)
		if ch.Verdict == compat.Safe {
			if refused(u, setting) != "" {
				problems = append(problems, fmt.Sprintf("compat says %s\n      and CreateOrUpdate refuses it: %s", ch, refused(u, setting)))
			}
			continue
		}
		if len(effs) == 0 {
			problems = append(problems, fmt.Sprintf("compat says %s, and the effects table knows no effect of it", ch))
		}
		for _, e := range effs {
			if e == effRefusedUnlessAllowed || e == effRefusedAlways {
				refuses = true
			}
			if !configShows(e, setting, nb, u, l) {
				problems = append(problems, fmt.Sprintf("compat says %s\n      so this must show: %s; it does not", ch, e))
			}
		}
	}
	if u.Err != "" && !refuses {
		problems = append(problems, "the new CreateOrUpdate is refused, and compat reports no change it refuses: "+u.Err)
	}
	if u.Refused {
		// A refusal lists every setting that differs: compat's settings.
		var listed []string
		for _, bc := range u.Changes {
			// The schema's record (revision, fingerprint) is no
			// setting of config: and changes with every schema.
			if !strings.HasPrefix(bc.Setting, "schema_") {
				listed = append(listed, bc.Setting)
			}
		}
		slices.Sort(listed)
		slices.Sort(settings)
		if !slices.Equal(listed, settings) {
			problems = append(problems, fmt.Sprintf("CreateOrUpdate lists the settings %q as changed, compat %q", listed, settings))
		}
	}
	if len(problems) > 0 {
		t.Errorf("bucket %s: compat's config verdicts disagree with CreateOrUpdate and the server:\n  - %s\n  what happened:\n    CreateOrUpdate: %s\n    limits: %+v",
			br.Bucket, strings.Join(problems, "\n  - "), showUpdate(u), *l)
	}
}

// refused is why u refused setting, "" where it did not.
func refused(u *updateReport, setting string) string {
	if u == nil || !u.Refused {
		return ""
	}
	for _, bc := range u.Changes {
		if bc.Setting == setting {
			return bc.Refused
		}
	}
	return ""
}

func listed(u *updateReport, setting string) bool {
	return u.Refused && slices.ContainsFunc(u.Changes, func(bc kvclient.BucketChange) bool { return bc.Setting == setting })
}

func showUpdate(u *updateReport) string {
	if u.Err == "" {
		return "applied"
	}
	s := u.Err
	if u.AllowDataLoss != nil {
		s += "; with AllowDataLoss: " + showUpdate(u.AllowDataLoss)
	}
	return s
}

// configShows reports whether a config effect shows.
func configShows(e effect, setting string, nb *schema.Bucket, u *updateReport, l *limitsReport) bool {
	switch e {
	case effRefusedUnlessAllowed:
		return refused(u, setting) != "" && u.AllowDataLoss != nil && refused(u.AllowDataLoss, setting) == ""
	case effRefusedAlways:
		return refused(u, setting) != "" && u.AllowDataLoss != nil && refused(u.AllowDataLoss, setting) != ""
	case effValueTooLarge:
		return l.Oversized > 0 && l.OversizedErr != ""
	case effBatchDisabled:
		return l.BatchDisabled
	case effFull:
		return l.FillProbed && l.FillErr != "" && !strings.HasPrefix(l.FillErr, "no kind")
	case effConsumerLimit:
		return l.ConsumersProbed && nb.Config != nil && l.ConsumerLimit && l.Watchers <= nb.Config.MaxConsumers
	case effListed:
		return u.Err == "" || listed(u, setting)
	}
	return false
}
