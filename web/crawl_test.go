package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestCrawlEveryInternalLink follows every internal link, stylesheet and
// script from the index and from the sample fixture lesson (which the
// index does not list), as a newcomer and as a learner who has answered
// things (so the locked, revealed and answered views are crawled too), and
// fails on any 404 or 5xx or on a #fragment that is not on its page.
func TestCrawlEveryInternalLink(t *testing.T) {
	s := newSite(t)
	answered := s.client()
	s.post(answered, samplePredict, url.Values{"action": {"lock"}, "option": {"b"}})
	s.post(answered, samplePredict, url.Values{"action": {"reveal"}})
	s.post(answered, sampleCheck, url.Values{"option": {"b"}})
	learners := []struct {
		name   string
		client *http.Client
	}{
		// Someone who has never answered anything.
		{"newcomer", s.client()},
		// Someone with a revealed prediction and a wrong check answer.
		{"answered", answered},
	}
	for _, l := range learners {
		t.Run(l.name, func(t *testing.T) {
			seen := map[string]bool{}
			ids := map[string]map[string]bool{} // page -> ids on it
			type link struct{ from, to string }
			var fragments []link
			queue := []link{{"(start)", "/"}, {"(start)", "/lessons/sample"}}
			for len(queue) > 0 {
				cur := queue[0]
				queue = queue[1:]
				u, err := url.Parse(cur.to)
				if err != nil {
					t.Errorf("%s links to unparsable %q", cur.from, cur.to)
					continue
				}
				if u.Fragment != "" {
					fragments = append(fragments, link{cur.from, cur.to})
				}
				page := u.Path
				if u.RawQuery != "" {
					page += "?" + u.RawQuery
				}
				if seen[page] {
					continue
				}
				seen[page] = true
				res := s.get(l.client, page)
				if res.StatusCode >= 300 && res.StatusCode < 400 {
					queue = append(queue, link{page, res.Header.Get("Location")})
					continue
				}
				if res.StatusCode != 200 {
					t.Errorf("%s links to %s: status %d", cur.from, page, res.StatusCode)
					continue
				}
				if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
					continue
				}
				doc := parse(t, res.body)
				ids[u.Path] = map[string]bool{}
				for _, n := range find(doc, func(n nodeT) bool { return true }) {
					if id, ok := attr(n, "id"); ok {
						ids[u.Path][id] = true
					}
					for _, key := range []string{"href", "src", "action"} {
						v, ok := attr(n, key)
						if !ok || key == "action" {
							continue // forms are posted by the action tests
						}
						switch {
						case strings.HasPrefix(v, "#"):
							// A fragment is of this very page, query and all.
							queue = append(queue, link{page, page + v})
						case strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//"):
							queue = append(queue, link{page, v})
						case strings.Contains(v, "://"):
							t.Errorf("%s has an external link %q: pages link only inside the site", page, v)
						}
					}
				}
			}
			for _, f := range fragments {
				u, _ := url.Parse(f.to)
				if on, ok := ids[u.Path]; ok && !on[u.Fragment] {
					t.Errorf("%s links to %s, but %s has no id %q", f.from, f.to, u.Path, u.Fragment)
				}
			}
			for _, les := range s.course.Lessons {
				if !seen["/lessons/"+les.Slug] {
					t.Errorf("the crawl never reached /lessons/%s", les.Slug)
				}
			}
			if len(seen) < len(s.course.Lessons)+3 {
				t.Errorf("crawled only %d URLs: %v", len(seen), seen)
			}
			t.Logf("crawled %d URLs and %d fragment links", len(seen), len(fragments))
		})
	}
}
