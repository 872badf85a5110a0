package web

import (
	"testing"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// TestRegionNamesUnique checks every lesson page for two named sections
// (regions, which screen readers list as landmarks) with the same name:
// each predict, check, lab and record block is named, and numbered when a
// lesson has several of its kind ("Check 2 of 3"). The axe-core audit
// (cmd/server/browser_a11y_test.go) checks this in a browser too.
func TestRegionNamesUnique(t *testing.T) {
	s := newSite(t)
	for _, l := range s.course.Lessons {
		body := s.get(nil, lessonURL(l.Slug)).body
		seen := map[string]string{}
		named := 0
		for _, n := range find(parse(t, body), func(n *html.Node) bool { return n.DataAtom == atom.Section }) {
			name, ok := attr(n, "aria-label")
			if !ok || name == "" {
				continue
			}
			named++
			id, _ := attr(n, "id")
			if other, ok := seen[name]; ok {
				t.Errorf("%s: sections %s and %s are both named %q", l.Slug, other, id, name)
			}
			seen[name] = id
		}
		if named == 0 && len(l.Blocks()) > 0 {
			t.Errorf("%s: no named block sections", l.Slug)
		}
	}
}
