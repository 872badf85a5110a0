//go:build browser

package main

import (
	"context"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"capacitylab/lessons"
)

// TestBrowserNoSpoilers crawls every lesson of the course as one learner
// in chromium: on the newcomer's page, and again after skipping each
// Predict in turn (through the page's Skip button), no number the text
// reads from the measurement settling a Predict not yet answered is
// visible. The marks say which numbers read which measurement; each is
// looked for in the page's visible text with the words around it on its
// line. Once every Predict is skipped, every such number written in
// the prose must be visible, which shows the crawler finds what it looks
// for.
func TestBrowserNoSpoilers(t *testing.T) {
	c, err := lessons.Load(lessons.Content())
	if err != nil {
		t.Fatal(err)
	}
	srv := start(t, nil, "--data", t.TempDir())
	ctx := newBrowserFor(t, 10*time.Minute)
	checked, unchecked := 0, 0
	for _, l := range c.Lessons {
		if l.Part == lessons.FixturePart {
			continue
		}
		var predicts []*lessons.Question
		for _, b := range l.Blocks() {
			if q, ok := b.(*lessons.Question); ok && q.Type == "predict" {
				predicts = append(predicts, q)
			}
		}
		snippets := map[int]string{} // by index in l.Marks
		for i, m := range l.Marks {
			if s, ok := markSnippet(t, m); ok {
				snippets[i] = s
			}
		}
		visible := func() string {
			doSteps(t, ctx, "open "+l.Slug,
				chromedp.Navigate(srv.url+"/lessons/"+l.Slug),
				chromedp.WaitVisible(chromedp.CSS(`article.lesson`)),
			)
			text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("article.lesson").innerText`))
			if err != nil {
				t.Fatalf("%s: %v", l.Slug, err)
			}
			return strings.Join(strings.Fields(text), " ")
		}
		for k := 0; k <= len(predicts); k++ {
			text := visible()
			for _, q := range predicts[k:] {
				for i, m := range l.Marks {
					if m.Block == q.ID || !c.Settles(m, q) {
						continue
					}
					s, ok := snippets[i]
					if !ok {
						if k == 0 {
							unchecked++
							t.Logf("%s:%d: %s has too few words around it on its line to look for", m.File, m.Line, m.Source())
						}
						continue
					}
					if k == 0 {
						checked++
					}
					if strings.Contains(text, s) {
						t.Errorf("%s:%d: %q is visible before the Predict %s is answered (%d Predicts skipped)", m.File, m.Line, s, q.ID, k)
					}
				}
			}
			if k == len(predicts) {
				break
			}
			q := predicts[k]
			doSteps(t, ctx, "skip "+q.ID,
				chromedp.Click(chromedp.CSS(`[data-testid="predict-`+q.ID+`"] [data-testid="predict-skip"]`)),
				chromedp.WaitVisible(chromedp.CSS(`[data-testid="predict-`+q.ID+`"] [data-testid="predict-locked"]`)),
			)
		}
		// Everything skipped: the prose shows each number it writes.
		text := visible()
		for i, m := range l.Marks {
			s, ok := snippets[i]
			if !ok || m.Block != "" {
				continue
			}
			settles := false
			for _, q := range predicts {
				settles = settles || c.Settles(m, q)
			}
			if settles && !strings.Contains(text, s) {
				t.Errorf("%s:%d: %q is not visible with every Predict skipped: the crawler cannot see what it checks", m.File, m.Line, s)
			}
		}
	}
	t.Logf("looked for %d numbers that settle a Predict; %d had too few words around them", checked, unchecked)
	if checked == 0 || unchecked*10 > checked {
		t.Errorf("looked for %d numbers and could not look for %d: want at most one in ten unchecked", checked, unchecked)
	}
}

var (
	reSnippetMark = regexp.MustCompile(`\[([^\[\]\n]+)\]\{[=?][^{}\n]*\}`)
	reLink        = regexp.MustCompile(`\[([^\[\]\n]+)\]\([^()\n]*\)`)
	reLineStart   = regexp.MustCompile(`^\s*(?:[-*+]|\d+\.|>)\s+`)
)

// markSnippet is the text a page shows for mark m with up to 40
// characters of the words around it in its paragraph: the paragraph's
// lines joined, list and quote markers, emphasis and code marks taken
// out, every other mark replaced by its text and Markdown links by
// theirs, and cut at what a page does not render as written. It reports
// false when fewer than 8 characters of words are next to the number.
func markSnippet(t *testing.T, m lessons.Mark) (string, bool) {
	t.Helper()
	src, err := fs.ReadFile(lessons.Content(), m.File)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	i := m.Line - 1
	at := strings.Index(lines[i], m.Raw)
	if at < 0 {
		t.Fatalf("%s:%d: mark %s not on its line", m.File, m.Line, m.Raw)
	}
	ends := func(ln string) bool {
		ln = strings.TrimSpace(ln)
		return ln == "" || strings.HasPrefix(ln, "```") || strings.HasPrefix(ln, "#")
	}
	first, last := i, i
	for first > 0 && !ends(lines[first-1]) {
		first--
	}
	for last+1 < len(lines) && !ends(lines[last+1]) {
		last++
	}
	var para []string
	for k := first; k <= last; k++ {
		ln := lines[k]
		if k == i {
			ln = ln[:at] + "\x01" + m.Text + "\x02" + ln[at+len(m.Raw):]
		}
		para = append(para, reLineStart.ReplaceAllString(ln, ""))
	}
	text := reSnippetMark.ReplaceAllString(strings.Join(para, " "), "$1")
	text = reLink.ReplaceAllString(text, "$1")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	before, rest, _ := strings.Cut(text, "\x01")
	_, after, _ := strings.Cut(rest, "\x02")
	const cut = "\\|#[]"
	if k := strings.LastIndexAny(before, cut); k >= 0 {
		before = before[k+1:]
	}
	if k := strings.IndexAny(after, cut); k >= 0 {
		after = after[:k]
	}
	space := regexp.MustCompile(`\s+`)
	rb := []rune(strings.TrimLeft(space.ReplaceAllString(before, " "), " "))
	ra := []rune(strings.TrimRight(space.ReplaceAllString(after, " "), " "))
	rb, ra = rb[max(0, len(rb)-40):], ra[:min(len(ra), 40)]
	if len(strings.TrimSpace(string(rb)))+len(strings.TrimSpace(string(ra))) < 8 {
		return "", false
	}
	return strings.TrimSpace(string(rb) + m.Text + string(ra)), true
}

// TestBrowserClassGates runs a class on cap-inside: a participant's phone
// shows no recorded table and no number that settles the first Predict
// before the host shows its answer, then shows the first measurement
// (without a reload) and still not the second's; the presenter view
// shows no table at all.
func TestBrowserClassGates(t *testing.T) {
	c, err := lessons.Load(lessons.Content())
	if err != nil {
		t.Fatal(err)
	}
	l, _ := c.Lesson("cap-inside")
	first, _, _ := c.Question("cap-predict-release")
	var snippets []string
	for _, m := range l.Marks {
		if m.Block == "" && c.Settles(m, first) {
			if s, ok := markSnippet(t, m); ok {
				snippets = append(snippets, s)
			}
		}
	}
	if len(snippets) == 0 {
		t.Fatal("no numbers in cap-inside's prose read the first Predict's measurement: nothing to look for")
	}
	srv := start(t, nil, "--data", t.TempDir())
	host := newBrowser(t)
	phone := newBrowser(t)
	if _, err := chromedp.Run(phone, chromedp.EmulateViewport(375, 800)); err != nil {
		t.Fatal(err)
	}
	poll := func(js string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout))
	}
	connected := poll(`document.querySelector('[data-testid="class-status"]').textContent.startsWith("Connected")`)
	doSteps(t, host, "host starts a class", startClass(srv.url, "cap-inside"), connected)
	code := textOf(t, host, `[data-testid="class-code"]`)
	doSteps(t, phone, "participant joins",
		chromedp.Navigate(srv.url+"/join"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="join-code"]`), code),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="join-name"]`), "Ada"),
		clickToPage(`[data-testid="join-submit"]`),
		connected,
	)
	visible := func(ctx context.Context) string {
		text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("article").innerText`))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(text), " ")
	}
	text := visible(phone)
	for _, s := range snippets {
		if strings.Contains(text, s) {
			t.Errorf("before the answer, the participant sees %q", s)
		}
	}
	if n, err := chromedp.Run(phone, chromedp.Evaluate[int](`document.querySelectorAll("figure.table").length`)); err != nil || n != 0 {
		t.Errorf("before the answer, the participant's page has %d recorded tables (%v)", n, err)
	}
	screenshot(t, phone, "class-participant-gated-375")

	projector := newTab(t, host)
	if _, err := chromedp.Run(projector, chromedp.EmulateViewport(1920, 1080)); err != nil {
		t.Fatal(err)
	}
	projURL, err := chromedp.Run(host, chromedp.Evaluate[string](`document.querySelector('[data-testid="projector-link"]').href`))
	if err != nil {
		t.Fatal(err)
	}
	doSteps(t, projector, "presenter view", chromedp.Navigate(projURL), connected)

	doSteps(t, host, "host opens, closes, shows the spread and the answer",
		clickStable(`[data-testid="open-cap-predict-release"]`),
		poll(`document.querySelector('[data-testid="q-status-cap-predict-release"]').textContent.includes("open")`),
		clickStable(`[data-testid="close-cap-predict-release"]`),
		poll(`document.querySelector('[data-testid="q-status-cap-predict-release"]').textContent.includes("closed")`),
		clickStable(`[data-testid="reveal-cap-predict-release"]`),
		poll(`document.querySelector('[data-testid="q-status-cap-predict-release"]').textContent.includes("revealed")`),
		clickStable(`[data-testid="answer-cap-predict-release"]`),
	)
	doSteps(t, phone, "the first measurement arrives",
		poll(`!!document.getElementById("cap-release-queue-result")`),
	)
	text = visible(phone)
	seen := 0
	for _, s := range snippets {
		if strings.Contains(text, s) {
			seen++
		}
	}
	if seen == 0 {
		t.Errorf("after the answer, none of the %d numbers reading the first measurement is visible", len(snippets))
	}
	if n, err := chromedp.Run(phone, chromedp.Evaluate[int](`document.querySelectorAll("#cap-release-quota-result, #cap-w64-quota-result").length`)); err != nil || n != 0 {
		t.Errorf("after the first answer, the later Predicts' tables are on the page (%d, %v)", n, err)
	}
	screenshot(t, phone, "class-participant-opened-375")
	if n, err := chromedp.Run(projector, chromedp.Evaluate[int](`document.querySelectorAll("figure.table").length`)); err != nil || n != 0 {
		t.Errorf("the presenter view has %d recorded tables (%v)", n, err)
	}
}
