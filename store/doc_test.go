package store

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocListsEveryTable checks that doc.go describes every table the
// migrations create, as "name(columns...)".
func TestDocListsEveryTable(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	create := regexp.MustCompile(`(?i)CREATE TABLE (?:IF NOT EXISTS )?(\w+)`)
	files, err := fs.Glob(os.DirFS("migrations"), "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	n := 0
	for _, f := range files {
		sql, err := os.ReadFile("migrations/" + f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range create.FindAllStringSubmatch(string(sql), -1) {
			n++
			if m[1] == "schema_version" {
				continue // described in the opening paragraph
			}
			if !strings.Contains(string(doc), "//\t"+m[1]+"(") {
				t.Errorf("%s creates table %s, which doc.go does not describe", f, m[1])
			}
		}
	}
	if n == 0 {
		t.Error("no CREATE TABLE found in the migrations")
	}
}
