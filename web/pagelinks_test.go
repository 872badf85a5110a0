package web

import (
	"regexp"
	"strings"
	"testing"

	"capacitylab/lessons"
)

// TestLessonPagesLinkAssetsOnce checks every lesson page's stylesheets and
// scripts: each linked once, by its content-hashed URL, and the widget and
// run assets only on pages whose blocks need them.
func TestLessonPagesLinkAssetsOnce(t *testing.T) {
	s := newSite(t)
	hashed := regexp.MustCompile(`^/static/[a-z]+/[a-z0-9-]+\.[0-9a-f]{10}\.(css|js|svg)$`)
	for _, l := range s.course.Lessons {
		t.Run(l.Slug, func(t *testing.T) {
			body := s.get(nil, "/lessons/"+l.Slug).body
			doc := parse(t, body)
			count := map[string]int{} // asset name without hash → links
			for _, n := range find(doc, func(n nodeT) bool { return n.Data == "link" || n.Data == "script" }) {
				u, ok := attr(n, "href")
				if n.Data == "script" {
					u, ok = attr(n, "src")
				}
				if !ok {
					continue
				}
				if !hashed.MatchString(u) {
					t.Errorf("%s links %q, not a content-hashed asset URL", n.Data, u)
				}
				name := u[:strings.LastIndex(u[:strings.LastIndex(u, ".")], ".")]
				count[name]++
			}
			var hasModel, hasLab bool
			for _, b := range l.Blocks() {
				switch b.(type) {
				case *lessons.Model:
					hasModel = true
				case *lessons.Lab:
					hasLab = true
				}
			}
			want := map[string]int{
				"/static/css/app":     1,
				"/static/js/lesson":   1,
				"/static/img/icon":    1,
				"/static/css/widgets": b2i(hasModel),
				"/static/js/widgets":  b2i(hasModel),
				"/static/js/runs":     b2i(hasLab),
			}
			for name, n := range want {
				if count[name] != n {
					t.Errorf("%s linked %d times, want %d", name, count[name], n)
				}
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
