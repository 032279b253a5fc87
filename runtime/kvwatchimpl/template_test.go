package kvwatchimpl

import (
	"errors"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/runtime/kvwatch"
)

func TestTemplateSplit(t *testing.T) {
	tm := MustTemplate("vpc.{vpc}.route.{route_id:int}")
	var p [2]string
	if err := tm.Split("vpc.a.route.17", p[:]); err != nil || p != [2]string{"a", "17"} {
		t.Fatalf("Split = %v, %q", err, p)
	}
	for key, reason := range map[string]string{
		"vpc.a":               "has 2 tokens, want 4",
		"vpc.a.route.1.x":     "has more than 4 tokens",
		"vpc.a.rout.1":        `token 3 is "rout", want "route"`,
		"vpc..route.1":        "token 2 (parameter vpc) is empty",
		"vpc.*.route.1":       "token 2 (parameter vpc) contains the subject wildcard",
		"net.a.route.1":       `token 1 is "net", want "vpc"`,
		"vpc.a.route.1.":      "has more than 4 tokens",
		"":                    `token 1 is "", want "vpc"`,
		"vpc.a b.route.1":     "contains whitespace",
		"vpc.a.route.ünicode": "outside the key charset",
	} {
		err := tm.Split(key, p[:])
		var km *kvwatch.KeyMismatchError
		if !errors.As(err, &km) || !strings.Contains(err.Error(), reason) {
			t.Errorf("Split(%q) = %v, want a *KeyMismatchError saying %q", key, err, reason)
		}
		if tm.Match(key) {
			t.Errorf("Match(%q) = true", key)
		}
	}
}

func TestTemplateMatchDoesNotAllocate(t *testing.T) {
	tm := MustTemplate("vpc.{vpc}.route.{route_id}")
	allocs := testing.AllocsPerRun(100, func() {
		tm.Match("vpc.a.route.r1")
		tm.Match("vpc.a.policy.p1")
		tm.Match("vpc.a")
	})
	if allocs != 0 {
		t.Fatalf("Match allocates %v times per run", allocs)
	}
}

// A Kind's template is the one generated code compiled (Key), not a second
// compilation; a kind without one is an error, not a panic.
func TestKindKeyTemplate(t *testing.T) {
	compiled := MustTemplate("vpc.{vpc}")
	k := Kind[string, string]{Name: "VPC", Key: compiled}
	if got, err := k.KeyTemplate(); err != nil || got != compiled {
		t.Errorf("KeyTemplate with Key = %v, %v; want the Key itself", got, err)
	}
	if _, err := (&Kind[string, string]{Name: "VPC"}).KeyTemplate(); err == nil {
		t.Error("KeyTemplate of a kind with no template succeeded")
	}
}
