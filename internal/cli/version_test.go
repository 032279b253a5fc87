package cli

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	main := func(version string, settings ...debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: version}, Settings: settings}
	}
	dep := func(m debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{
			Main: debug.Module{Path: "example.com/user", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "example.com/other", Version: "v1.0.0"}, &m},
		}
	}
	rev := debug.BuildSetting{Key: "vcs.revision", Value: "47c333ac4879dc62de5a1b0b7fc89288f67731c6"}
	dirty := debug.BuildSetting{Key: "vcs.modified", Value: "true"}
	clean := debug.BuildSetting{Key: "vcs.modified", Value: "false"}
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "(unknown)"},
		{"go run, no vcs", main("(devel)"), true, "(devel)"},
		{"empty version", main(""), true, "(devel)"},
		{"devel with a commit", main("(devel)", rev, clean), true, "(devel) (commit 47c333ac4879)"},
		{"devel with a modified tree", main("(devel)", rev, dirty), true, "(devel) (commit 47c333ac4879, modified)"},
		{"go build at a commit", main("v0.0.0-20261201234108-47c333ac4879", rev, clean), true, "v0.0.0-20261201234108-47c333ac4879"},
		{"go build at a tag, modified", main("v0.1.0+dirty", rev, dirty), true, "v0.1.0+dirty"},
		{"go install @v0.1.0", main("v0.1.0"), true, "v0.1.0"},
		{"go tool", dep(debug.Module{Path: modulePath, Version: "v0.2.0"}), true, "v0.2.0"},
		{"go tool, replaced by a folder", dep(debug.Module{Path: modulePath, Version: "v0.2.0",
			Replace: &debug.Module{Path: "../kvwatchgen", Version: ""}}), true, "v0.2.0 => ../kvwatchgen"},
		{"go tool, replaced by a fork", dep(debug.Module{Path: modulePath, Version: "v0.2.0",
			Replace: &debug.Module{Path: "example.com/fork", Version: "v0.2.1"}}), true, "v0.2.0 => example.com/fork v0.2.1"},
		{"not built with the module", dep(debug.Module{Path: "example.com/else", Version: "v1.0.0"}), true, "(unknown)"},
	} {
		if got := versionOf(c.info, c.ok); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
