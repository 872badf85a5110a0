package web

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"capacitylab/static"
)

// TestStripSource checks what stripping keeps and leaves out, case by case.
func TestStripSource(t *testing.T) {
	for _, c := range []struct {
		name string
		js   bool
		in   string
		want string
	}{
		// Comments go; the line breaks they held stay.
		{"line comment", true, "// a note\nx = 1; // why\n", "\nx = 1;\n"},
		{"block comment over lines", true, "/**\n * doc\n */\nfunction f() {}\n", "\n\n\nfunction f() {}\n"},
		// A comment between tokens on a line leaves a space, never joins them.
		{"inline block comment", true, "a/* x */b", "a b"},
		// Indentation goes, outside templates.
		{"indentation", true, "if (x) {\n\t\ty();\n  }\n", "if (x) {\ny();\n}\n"},
		// Strings keep what looks like comments.
		{"strings", true, `s = "// not" + '/* nor */';`, `s = "// not" + '/* nor */';`},
		// A template keeps its text, blanks and all, and its substitutions
		// are code (whose braces nest).
		{"template", true, "t = `a // b\n\t  c ${ {k: 1}.k /* c */ } d`;", "t = `a // b\n\t  c ${ {k: 1}.k  } d`;"},
		{"nested template", true, "t = `a ${`b ${c}`} // d`; // e", "t = `a ${`b ${c}`} // d`;"},
		// A regular expression may hold // and quotes; a division is not one.
		{"regex", true, "r = s.replace(/\\/\\/'[/]/g, \"\"); // x", "r = s.replace(/\\/\\/'[/]/g, \"\");"},
		{"division", true, "h = (a + b) / 2; // half\nw = x / y / z;", "h = (a + b) / 2;\nw = x / y / z;"},
		{"regex after return", true, "return /a'b/.test(s);", "return /a'b/.test(s);"},
		// CSS: block comments only; // is not a comment there.
		{"css", false, "/* head */\n.a {\n\tcolor: red; /* why */\n\tbackground: url(//x/y);\n\tcontent: \"/* no */\";\n}\n", "\n.a {\ncolor: red;\nbackground: url(//x/y);\ncontent: \"/* no */\";\n}\n"},
	} {
		if got := string(stripSource([]byte(c.in), c.js)); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestStrippedAssets checks every stylesheet and script as served: each
// keeps its line count, and each script still parses (node --check, when
// node is installed: .ci/run has it).
func TestStrippedAssets(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Log("SKIPPING the parse check of the stripped scripts: node is not installed")
	}
	dir := t.TempDir()
	err = fs.WalkDir(static.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ext := path.Ext(p)
		if ext != ".css" && ext != ".js" {
			return nil
		}
		src, err := fs.ReadFile(static.FS(), p)
		if err != nil {
			return err
		}
		got := stripAsset(ext, src)
		if a, b := bytes.Count(src, []byte("\n")), bytes.Count(got, []byte("\n")); a != b {
			t.Errorf("%s: %d lines, %d served", p, a, b)
		}
		t.Logf("%s: %d bytes, %d served", p, len(src), len(got))
		if ext == ".js" && node != "" {
			f := filepath.Join(dir, strings.ReplaceAll(p, "/", "_")+".mjs")
			if err := os.WriteFile(f, got, 0o644); err != nil {
				return err
			}
			if out, err := exec.Command(node, "--check", f).CombinedOutput(); err != nil {
				t.Errorf("%s as served does not parse: %v\n%s", p, err, out)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
