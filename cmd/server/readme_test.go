package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestREADMEServerTable keeps the README's table of the server's settings
// in step with its flags: every flag, its variable and its default.
func TestREADMEServerTable(t *testing.T) {
	for _, d := range newServerFlags().set.CheckTable(readme(t), "### `server` (`go run ./cmd/server`)", nil) {
		t.Error(d)
	}
}

// TestREADMEListsEveryPackage checks that the README's table of what is in
// the repository has a row for every directory of Go code (a package added
// later gets its row with it).
func TestREADMEListsEveryPackage(t *testing.T) {
	text := readme(t)
	_, table, _ := strings.Cut(text, "## What is in here")
	table, _, _ = strings.Cut(table, "\n## ")
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(table, -1) {
		listed[m[1]] = true
	}
	dirs, err := filepath.Glob("../../*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	cmds, _ := filepath.Glob("../../cmd/*/*.go")
	for _, f := range append(dirs, cmds...) {
		dir := filepath.ToSlash(strings.TrimPrefix(filepath.Dir(f), "../../"))
		if strings.HasSuffix(f, "_test.go") || listed[dir] {
			continue
		}
		t.Errorf("README's table of what is in here has no row for %s", dir)
		listed[dir] = true
	}
}
