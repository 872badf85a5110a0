package web

import (
	"flag"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"capacitylab/lessons"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Asset hashes and times change for reasons unrelated to the page, so
// goldens hold placeholders for them.
var (
	reAssetHash = regexp.MustCompile(`(/static/[^"]+)\.[0-9a-f]{10}\.([a-z0-9]+)"`)
	reDatetime  = regexp.MustCompile(`<time datetime="[^"]+"( data-local)?>[^<]+</time>`)
)

func normaliseGolden(body string) string {
	body = reAssetHash.ReplaceAllString(body, `$1.HASH.$2"`)
	body = reDatetime.ReplaceAllString(body, `<time datetime="TIME"$1>TIME</time>`)
	// One tag per line keeps diffs readable; the page itself is one line.
	return strings.ReplaceAll(body, "><", ">\n<") + "\n"
}

// TestGoldenLesson compares the rendered sample lesson (every block kind)
// with testdata/*.golden.html. Run "go test ./web -run Golden -update" to
// accept a change, and read the diff before committing it.
func TestGoldenLesson(t *testing.T) {
	// Only the fixture and the lesson it builds on, so that adding lessons
	// to the course does not change the fixture's page (its prev/next).
	files := fstest.MapFS{}
	for _, name := range []string{"sample.md", "littles-law.md"} {
		b, err := fs.ReadFile(lessons.Content(), name)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = &fstest.MapFile{Data: b}
	}
	c, err := lessons.Load(files)
	if err != nil {
		t.Fatal(err)
	}
	s := newSiteAt(t, filepath.Join(t.TempDir(), "p.db"), func(d *Deps) {
		d.Course = func() (*lessons.Course, error) { return c, nil }
	})
	// Fixed learner ids: each learner sees the options in their own order.
	as := func(id string) *http.Client {
		c := s.client()
		u, _ := url.Parse(s.srv.URL)
		c.Jar.SetCookies(u, []*http.Cookie{{Name: LearnerCookie, Value: id}})
		return c
	}
	answered := as("a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0")
	s.post(answered, samplePredict, url.Values{"action": {"lock"}, "option": {"b"}})
	s.post(answered, samplePredict, url.Values{"action": {"open"}})
	s.post(answered, samplePredict, url.Values{"action": {"reveal"}})
	s.post(answered, sampleCheck, url.Values{"option": {"b"}})
	s.post(answered, sampleCheck, url.Values{"option": {"a"}})
	locked := as("b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1")
	s.post(locked, samplePredict, url.Values{"action": {"skip"}})
	tests := []struct {
		name   string
		golden string
		state  func() string
	}{
		// A newcomer sees every block with its form, the lab and its
		// table folded until the prediction is answered.
		{"fresh", "sample.golden.html", func() string { return s.get(nil, "/lessons/sample").body }},
		// A skipped prediction says what settles it and that Reveal waits
		// for a measurement; the lab offers Run, the table its button.
		{"skipped", "sample-skipped.golden.html", func() string { return s.get(locked, "/lessons/sample").body }},
		// A revealed prediction, its table opened with the prediction
		// beside it, and a check answered twice.
		{"answered", "sample-answered.golden.html", func() string { return s.get(answered, "/lessons/sample").body }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := normaliseGolden(tt.state())
			path := filepath.Join("testdata", tt.golden)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
				for i := 0; i < len(gl) || i < len(wl); i++ {
					var g, w string
					if i < len(gl) {
						g = gl[i]
					}
					if i < len(wl) {
						w = wl[i]
					}
					if g != w {
						t.Fatalf("%s differs from the rendered page at line %d:\n got: %s\nwant: %s\n(run with -update to accept)", path, i+1, g, w)
					}
				}
			}
		})
	}
}
