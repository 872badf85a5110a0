package web

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"capacitylab/lessons"
	"capacitylab/lti/ltitest"
)

// siteLinks is the text of the site header's links on a page.
func siteLinks(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, ul := range find(parse(t, body), func(n nodeT) bool { return n.Data == "ul" && must(attr(n, "class")) == "site-links" }) {
		for _, a := range find(ul, func(n nodeT) bool { return n.Data == "a" }) {
			out = append(out, text(a))
		}
	}
	return out
}

// TestLTIFrameMenu: inside a learning platform's frame (a request with an
// LTI launch's session) a learner's header links only what they can use
// there, the lessons, the runs and their progress, on every page, the
// lesson pages (built from kept plans) included; an instructor launched
// there also gets Teach (they may start a class without the key), never
// Join; outside a platform the header links all five. The same lesson
// served in turn to each keeps each one's header.
func TestLTIFrameMenu(t *testing.T) {
	site := newClassLTISite(t, "the-key")
	learner, teacher, outside := site.client(), site.client(), site.client()
	site.launch(learner, ltitest.Launch{User: "s-menu"})
	site.launch(teacher, ltitest.Launch{User: "t-menu", Roles: []string{ltitest.RoleInstructor}})
	want := map[*http.Client][]string{
		learner: {"Lessons", "Runs", "Your service", "Your progress"},
		teacher: {"Lessons", "Runs", "Your service", "Teach", "Your progress"},
		outside: {"Lessons", "Runs", "Your service", "Teach", "Join", "Your progress"},
	}
	names := map[*http.Client]string{learner: "a learner in the frame", teacher: "an instructor in the frame", outside: "a reader outside a platform"}
	for round := range 2 { // the second round is served from the kept plans
		for _, c := range []*http.Client{learner, outside, teacher} {
			for _, p := range []string{"/lessons/littles-law", "/lessons/cap-inside", "/", "/progress", "/runs"} {
				r := site.do(c, "GET", p, nil, nil)
				if r.StatusCode != 200 {
					t.Fatalf("%s: GET %s = %d", names[c], p, r.StatusCode)
				}
				if got := siteLinks(t, r.body); !slices.Equal(got, want[c]) {
					t.Errorf("round %d, %s, %s: the header links %q, want %q", round, names[c], p, got, want[c])
				}
			}
		}
	}
}

// TestLTIPickerNamesBlocksInWords: the deep linking picker names each
// part of a lesson in words, never by its block's id: "Predict: " and the
// prompt, "The widget: " and the widget's title, "The lab: " and its
// preset, told apart from the lesson's other labs; a Predict chosen goes
// to the platform as a link to the lesson at the question, titled in the
// same words.
func TestLTIPickerNamesBlocksInWords(t *testing.T) {
	s := newLTISite(t, nil)
	c := s.client()
	res, body := s.launch(c, ltitest.Launch{User: "teacher", DeepLink: true, Multiple: true, Roles: []string{ltitest.RoleInstructor}})
	if res.StatusCode != 200 {
		t.Fatalf("deep linking launch %d: %.300s", res.StatusCode, body)
	}
	doc := parse(t, body)
	labels := map[string]string{} // form value -> label in the picker
	for _, in := range find(doc, func(n nodeT) bool { return n.Data == "input" && must(attr(n, "name")) == "item" }) {
		label := in.Parent
		strong := find(label, func(n nodeT) bool { return n.Data == "strong" })
		if len(strong) != 1 {
			t.Fatalf("option %s has %d names", must(attr(in, "value")), len(strong))
		}
		labels[must(attr(in, "value"))] = text(strong[0])
	}
	prefix := map[string]string{"lesson": "The lesson", "predict": "Predict: ", "model": "The widget: ", "lab": "The lab: "}
	byLesson := map[string][]string{}
	for value, label := range labels {
		parts := strings.Split(value, ":")
		if !strings.HasPrefix(label, prefix[parts[0]]) {
			t.Errorf("%s is named %q, want it to start %q", value, label, prefix[parts[0]])
		}
		l, ok := s.course.Lesson(parts[1])
		if !ok {
			t.Fatalf("%s names no lesson", value)
		}
		for _, b := range l.Blocks() {
			if id := b.BlockID(); id != "" && regexp.MustCompile(`\b`+regexp.QuoteMeta(id)+`\b`).MatchString(label) {
				t.Errorf("%s is named %q, which holds the block id %s", value, label, id)
			}
		}
		byLesson[parts[1]] = append(byLesson[parts[1]], label)
	}
	// Every Predict, widget and lab of every listed lesson is offered.
	for _, l := range s.course.Listed() {
		for _, b := range l.Blocks() {
			kind := ""
			switch b := b.(type) {
			case *lessons.Question:
				if b.Type == "predict" {
					kind = "predict"
				}
			case *lessons.Model:
				kind = "model"
			case *lessons.Lab:
				kind = "lab"
			}
			if _, ok := labels[kind+":"+l.Slug+":"+b.BlockID()]; kind != "" && !ok {
				t.Errorf("the picker does not offer %s %s of %s", kind, b.BlockID(), l.Slug)
			}
		}
		names := slices.Sorted(slices.Values(byLesson[l.Slug]))
		if len(slices.Compact(slices.Clone(names))) != len(names) {
			t.Errorf("%s: two parts share a name: %q", l.Slug, names)
		}
	}
	for value, want := range map[string]string{
		"lab:littles-law:littles-sweep":           "The lab: 1 worker, 10–40/s",
		"model:littles-law:littles-model":         "The widget: Little's law",
		"lab:overload:overload-sweep":             "The lab: 1 worker, 60–100/s, callers give up after 2 s",
		"lab:cap-inside:cap-release-queue":        "The lab: 7 workers, 50/s, a client of 10 workers, WAIT_MS=200 at 10 s",
		"lab:cap-inside:cap-release-quota":        "The lab: 7 workers, quota 5, 50/s, a client of 10 workers, WAIT_MS=200 at 10 s",
		"lab:pause-both-loops:published-sim-open": "The lab: 1 worker, 60–90/s, simulated",
	} {
		if labels[value] != want {
			t.Errorf("%s is named %q, want %q", value, labels[value], want)
		}
	}
	if got := labels["predict:littles-law:littles-double"]; !strings.HasPrefix(got, "Predict: The sweep runs at 20 and later at 40 requests a second.") ||
		!strings.HasSuffix(got, "what happens to the number of requests in flight?") {
		t.Errorf("lesson 1's Predict is named %q", got)
	}

	r := s.do(c, "POST", "/lti/deep-link", url.Values{"request": {regexpField(body, "request")}, "item": {"predict:littles-law:littles-double", "lab:littles-law:littles-sweep"}}, nil)
	if r.StatusCode != 200 {
		t.Fatalf("choice answered %d: %.300s", r.StatusCode, r.body)
	}
	res2, err := c.PostForm(regexpAttr(r.body, `data-testid="lti-return"`, "action"), url.Values{"JWT": {regexpField(r.body, "JWT")}})
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	items := s.sim.DeepLinkItems()
	if len(items) != 1 || len(items[0]) != 2 {
		t.Fatalf("the platform got %v", items)
	}
	predict, lab := items[0][0], items[0][1]
	if predict["url"] != s.srv.URL+"/lessons/littles-law#littles-double" || !strings.HasPrefix(predict["title"].(string), "Predict: The sweep runs") ||
		!strings.HasSuffix(predict["title"].(string), "(How many requests are inside your service)") || predict["lineItem"] != nil {
		t.Errorf("the Predict's item %v", predict)
	}
	if lab["title"] != "Lab: 1 worker, 10–40/s (How many requests are inside your service)" {
		t.Errorf("the lab's item is titled %q", lab["title"])
	}
}
