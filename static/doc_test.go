package static

import (
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocListsEveryFile checks that doc.go's layout lists every embedded
// file and nothing that is not embedded.
func TestDocListsEveryFile(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^//\t((?:css|js|img)/\S+)`).FindAllStringSubmatch(string(src), -1) {
		listed[m[1]] = true
	}
	embedded := map[string]bool{}
	err = fs.WalkDir(FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			embedded[path] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for f := range embedded {
		if strings.Contains(f, ".test.") {
			t.Errorf("%s is a test, embedded in the binary: only what pages load is", f)
		}
		if !listed[f] {
			t.Errorf("%s is embedded but not listed in doc.go", f)
		}
	}
	for f := range listed {
		if !embedded[f] {
			t.Errorf("doc.go lists %s, which is not embedded", f)
		}
	}
	if len(embedded) == 0 {
		t.Error("nothing is embedded")
	}
}
