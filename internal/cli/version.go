package cli

import "runtime/debug"

// modulePath is the module kvwatchgen is built from.
const modulePath = "github.com/kvwatchgen/kvwatchgen"

// moduleVersion returns the version of the kvwatchgen module this binary
// was built from, as -version prints it.
func moduleVersion() string {
	info, ok := debug.ReadBuildInfo()
	return versionOf(info, ok)
}

// versionOf returns the version of the kvwatchgen module that info
// describes:
//
//   - built inside the module (go build, go run, go install ./...): the
//     version the go command stamped, a tag or a pseudo-version from the
//     commit (v0.0.0-20260102150405-0123456789ab, +dirty with uncommitted
//     changes), or "(devel)" when it had no version control information
//     (-buildvcs=false, a git worktree, a source archive); then the
//     commit, when the build recorded one;
//   - as a dependency (go tool kvwatchgen, go run ...@v0.1.0): the
//     version the user's go.mod requires, and what replaces it if a
//     replace directive does;
//   - "(unknown)" without build information.
func versionOf(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "(unknown)"
	}
	if info.Main.Path == modulePath {
		v := info.Main.Version
		if v == "" {
			v = "(devel)"
		}
		if v == "(devel)" {
			v += vcsSuffix(info.Settings)
		}
		return v
	}
	for _, dep := range info.Deps {
		if dep.Path != modulePath {
			continue
		}
		v := dep.Version
		if r := dep.Replace; r != nil {
			v += " => " + r.Path
			if r.Version != "" {
				v += " " + r.Version
			}
		}
		return v
	}
	return "(unknown)"
}

// vcsSuffix describes the commit a build recorded (vcs.revision,
// vcs.modified): " (commit 0123456789ab, modified)", or "".
func vcsSuffix(settings []debug.BuildSetting) string {
	var rev string
	modified := false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	s := " (commit " + rev
	if modified {
		s += ", modified"
	}
	return s + ")"
}
