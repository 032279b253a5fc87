package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kvwatchgen/kvwatchgen/gen"
)

// TestVersionOfBuiltBinary builds the command as a user does and checks
// that -version prints the module version the go command recorded in the
// binary (go version -m): "(devel)" without version control information,
// a tag or pseudo-version from the commit with it.
func TestVersionOfBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	for _, vcs := range []string{"-buildvcs=false", "-buildvcs=auto"} {
		t.Run(vcs, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "kvwatchgen")
			if out, err := exec.Command("go", "build", vcs, "-o", bin, ".").CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			out, err := exec.Command(bin, "-version").Output()
			if err != nil {
				t.Fatal(err)
			}
			got := string(out)
			meta, err := exec.Command("go", "version", "-m", bin).Output()
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`(?m)^\tmod\t` + regexp.QuoteMeta(modulePath) + `\t(\S+)`).FindSubmatch(meta)
			if m == nil {
				t.Fatalf("go version -m records no module %s:\n%s", modulePath, meta)
			}
			version := string(m[1])
			if vcs == "-buildvcs=false" && version != "(devel)" {
				t.Errorf("recorded version %q without version control, want (devel)", version)
			}
			if version == "(devel)" {
				if rev := regexp.MustCompile(`(?m)^\tbuild\tvcs\.revision=(\w{12})`).FindSubmatch(meta); rev != nil {
					version += " (commit " + string(rev[1])
				}
			}
			suffix := fmt.Sprintf(" (generated code API %d)\n", gen.GenVersion)
			if !strings.HasPrefix(got, "kvwatchgen "+version) || !strings.HasSuffix(got, suffix) {
				t.Errorf("-version printed %q; the binary records version %s:\n%s", got, version, meta)
			}
		})
	}
}

// modulePath is the module the command belongs to.
const modulePath = "github.com/kvwatchgen/kvwatchgen"
