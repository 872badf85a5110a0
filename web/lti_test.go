package web

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"capacitylab/classroom"
	"capacitylab/labsvc"
	"capacitylab/lti"
	"capacitylab/lti/ltitest"
	"capacitylab/runner"
	"capacitylab/store"
)

// ltiSite is a real server with an LTI tool, beside a platform simulator
// that has it registered.
type ltiSite struct {
	*testSite
	sim  *ltitest.Platform
	tool *lti.Tool
}

func newLTISite(t *testing.T, tweak func(*Deps)) *ltiSite {
	t.Helper()
	return newLTISiteWith(t, nil, tweak)
}

// newLTISiteWith is newLTISite with the tool's Config changed by toolTweak.
func newLTISiteWith(t *testing.T, toolTweak func(*lti.Config), tweak func(*Deps)) *ltiSite {
	t.Helper()
	sim := ltitest.Start(t)
	var tool *lti.Tool
	site := newSiteAt(t, filepath.Join(t.TempDir(), "lti.db"), func(d *Deps) {
		cfg := lti.Config{Store: d.Store, Platforms: []lti.Platform{sim.Registration()}, Score: LessonScores(d.Course, d.Store),
			Logger: d.Logger, KeyRefetch: time.Millisecond, RetryBase: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond}
		if toolTweak != nil {
			toolTweak(&cfg)
		}
		var err error
		tool, err = lti.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		d.LTI = tool
		if tweak != nil {
			tweak(d)
		}
	})
	t.Cleanup(tool.Close) // before the store closes (cleanups run last-in first-out)
	sim.ToolJWKS = site.srv.URL + "/lti/jwks.json"
	sim.ToolLaunch = site.srv.URL + "/lti/launch"
	return &ltiSite{testSite: site, sim: sim, tool: tool}
}

func (s *ltiSite) login() string { return s.srv.URL + "/lti/login" }

// launch runs a launch with c and returns the tool's answer and its body.
func (s *ltiSite) launch(c *http.Client, l ltitest.Launch) (*http.Response, string) {
	s.t.Helper()
	switch {
	case l.Target == "" && l.DeepLink:
		l.Target = s.srv.URL + "/lti/launch"
	case l.Target == "":
		l.Target = s.srv.URL + "/lessons/littles-law"
	}
	res := s.sim.Do(c, s.login(), l)
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func cookieNamed(res *http.Response, name string) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// TestLTILaunchProgressScore: a learner launched into a graded lesson is
// the platform's user; their progress posts their score; another device
// (a new browser) launched as the same user is the same learner.
func TestLTILaunchProgressScore(t *testing.T) {
	s := newLTISite(t, nil)
	c := s.client()
	res, body := s.launch(c, ltitest.Launch{User: "stu-1", Name: "Grace Hopper", Graded: true})
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/lessons/littles-law" {
		t.Fatalf("launch answered %d to %q: %.300s", res.StatusCode, res.Header.Get("Location"), body)
	}
	ck := cookieNamed(res, lti.SessionCookie)
	if ck == nil || !ck.Secure || !ck.HttpOnly || !ck.Partitioned || ck.SameSite != http.SameSiteNoneMode {
		t.Fatalf("session cookie %+v: want HttpOnly, Secure, SameSite=None, Partitioned", ck)
	}
	// The launch makes the score due: 0 of 5 (a prediction, two checks, a
	// model goal, a lab).
	first := s.sim.WaitScores(1, 5*time.Second)[0]
	if first.UserID != "stu-1" || first.ScoreGiven != 0 || first.ScoreMaximum != 5 || first.ActivityProgress != "InProgress" {
		t.Errorf("first score %+v", first)
	}
	// The lesson page, as the launched learner.
	r := s.do(c, "GET", "/lessons/littles-law", nil, nil)
	if r.StatusCode != 200 {
		t.Fatalf("lesson page %d", r.StatusCode)
	}
	// A prediction locked in and a check right first time: 2 of 5.
	s.do(c, "POST", "/lessons/littles-law/predict/littles-double", url.Values{"action": {"lock"}, "option": {"b"}}, nil)
	q, _, _ := s.course.Question("littles-size")
	right, _ := q.Correct()
	s.do(c, "POST", "/lessons/littles-law/check/littles-size", url.Values{"option": {right.ID}}, nil)
	var last ltitest.Score
	deadline := time.Now().Add(5 * time.Second)
	for last.ScoreGiven != 2 && time.Now().Before(deadline) {
		scores := s.sim.Scores()
		last = scores[len(scores)-1]
		time.Sleep(10 * time.Millisecond)
	}
	if last.ScoreGiven != 2 || last.ScoreMaximum != 5 || !strings.Contains(last.Comment, "1 of 1 prediction locked in") ||
		!strings.Contains(last.Comment, "1 of 2 checks right first time") {
		t.Fatalf("score after progress %+v", last)
	}
	// The progress page shows the grade and its weighting.
	r = s.do(c, "GET", "/progress", nil, nil)
	for _, want := range []string{`data-testid="progress-lti"`, `data-points="2" data-max="5"`, "2 of 5 (40%)", "a prediction locked in (right or wrong)"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("progress page lacks %q", want)
		}
	}
	// Another browser, the same platform user: the same learner, whose
	// prediction is there.
	other := s.client()
	s.launch(other, ltitest.Launch{User: "stu-1", Graded: true})
	r = s.do(other, "GET", "/api/progress", nil, nil)
	if !strings.Contains(r.body, `"block": "littles-double"`) {
		t.Errorf("the second device does not see the first's prediction: %.400s", r.body)
	}
	// The anonymous learner cookie is never issued to an LTI learner.
	u, _ := url.Parse(s.srv.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == LearnerCookie {
			t.Errorf("an LTI learner got the anonymous cookie %s", ck.Value)
		}
	}
}

// TestLTILabRunCounts: a lab run to the end by the learner counts a point
// when the runner reports it finished.
func TestLTILabRunCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("LTI LAB RUN TEST SKIPPED (-short): it runs a real lab child for about 2 s")
	}
	lab := buildLab(t)
	var s *ltiSite
	s = newLTISite(t, func(d *Deps) {
		rn, err := runnerWithFinished(d, lab, func(learner, lesson string) { s.tool.ProgressChanged(context.Background(), learner, lesson) })
		if err != nil {
			t.Fatal(err)
		}
		d.Runner = rn
		t.Cleanup(func() { rn.Close() })
	})
	c := s.client()
	s.launch(c, ltitest.Launch{User: "stu-lab", Graded: true})
	s.sim.WaitScores(1, 5*time.Second)
	code, _, m := postSweep(t, c, s.srv.URL, `{"rates":[20],"seconds":1,"block":"littles-sweep"}`)
	if code != http.StatusAccepted {
		t.Fatalf("sweep %d %v", code, m)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		scores := s.sim.Scores()
		if last := scores[len(scores)-1]; last.ScoreGiven == 1 && strings.Contains(last.Comment, "1 of 1 lab run") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no score with the lab run: %+v", scores)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLTIRefusalsShowAPageAndLogWhy: each refused launch answers a page
// that says what happened and logs which check failed.
func TestLTIRefusalsShowAPageAndLogWhy(t *testing.T) {
	s := newLTISite(t, nil)
	set := func(k string, v any) func(map[string]any) { return func(c map[string]any) { c[k] = v } }
	cases := []struct {
		name   string
		launch ltitest.Launch
		reason string
		page   string // in the page
	}{
		{"expired token", ltitest.Launch{User: "u", Tamper: set("exp", time.Now().Add(-5*time.Minute).Unix())}, lti.ReasonExpired, "This launch has expired"},
		{"wrong audience", ltitest.Launch{User: "u", Tamper: set("aud", "another-tool")}, lti.ReasonAudience, "made for another tool"},
		{"wrong issuer", ltitest.Launch{User: "u", Tamper: set("iss", "https://other-lms.example.org")}, lti.ReasonIssuer, "issued by another platform"},
		{"unknown deployment", ltitest.Launch{User: "u", Tamper: set("https://purl.imsglobal.org/spec/lti/claim/deployment_id", "dep-9")}, lti.ReasonDeployment, "not registered for this platform"},
		{"bad signature", ltitest.Launch{User: "u", Key: s.sim.Impostor()}, lti.ReasonSignature, "signature does not match"},
		{"unknown kid after refresh", ltitest.Launch{User: "u", Key: ltitest.NewKey(t)}, lti.ReasonUnknownKid, "a key it does not publish"},
		// A target on this site whose path a browser reads as another
		// site's address (the redirect would go to //evil.example/x).
		{"target path naming another site", ltitest.Launch{User: "u", Target: s.srv.URL + "//evil.example/x"}, lti.ReasonTarget, "a page that is not on this tool"},
		{"missing claims", ltitest.Launch{Tamper: func(c map[string]any) { delete(c, "https://purl.imsglobal.org/spec/lti/claim/roles") }}, lti.ReasonClaims, "lacks claims LTI 1.3 requires (sub, https://purl.imsglobal.org/spec/lti/claim/roles)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, body := s.launch(s.client(), c.launch)
			checkRefusal(t, s.testSite, res.StatusCode, body, c.reason, c.page)
		})
	}
	t.Run("replayed nonce", func(t *testing.T) {
		// The same launch form posted twice.
		cl := s.client()
		res, err := cl.Get(s.sim.LoginURL(s.login(), ltitest.Launch{User: "u", Target: s.srv.URL + "/"}))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		res, _ = cl.Get(res.Header.Get("Location"))
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		action, form, err := ltitest.LaunchForm(string(page))
		if err != nil {
			t.Fatal(err)
		}
		if res, _ := cl.PostForm(action, form); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("first launch %d", res.StatusCode)
		}
		res, _ = cl.PostForm(action, form)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		checkRefusal(t, s.testSite, res.StatusCode, string(body), lti.ReasonReplay, "already used once")
		// The old token under a new login: its nonce is not this login's.
		res, _ = cl.Get(s.sim.LoginURL(s.login(), ltitest.Launch{User: "u", Target: s.srv.URL + "/"}))
		res.Body.Close()
		res, _ = cl.Get(res.Header.Get("Location"))
		page, _ = io.ReadAll(res.Body)
		res.Body.Close()
		_, fresh, _ := ltitest.LaunchForm(string(page))
		fresh.Set("id_token", form.Get("id_token"))
		res, _ = cl.PostForm(action, fresh)
		body, _ = io.ReadAll(res.Body)
		res.Body.Close()
		checkRefusal(t, s.testSite, res.StatusCode, string(body), lti.ReasonNonce, "may be a replay")
	})
	t.Run("launch without the login step", func(t *testing.T) {
		tok := s.sim.IDToken(ltitest.Launch{User: "u", Target: s.srv.URL + "/"}, "made-up-nonce")
		r := s.do(s.client(), "POST", "/lti/launch", url.Values{"id_token": {tok}}, nil)
		checkRefusal(t, s.testSite, r.StatusCode, r.body, lti.ReasonNoLogin, "did not begin at the tool")
	})
}

// TestLTILoginsBounded checks that login initiations, each of which
// stores a row until it expires, are bounded per client address (as joins
// are, Deps.JoinsPerMinute) and in all (lti.Config.MaxLogins): past
// either, 429 with Retry-After and a message saying to open the link again
// later, and nothing more is stored.
func TestLTILoginsBounded(t *testing.T) {
	login := func(s *ltiSite, user string) response {
		u, err := url.Parse(s.sim.LoginURL(s.login(), ltitest.Launch{User: user, Target: s.srv.URL + "/"}))
		if err != nil {
			t.Fatal(err)
		}
		return s.get(nil, u.RequestURI())
	}
	t.Run("per address", func(t *testing.T) {
		s := newLTISite(t, func(d *Deps) { d.JoinsPerMinute = 5 })
		for i := range 5 {
			if res := login(s, "u"); res.StatusCode != http.StatusFound {
				t.Fatalf("login %d: %d %.300s, want 302 to the platform", i+1, res.StatusCode, res.body)
			}
		}
		res := login(s, "u")
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" || !strings.Contains(res.body, "Too many launches of this tool started from your address") {
			t.Fatalf("login 6 from one address with 5 a minute allowed: %d (Retry-After %q) %.300s, want 429", res.StatusCode, res.Header.Get("Retry-After"), res.body)
		}
	})
	t.Run("in all", func(t *testing.T) {
		s := newLTISiteWith(t, func(c *lti.Config) { c.MaxLogins = 3 }, nil)
		for i := range 3 {
			if res := login(s, "u"); res.StatusCode != http.StatusFound {
				t.Fatalf("login %d: %d %.300s, want 302 to the platform", i+1, res.StatusCode, res.body)
			}
		}
		res := login(s, "u")
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "60" || !strings.Contains(res.body, "waiting for their platforms") {
			t.Fatalf("login 4 with 3 waiting and MaxLogins 3: %d (Retry-After %q) %.300s, want 429", res.StatusCode, res.Header.Get("Retry-After"), res.body)
		}
	})
}

// checkRefusal checks a refused launch: 403, the error page with message,
// and a log line with the reason.
func checkRefusal(t *testing.T, s *testSite, code int, body, reason, message string) {
	t.Helper()
	if code != http.StatusForbidden {
		t.Errorf("status %d, want 403: %.300s", code, body)
	}
	if !strings.Contains(body, `data-testid="error"`) || !strings.Contains(body, "This launch was refused") || !strings.Contains(body, message) {
		t.Errorf("the page does not say %q: %.1500s", message, body)
	}
	if !strings.Contains(s.logs.String(), `why="lti `+reason+":") {
		t.Errorf("no log line with why=\"lti %s: ...\" in:\n%s", reason, s.logs.String())
	}
}

// TestLTIDeepLinking: an instructor's deep linking launch shows the
// picker; their choice goes back to the platform signed, with a line
// item for a graded lesson.
func TestLTIDeepLinking(t *testing.T) {
	s := newLTISite(t, nil)
	c := s.client()
	res, body := s.launch(c, ltitest.Launch{User: "teacher", DeepLink: true, Multiple: true, Roles: []string{ltitest.RoleInstructor}})
	if res.StatusCode != 200 || !strings.Contains(body, `data-testid="lti-picker"`) {
		t.Fatalf("deep linking launch %d: %.500s", res.StatusCode, body)
	}
	req := regexpField(body, "request")
	r := s.do(c, "POST", "/lti/deep-link", url.Values{"request": {req}, "graded": {"yes"},
		"item": {"lesson:littles-law", "model:littles-law:littles-model", "lab:littles-law:littles-sweep"}}, nil)
	if r.StatusCode != 200 {
		t.Fatalf("choice answered %d: %.500s", r.StatusCode, r.body)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' "+s.sim.URL+";") {
		t.Errorf("the answer page's CSP does not let its form post to the platform: %s", csp)
	}
	action := regexpAttr(r.body, `data-testid="lti-return"`, "action")
	if action != s.sim.URL+"/deep-link-return" {
		t.Fatalf("form posts to %q", action)
	}
	res2, err := c.PostForm(action, url.Values{"JWT": {regexpField(r.body, "JWT")}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res2.Body)
	res2.Body.Close()
	if res2.StatusCode != 200 {
		t.Fatalf("the platform refused the answer: %d %s", res2.StatusCode, b)
	}
	items := s.sim.DeepLinkItems()
	if len(items) != 1 || len(items[0]) != 3 {
		t.Fatalf("items %v", items)
	}
	lesson, widget, lab := items[0][0], items[0][1], items[0][2]
	if lesson["url"] != s.srv.URL+"/lessons/littles-law" || lesson["lineItem"].(map[string]any)["scoreMaximum"] != 5.0 {
		t.Errorf("lesson item %v", lesson)
	}
	if u, _ := widget["url"].(string); !strings.HasPrefix(u, s.srv.URL+"/widgets/littles-law?") || widget["lineItem"] != nil {
		t.Errorf("widget item %v", widget)
	}
	if lab["url"] != s.srv.URL+"/lessons/littles-law#littles-sweep" {
		t.Errorf("lab item %v", lab)
	}
	// The request is answered: choosing again is refused with a page.
	r = s.do(c, "POST", "/lti/deep-link", url.Values{"request": {req}, "item": {"lesson:littles-law"}}, nil)
	if r.StatusCode != http.StatusForbidden || !strings.Contains(r.body, "already sent") {
		t.Errorf("second answer %d: %.300s", r.StatusCode, r.body)
	}
}

// TestLTIFrameAncestorsNameThePlatform: pages may be framed by the
// registered platforms' origins, and by nothing else unless configured.
func TestLTIFrameAncestorsNameThePlatform(t *testing.T) {
	s := newLTISite(t, nil)
	for _, p := range []string{"/lessons/littles-law", "/widgets/littles-law", "/lti"} {
		r := s.do(http.DefaultClient, "GET", p, nil, nil)
		csp := r.Header.Get("Content-Security-Policy")
		want := "frame-ancestors 'self' " + s.sim.URL + ";"
		if p == "/widgets/littles-law" {
			want = "frame-ancestors *;"
		}
		if !strings.Contains(csp, want) {
			t.Errorf("%s: CSP %q lacks %q", p, csp, want)
		}
	}
	none := newLTISite(t, func(d *Deps) { d.FrameAncestors = "'none'" })
	r := none.do(http.DefaultClient, "GET", "/", nil, nil)
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none';") {
		t.Errorf("a configured 'none' was changed: %q", csp)
	}
}

// TestLTIInstructorTeachesWithoutKey: an LTI instructor starts a class
// session without the instructor key; an LTI learner does not.
func TestLTIInstructorTeachesWithoutKey(t *testing.T) {
	site := newClassLTISite(t, "the-key")
	teacher := site.client()
	site.launch(teacher, ltitest.Launch{User: "t-1", Roles: []string{ltitest.RoleInstructor}})
	r := site.do(teacher, "POST", "/sessions", url.Values{"lesson": {"littles-law"}}, nil)
	if r.StatusCode != http.StatusSeeOther || !strings.Contains(r.Header.Get("Location"), "/host?token=") {
		t.Errorf("LTI instructor without the key: %d %q %.300s", r.StatusCode, r.Header.Get("Location"), r.body)
	}
	learner := site.client()
	site.launch(learner, ltitest.Launch{User: "s-1"})
	r = site.do(learner, "POST", "/sessions", url.Values{"lesson": {"littles-law"}}, nil)
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("LTI learner without the key: %d", r.StatusCode)
	}
}

// newClassLTISite is an LTI site that runs class sessions with key.
func newClassLTISite(t *testing.T, key string) *ltiSite {
	t.Helper()
	return newLTISite(t, func(d *Deps) {
		m, err := classroomFor(d)
		if err != nil {
			t.Fatal(err)
		}
		d.Classes = m
		d.InstructorKey = key
		t.Cleanup(func() { m.Close() })
	})
}

// TestLTIGradesPage: the instructor sees their course's grades, a failed
// send with its error, and sends it again.
func TestLTIGradesPage(t *testing.T) {
	s := newLTISite(t, nil)
	s.sim.FailScores(1000)
	learner := s.client()
	s.launch(learner, ltitest.Launch{User: "stu-9", Name: "Alan Turing", Graded: true})
	s.waitGrade(func(g store.LTIGrade) bool { return g.Attempts >= 1 })
	teacher := s.client()
	s.launch(teacher, ltitest.Launch{User: "teach-1", Roles: []string{ltitest.RoleInstructor}, Target: s.srv.URL + "/progress"})
	r := s.do(teacher, "GET", "/lti/grades", nil, nil)
	l, _ := s.course.Lesson("littles-law")
	for _, want := range []string{"Alan Turing", l.Title, "0 of 5", "Waiting to be sent", "503"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("grades page lacks %q: %.2000s", want, r.body)
		}
	}
	if r := s.do(teacher, "GET", "/progress", nil, nil); !strings.Contains(r.body, `data-testid="lti-grades-link"`) {
		t.Error("the instructor's progress page does not link the grades")
	}
	// A learner may not see the list.
	if r := s.do(learner, "GET", "/lti/grades", nil, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("a learner got the grade list: %d", r.StatusCode)
	}
	// Nor someone without a launch.
	if r := s.do(s.client(), "GET", "/lti/grades", nil, nil); r.StatusCode != http.StatusForbidden {
		t.Errorf("an anonymous visitor got the grade list: %d", r.StatusCode)
	}
	s.sim.FailScores(0)
	r = s.do(teacher, "POST", "/lti/grades/retry", nil, nil)
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/lti/grades?retried=0" {
		t.Errorf("retry %d %q (the grade is pending, not failed)", r.StatusCode, r.Header.Get("Location"))
	}
	s.sim.WaitScores(1, 5*time.Second)
}

// waitGrade waits until a grade of the simulator's course is ok.
func (s *ltiSite) waitGrade(ok func(store.LTIGrade) bool) {
	s.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		gs, err := s.store.LTIGrades(context.Background(), store.LTIGradeQuery{Issuer: s.sim.URL, ClientID: s.sim.ClientID, ContextID: "course-1"})
		if err != nil {
			s.t.Fatal(err)
		}
		for _, g := range gs {
			if ok(g) {
				return
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no grade reached the state wanted: %+v", gs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runnerWithFinished is a runner of real lab children from lab that tells
// done(learner, lesson) of each run that finished done.
func runnerWithFinished(d *Deps, lab string, done func(learner, lesson string)) (*runner.Runner, error) {
	load, err := labsvc.SelfCommand(loadChildEnv)
	if err != nil {
		return nil, err
	}
	return runner.New(runner.Config{Load: load, Lab: labsvc.ChildCommand{Path: lab, Args: []string{"lab-child"}}, Store: d.Store,
		Finished: func(learner, lesson, _ string, status store.RunStatus) {
			if status == store.RunDone {
				done(learner, lesson)
			}
		}})
}

// classroomFor is a class session manager over d's store and course.
func classroomFor(d *Deps) (*classroom.Manager, error) {
	return classroom.New(classroom.Config{Store: d.Store, Lessons: ClassLessons(d.Course), StartRun: ClassRuns(d.Course, nil)})
}

// regexpField is the value of the input named name in page.
func regexpField(page, name string) string {
	m := regexp.MustCompile(`name="` + regexp.QuoteMeta(name) + `" value="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// regexpAttr is attribute attr of the element whose tag holds marker.
func regexpAttr(page, marker, attr string) string {
	m := regexp.MustCompile(`<[^>]*` + regexp.QuoteMeta(marker) + `[^>]*>`).FindString(page)
	a := regexp.MustCompile(attr + `="([^"]*)"`).FindStringSubmatch(m)
	if a == nil {
		return ""
	}
	return html.UnescapeString(a[1])
}

// TestLTIConfigAndJWKS: the config page names URLs the site answers, and
// the JWKS holds the tool's key.
func TestLTIConfigAndJWKS(t *testing.T) {
	s := newLTISite(t, func(d *Deps) { d.PublicURL = "https://lab.example.org/" })
	r := s.do(http.DefaultClient, "GET", "/lti", nil, nil)
	for _, want := range []string{"https://lab.example.org/lti/login", "https://lab.example.org/lti/launch", "https://lab.example.org/lti/jwks.json", "1 platform is registered"} {
		if !strings.Contains(r.body, want) {
			t.Errorf("config page lacks %q", want)
		}
	}
	r = s.do(http.DefaultClient, "GET", "/lti/jwks.json", nil, nil)
	if r.StatusCode != 200 || !strings.Contains(r.body, `"kty":"RSA"`) || !strings.Contains(r.Header.Get("Cache-Control"), "max-age=300") {
		t.Errorf("JWKS %d %q: %s", r.StatusCode, r.Header.Get("Cache-Control"), r.body)
	}
	// Without a tool, the LTI URLs are not found.
	plain := newSite(t)
	if r := plain.do(http.DefaultClient, "GET", "/lti/jwks.json", nil, nil); r.StatusCode != 404 {
		t.Errorf("JWKS without a tool: %d", r.StatusCode)
	}
}
