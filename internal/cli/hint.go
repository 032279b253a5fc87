package cli

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// regenerateHint returns the command that brings dir up to date with
// schemaPath, as -check suggests it. When a Go file in dir or in the
// schema's folder has a go:generate line that runs kvwatchgen on this
// schema, that is how the package is regenerated: "go generate ./pkg",
// and that line's command ("go tool kvwatchgen", "go run
// example.com/.../cmd/kvwatchgen") with the paths of this run. Without
// one, it is go tool (the README's setup: kvwatchgen as a tool of the
// module), or kvwatchgen where it is installed. -out is written only when
// dir is not the schema's folder, its default.
func regenerateHint(dir, schemaPath string) string {
	args := " -schema " + shellQuote(schemaPath)
	if filepath.Clean(dir) != filepath.Clean(filepath.Dir(schemaPath)) {
		args += " -out " + shellQuote(dir)
	}
	pkg, command, ok := findGenerateLine(dir, schemaPath)
	if !ok {
		return "go tool kvwatchgen" + args + " (or, installed: kvwatchgen" + args + ")"
	}
	hint := "go generate " + shellQuote(packagePattern(pkg))
	if command != "" {
		hint += " (or: " + command + args + ")"
	}
	return hint
}

// packagePattern writes a folder as the go command takes it as a package:
// a relative path starts with "./" or "../".
func packagePattern(dir string) string {
	dir = filepath.Clean(dir)
	if filepath.IsAbs(dir) || dir == "." || dir == ".." || strings.HasPrefix(dir, ".."+string(filepath.Separator)) {
		return dir
	}
	return "." + string(filepath.Separator) + dir
}

// findGenerateLine looks for a go:generate line that runs kvwatchgen on
// schemaPath into dir (its -schema and -out, resolved in the line's
// folder as go generate runs it, with kvwatchgen's defaults) in the Go
// files of dir and then of the schema's folder. It returns the folder of the file holding it
// and the line's command up to the word naming kvwatchgen; the command is
// "" when it holds a relative path, which would mean something else run
// from here.
func findGenerateLine(dir, schemaPath string) (pkg, command string, ok bool) {
	want, err := filepath.Abs(schemaPath)
	if err != nil {
		return "", "", false
	}
	wantOut, err := filepath.Abs(dir)
	if err != nil {
		return "", "", false
	}
	folders := []string{dir}
	if d := filepath.Dir(schemaPath); filepath.Clean(d) != filepath.Clean(dir) {
		folders = append(folders, d)
	}
	for _, folder := range folders {
		names, _ := filepath.Glob(filepath.Join(folder, "*.go"))
		slices.Sort(names)
		for _, name := range names {
			for _, words := range generateLines(name) {
				i := slices.IndexFunc(words, namesKvwatchgen)
				if i < 0 {
					continue
				}
				schema := flagValue(words[i+1:], "schema", "kvwatch.yaml")
				out := flagValue(words[i+1:], "out", filepath.Dir(schema))
				if !sameFile(schema, folder, want) || !sameFile(out, folder, wantOut) {
					continue
				}
				command := strings.Join(words[:i+1], " ")
				if slices.ContainsFunc(words[:i+1], func(w string) bool { return strings.HasPrefix(w, ".") }) {
					command = ""
				}
				return folder, command, true
			}
		}
	}
	return "", "", false
}

// generateLines returns the words of the go:generate lines of a Go file.
func generateLines(path string) [][]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "//go:generate "); ok {
			if words := splitWords(rest); len(words) > 0 {
				out = append(out, words)
			}
		}
	}
	return out
}

// splitWords splits a go:generate line into words as go generate does:
// at spaces and tabs, a double-quoted Go string being one word.
func splitWords(line string) []string {
	var words []string
	for {
		line = strings.TrimLeft(line, " \t\r")
		if line == "" {
			return words
		}
		if line[0] == '"' {
			if q, err := strconv.QuotedPrefix(line); err == nil {
				w, _ := strconv.Unquote(q)
				words = append(words, w)
				line = line[len(q):]
				continue
			}
		}
		end := strings.IndexAny(line, " \t\r")
		if end < 0 {
			end = len(line)
		}
		words = append(words, line[:end])
		line = line[end:]
	}
}

// namesKvwatchgen reports whether a go:generate word is the kvwatchgen
// command: "kvwatchgen", or a path or package path ending in it, with or
// without a version ("...cmd/kvwatchgen@v1.2.0").
func namesKvwatchgen(word string) bool {
	word, _, _ = strings.Cut(word, "@")
	word = strings.TrimSuffix(word, ".exe")
	return word == "kvwatchgen" || strings.HasSuffix(word, "/kvwatchgen") || strings.HasSuffix(word, `\kvwatchgen`)
}

// flagValue returns the value of flag name in kvwatchgen's arguments
// ("-name v", "--name v", "-name=v"), or def.
func flagValue(args []string, name, def string) string {
	for i, a := range args {
		a = "-" + strings.TrimLeft(a, "-")
		if a == "-"+name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v
		}
	}
	return def
}

// sameFile reports whether path, resolved in folder, is want (absolute).
func sameFile(path, folder, want string) bool {
	if !filepath.IsAbs(path) {
		path = filepath.Join(folder, path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	if abs == want {
		return true
	}
	a, errA := os.Stat(abs)
	b, errB := os.Stat(want)
	return errA == nil && errB == nil && os.SameFile(a, b)
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters that need no quoting (and, on Windows, its separator).
func shellQuote(s string) string {
	safe := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,%"
	if filepath.Separator == '\\' {
		safe += `\`
	}
	if s != "" && strings.Trim(s, safe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
