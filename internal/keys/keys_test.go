package keys

import (
	"slices"
	"strings"
	"testing"
)

func TestValidToken(t *testing.T) {
	for _, ok := range []string{"a", "A-b_c=d/e", "0"} {
		if err := ValidToken(ok); err != nil || !IsToken(ok) {
			t.Errorf("ValidToken(%q) = %v, IsToken %v", ok, err, IsToken(ok))
		}
	}
	for bad, reason := range map[string]string{
		"": "is empty", ".": "token separator", "a.b": "token separator", "*": "wildcard", ">": "wildcard",
		"a b": "whitespace", "\t": "whitespace", "é": "outside the key charset", "a,b": "outside the key charset",
	} {
		if err := ValidToken(bad); err == nil || !strings.Contains(err.Error(), reason) || IsToken(bad) {
			t.Errorf("ValidToken(%q) = %v (IsToken %v), want %q", bad, err, IsToken(bad), reason)
		}
	}
}

func TestParamNames(t *testing.T) {
	for s, want := range map[string]bool{"vpc": true, "route_id": true, "_x": true, "A1": true, "1a": false, "": false, "a-b": false, "é": false} {
		if got := IsParamName(s); got != want {
			t.Errorf("IsParamName(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestCanonicalDecimals(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "7": true, "-7": true, "007": false, "-0": false, "+1": false, "": false, "-": false,
		"9223372036854775807": true, "9223372036854775808": false, "-9223372036854775808": true, "1x": false,
	} {
		if _, err := ParseInt(s); (err == nil) != want {
			t.Errorf("ParseInt(%q) = %v, want ok=%v", s, err, want)
		}
	}
	for s, want := range map[string]bool{"-1": false, "0": true, "01": false, "18446744073709551615": true, "18446744073709551616": false} {
		if _, err := ParseUint(s); (err == nil) != want {
			t.Errorf("ParseUint(%q) = %v, want ok=%v", s, err, want)
		}
	}
}

func TestTemplates(t *testing.T) {
	got := SplitTemplate("vpc.{vpc}.route.{n:int}")
	want := []Token{{Literal: "vpc"}, {Param: "vpc"}, {Literal: "route"}, {Param: "n", Type: "int"}}
	if !slices.Equal(got, want) {
		t.Fatalf("SplitTemplate = %+v, want %+v", got, want)
	}
	if err := CheckTemplate(got); err != nil {
		t.Errorf("CheckTemplate = %v", err)
	}
	for raw, reason := range map[string]string{"vpc.{1x}": "parameter name", "a..b": "is empty", "a.*": "wildcard", "{:int}": "empty parameter name"} {
		if err := CheckTemplate(SplitTemplate(raw)); err == nil || !strings.Contains(err.Error(), reason) {
			t.Errorf("CheckTemplate(%q) = %v, want %q", raw, err, reason)
		}
	}
	template := SplitTemplate("vpc.{vpc}.route.{id}")
	for prefix, want := range map[string]bool{
		"vpc": true, "vpc.{vpc}": true, "vpc.{vpc}.route": true, "vpc.{vpc}.route.{id}": true,
		// Parameters compare by name, as the schema requires of a scope.
		"vpc.{tenant}": false, "vpc.x": false, "{vpc}": false, "vpc.{vpc}.route.{id}.more": false,
	} {
		if got := IsPrefix(SplitTemplate(prefix), template); got != want {
			t.Errorf("IsPrefix(%q) = %v, want %v", prefix, got, want)
		}
	}
}
