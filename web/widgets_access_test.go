package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// widgetRoots returns every model widget on a page.
func widgetRoots(t *testing.T, body string) []nodeT {
	t.Helper()
	return find(parse(t, body), func(n nodeT) bool { _, ok := attr(n, "data-widget-root"); return ok })
}

// TestWidgetControlsAccessible checks, on the server's HTML, what the issue
// asks of every widget for people who use a screen reader or the keyboard:
// each parameter is a native number input and a native range input, both
// labelled by the parameter's visible label; the read-back sentence, which
// carries the implied value, is a polite live region (and so is the goal's
// state); nothing takes itself out of the tab order or reorders it; the
// choice of implied quantity is a labelled radio group. widgets.js only
// changes text and values inside these elements, so what holds here holds
// as the controls move.
func TestWidgetControlsAccessible(t *testing.T) {
	s := newSite(t)
	tests := []struct {
		name string
		path string
		// key is the data-testid of the figure the sentence must announce.
		key string
	}{
		// The lesson's block: in flight implied, 11.04 read back.
		{"littles-law lesson block", littlesLesson, "implied-inflight"},
		// Standalone, arrivals implied: "sustain about 190".
		{"littles-law solving arrivals", "/widgets/littles-law?inflight=4&latency_ms=21&solve=arrivals&goal=arrivals:190:1", "implied-arrivals"},
		// The admission limit reads back the rounded limit, 73.
		{"admission-limit", "/widgets/admission-limit?workers=4&budget_ms=230&service_ms=12", "q-rounded_limit"},
		// The two ceilings read back the speedup cap, 10 times.
		{"two-ceilings", "/widgets/two-ceilings?workers=1&cpus=1&spin_ms=2&wait_ms=18", "q-speedup_cap"},
		// The queue curve reads back the p99, 461 ms.
		{"queue-curve", "/widgets/queue-curve?servers=1&service_ms=20&arrivals=40", "q-p99_response_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c *http.Client
			if slug, ok := strings.CutPrefix(tt.path, "/lessons/"); ok {
				c = s.readingOn(slug) // the widget is past the lesson's first Predict
			}
			res := s.get(c, tt.path)
			if res.StatusCode != 200 {
				t.Fatalf("status %d", res.StatusCode)
			}
			roots := widgetRoots(t, res.body)
			if len(roots) == 0 {
				t.Fatal("no widget on the page")
			}
			doc := parse(t, res.body)
			byID := map[string]nodeT{}
			for _, n := range find(doc, func(n nodeT) bool { _, ok := attr(n, "id"); return ok }) {
				byID[must(attr(n, "id"))] = n
			}
			labelFor := map[string]nodeT{}
			for _, n := range find(doc, func(n nodeT) bool { return n.Data == "label" }) {
				if f, ok := attr(n, "for"); ok {
					labelFor[f] = n
				}
			}
			for _, root := range roots {
				params := find(root, func(n nodeT) bool { _, ok := attr(n, "data-param"); return ok })
				if len(params) < 3 {
					t.Fatalf("%d parameters in the widget", len(params))
				}
				for _, p := range params {
					name := must(attr(p, "data-param"))
					inputs := find(p, func(n nodeT) bool { return n.Data == "input" })
					var num, rng nodeT
					for _, in := range inputs {
						switch must(attr(in, "type")) {
						case "number":
							num = in
						case "range":
							rng = in
						}
					}
					if num == nil || rng == nil {
						t.Errorf("%s: want a native number input and a native range input", name)
						continue
					}
					// The number input is labelled by <label for>.
					l := labelFor[must(attr(num, "id"))]
					if l == nil || strings.TrimSpace(text(l)) == "" {
						t.Errorf("%s: the number input has no label", name)
						continue
					}
					// The range input is labelled by the same visible label.
					ref := must(attr(rng, "aria-labelledby"))
					if byID[ref] != l {
						t.Errorf("%s: the range input is labelled by %q, want the label %q", name, ref, must(attr(l, "id")))
					}
					if r, ok := attr(rng, "role"); ok {
						t.Errorf("%s: the range input has role=%q; a native range is already a slider", name, r)
					}
				}
				// Nothing leaves or reorders the tab order. The only stops
				// the widget adds are its plot's: the points a keyboard
				// reaches to read their values, and its scrolling table of
				// numbers, each tabindex="0" (in document order).
				inPlot := map[nodeT]bool{}
				for _, p := range find(root, func(n nodeT) bool { _, ok := attr(n, "data-chart"); return ok }) {
					for _, n := range find(p, func(nodeT) bool { return true }) {
						inPlot[n] = true
					}
				}
				for _, n := range find(root, func(n nodeT) bool { _, ok := attr(n, "tabindex"); return ok }) {
					if v := must(attr(n, "tabindex")); v != "0" || !inPlot[n] {
						t.Errorf("<%s tabindex=%q> in the widget: leave focus order to the document", n.Data, v)
					}
				}
				// The sentence is the one polite live region with the figure.
				sentences := find(root, func(n nodeT) bool { _, ok := attr(n, "data-sentence"); return ok })
				if len(sentences) != 1 {
					t.Fatalf("want one read-back sentence, found %d", len(sentences))
				}
				if live := must(attr(sentences[0], "aria-live")); live != "polite" {
					t.Errorf("the sentence has aria-live=%q, want polite", live)
				}
				key := find(root, byTestID(tt.key))
				if len(key) != 1 || strings.TrimSpace(text(key[0])) == "" {
					t.Fatalf("no %s figure", tt.key)
				}
				if fig, sentence := strings.TrimSpace(text(key[0])), text(sentences[0]); !strings.Contains(sentence, fig) {
					t.Errorf("the live sentence %q does not announce %s = %s", sentence, tt.key, fig)
				}
				// The goal's state is announced politely too.
				if g := find(root, byTestID("widget-goal-state")); len(g) == 1 && must(attr(g[0], "aria-live")) != "polite" {
					t.Error("the goal state is not a polite live region")
				}
				// The implied-quantity choice is a labelled radio group.
				for _, r := range find(root, func(n nodeT) bool { return n.Data == "input" && must(attr(n, "type")) == "radio" }) {
					var inLabel, inFieldset bool
					for p := r.Parent; p != nil && p != root; p = p.Parent {
						inLabel = inLabel || p.Data == "label"
						inFieldset = inFieldset || (p.Data == "fieldset" && len(find(p, func(n nodeT) bool { return n.Data == "legend" })) == 1)
					}
					if !inLabel || !inFieldset {
						t.Errorf("radio %s: in a label %v, in a fieldset with a legend %v", must(attr(r, "value")), inLabel, inFieldset)
					}
				}
			}
		})
	}
}

// TestLessonWidgetCaveatsAndPreset: the Little's law lesson's model block
// shows its own assumptions and omissions (not the generic ones), and its
// "share this preset" link opens the standalone page with the same values,
// goal and caveats, where the goal can be reached and says what was found.
func TestLessonWidgetCaveatsAndPreset(t *testing.T) {
	s := newSite(t)
	page := s.get(s.readingOn("littles-law"), littlesLesson).body
	var block nodeT
	for _, r := range widgetRoots(t, page) {
		if must(attr(r, "id")) == littlesBlock {
			block = r
		}
	}
	if block == nil {
		t.Fatalf("no widget %s on %s", littlesBlock, littlesLesson)
	}
	items := func(root nodeT, testid string) []string {
		var out []string
		for _, ul := range find(root, byTestID(testid)) {
			for _, li := range find(ul, func(n nodeT) bool { return n.Data == "li" }) {
				out = append(out, strings.TrimSpace(text(li)))
			}
		}
		return out
	}
	assumes, ignores := items(block, "widget-assumes"), items(block, "widget-ignores")
	// The lesson lists two assumptions and three omissions of its own.
	if len(assumes) != 2 || !strings.HasPrefix(assumes[0], "The window is long enough") {
		t.Errorf("assumes = %q, want the lesson block's two", assumes)
	}
	if len(ignores) != 3 || !strings.HasPrefix(ignores[0], "How the time in system splits") {
		t.Errorf("ignores = %q, want the lesson block's three", ignores)
	}
	if h := find(block, byTestID("widget-hypothetical")); len(h) != 1 || !strings.Contains(text(h[0]), "not a forecast") {
		t.Error("the lesson block does not say it is a hypothetical model")
	}
	goalText := strings.TrimSpace(text(find(block, func(n nodeT) bool { return must(attr(n, "class")) == "w-goal-text" })[0]))

	// Follow the block's preset link.
	links := find(block, byTestID("widget-share"))
	if len(links) != 1 {
		t.Fatalf("%d share links", len(links))
	}
	share, err := url.Parse(must(attr(links[0], "href")))
	if err != nil || share.Path != "/widgets/littles-law" {
		t.Fatalf("share link %q (%v)", must(attr(links[0], "href")), err)
	}
	res := s.get(nil, share.String())
	if res.StatusCode != 200 {
		t.Fatalf("preset: status %d: %.300s", res.StatusCode, res.body)
	}
	roots := widgetRoots(t, res.body)
	if len(roots) != 1 {
		t.Fatalf("%d widgets on the preset page", len(roots))
	}
	alone := roots[0]
	if got := strings.TrimSpace(text(find(alone, byTestID("implied-inflight"))[0])); got != "11.04" {
		t.Errorf("preset in flight = %q, want the lesson's 11.04", got)
	}
	if got := strings.TrimSpace(text(find(alone, func(n nodeT) bool { return must(attr(n, "class")) == "w-goal-text" })[0])); got != goalText {
		t.Errorf("preset goal %q, want the lesson's %q", got, goalText)
	}
	if got := items(alone, "widget-assumes"); strings.Join(got, "|") != strings.Join(assumes, "|") {
		t.Errorf("preset assumes %q, want %q", got, assumes)
	}
	if got := items(alone, "widget-ignores"); strings.Join(got, "|") != strings.Join(ignores, "|") {
		t.Errorf("preset ignores %q, want %q", got, ignores)
	}
	// At the goal's values the preset page says it is reached and what the
	// lesson says was found.
	q := share.Query()
	q.Set("latency_ms", "100")
	body := s.get(nil, "/widgets/littles-law?"+q.Encode()).body
	if got := testIDText(t, body, "widget-goal-state"); got != "Goal reached." {
		t.Errorf("preset at 100 ms: %q", got)
	}
	if got := testIDText(t, body, "widget-goal-found"); !strings.Contains(got, "4.8 requests are inside") {
		t.Errorf("preset found = %q", got)
	}
}
