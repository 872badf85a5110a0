package lessons

import (
	"bytes"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzParse feeds arbitrary bytes to the loader as one lesson file. It must
// never panic; it must either return a course or an Errors whose every
// entry names the file and a line inside it; and a loaded lesson must have
// the fields validation promises.
func FuzzParse(f *testing.F) {
	entries, err := fs.ReadDir(Content(), ".")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		b, err := fs.ReadFile(Content(), e.Name())
		if err != nil {
			f.Fatal(err)
		}
		// builds_on would name a lesson missing from a one-file course.
		f.Add(bytes.Replace(b, []byte("builds_on: [littles-law]"), []byte("builds_on: []"), 1))
	}
	f.Add([]byte(head("a", 1) + goodBody("a")))
	f.Add([]byte(head("a", 1) + "> [!ASOF 2026-11-30]\n> x\n\n- item\n\n  ```lab id=x\n  workers: 1\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Load(fstest.MapFS{"f.md": {Data: data}})
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error is %T %v, want a non-empty Errors", err, err)
			}
			lines := bytes.Count(data, []byte("\n")) + 1
			for _, e := range errs {
				if e.File != "f.md" || e.Line < 0 || e.Line > lines || e.Msg == "" {
					t.Fatalf("bad problem %+v (file has %d lines)", e, lines)
				}
				if strings.Contains(e.Msg, "could not be read") {
					t.Fatalf("the YAML decoder panicked: %v", e)
				}
			}
			return
		}
		if len(c.Lessons) != 1 {
			t.Fatalf("loaded %d lessons from one file", len(c.Lessons))
		}
		l := c.Lessons[0]
		if !validName(l.Slug) || l.Title == "" || !validDate(l.AsOf) {
			t.Fatalf("loaded lesson has bad front matter: %+v", l)
		}
		for _, b := range l.Blocks() {
			if q, ok := b.(*Question); ok {
				if _, ok := q.Correct(); !ok || len(q.Options) < minOptions {
					t.Fatalf("loaded question %s without a correct option or with too few", q.ID)
				}
			}
		}
	})
}
