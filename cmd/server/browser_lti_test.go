//go:build browser

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"capacitylab/lti"
	"capacitylab/lti/ltitest"
)

// TestBrowserLTILaunchInIframe runs an LTI launch inside a platform's
// course page, as a learner's browser does: the simulator's page on
// 127.0.0.1 frames the tool's login on localhost (another site), the
// login redirects to the platform, whose page posts the id_token back to
// the tool, which opens the lesson in the frame. The learner locks in a
// prediction there, and the platform gets their score. It passes only if
// the state cookie and the session cookie (SameSite=None, Secure,
// Partitioned, over plain http on localhost) reach the tool from inside
// the frame; it runs once as chromium comes and once with third-party
// cookies blocked (--test-third-party-cookie-phaseout), where only
// partitioned cookies are left to a framed site.
func TestBrowserLTILaunchInIframe(t *testing.T) {
	for _, mode := range []struct {
		name  string
		flags []chromedp.ExecAllocatorOption
		// blocked: unpartitioned third-party cookies must be refused (the
		// control that the mode is what it says)
		blocked bool
	}{
		{"default", nil, false},
		{"third-party-cookies-blocked", []chromedp.ExecAllocatorOption{chromedp.Flag("test-third-party-cookie-phaseout", true)}, true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			sim, srv := simAndServer(t)
			// The browser reaches the tool as localhost: another site than
			// the platform's 127.0.0.1.
			tool := strings.Replace(srv.url, "127.0.0.1", "localhost", 1)
			sim.ToolLaunch = tool + "/lti/launch"
			ctx := newBrowserFor(t, browserTimeout, mode.flags...)
			course := sim.CourseURL(tool+"/lti/login", ltitest.Launch{User: "stu-browser", Name: "Ada", Graded: true, Target: tool + "/lessons/littles-law"})
			if err := chromedp.Do(ctx, chromedp.Navigate(course)); err != nil {
				t.Fatal(err)
			}
			// The frame ends on the lesson. It is on another site than the
			// page, so chromium runs it in a process of its own: a target of
			// its own, which the test attaches to.
			in := frameTarget(t, ctx, tool+"/lessons/littles-law", "lti-iframe-"+mode.name)
			if err := chromedp.Do(in, chromedp.WaitVisible(chromedp.CSS(`[data-testid="predict-littles-double"]`))); err != nil {
				t.Fatal(err)
			}
			// Controls: the frame sets two cookies alike but for Partitioned.
			kept := func(name, partitioned string) bool {
				t.Helper()
				ok, err := chromedp.Run(in, chromedp.Evaluate[bool](`document.cookie = "`+name+`=1; SameSite=None; Secure; Path=/`+partitioned+`"; document.cookie.includes("`+name+`=1")`))
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if !kept("cl_probe_p", "; Partitioned") {
				t.Error("the frame could not keep a partitioned cookie")
			}
			unpartitioned := kept("cl_probe_u", "")
			t.Logf("chromium kept an unpartitioned third-party cookie: %v", unpartitioned)
			if mode.blocked && unpartitioned {
				t.Error("with third-party cookies blocked, the frame kept an unpartitioned cookie: the mode does not block")
			}
			first := sim.WaitScores(1, 10*time.Second)[0]
			if first.UserID != "stu-browser" || first.ScoreGiven != 0 {
				t.Errorf("score at the launch %+v", first)
			}
			// Lock in a prediction inside the frame (lesson.js posts it).
			if err := chromedp.Do(in,
				chromedp.Click(chromedp.CSS(`[data-testid="predict-littles-double"] [data-testid="option-b"]`)),
				chromedp.Click(chromedp.CSS(`[data-testid="predict-littles-double"] [data-testid="predict-lock"]`)),
			); err != nil {
				t.Fatal(err)
			}
			if err := chromedp.Do(in, chromedp.WaitVisible(chromedp.CSS(`[data-testid="predict-littles-double"] [data-testid="predict-locked"]`))); err != nil {
				screenshot(t, ctx, "lti-iframe-"+mode.name+"-lock-failed")
				t.Fatalf("the prediction did not lock inside the frame: %v", err)
			}
			scores := sim.WaitScores(2, 10*time.Second)
			if last := scores[len(scores)-1]; last.ScoreGiven != 1 || last.UserID != "stu-browser" {
				t.Errorf("score after the prediction %+v", last)
			}
			// The session cookie is partitioned by the platform's site.
			res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{tool + "/"}})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, c := range res.Cookies {
				if c.Name == lti.SessionCookie {
					found = true
					if c.PartitionKey == nil || !strings.Contains(c.PartitionKey.TopLevelSite, "127.0.0.1") {
						t.Errorf("session cookie partition %+v, want the platform's site", c.PartitionKey)
					}
				}
			}
			if !found {
				t.Errorf("no %s cookie for %s among %d", lti.SessionCookie, tool, len(res.Cookies))
			}
			screenshot(t, ctx, "lti-iframe-"+mode.name)
		})
	}
}

// frameTarget waits for the frame (an out-of-process iframe) whose URL is
// url and returns a context driving it; on a timeout it fails with the
// targets it saw and a screenshot of the page.
func frameTarget(t *testing.T, ctx context.Context, url, shot string) context.Context {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		targets, err := chromedp.Targets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range targets {
			if ti.Type == "iframe" && ti.URL == url {
				fctx, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(ti.TargetID))
				t.Cleanup(cancel)
				return fctx
			}
		}
		if time.Now().After(deadline) {
			for _, ti := range targets {
				t.Logf("target %s %s", ti.Type, ti.URL)
			}
			screenshot(t, ctx, shot+"-failed")
			t.Fatalf("no frame at %s", url)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserLTIPagesAccessible audits the LTI pages with axe-core in the
// four views of TestBrowserAccessibility, as a learner and an instructor
// launched top-level (a new window: first-party cookies) see them: the
// tool's configuration page, a graded learner's progress page, the deep
// linking picker and the instructor's grade list. It also checks that
// lti.js posts the deep linking answer back to the platform at once, and
// saves screenshots at 1280 and 375 px, light and dark.
func TestBrowserLTIPagesAccessible(t *testing.T) {
	src := axeSource(t)
	sim, srv := simAndServer(t)

	// The picker offers every Predict, widget and lab of the course:
	// auditing it in four views takes more than browserTimeout on a busy
	// machine.
	learner := newBrowserFor(t, 3*time.Minute)
	launch := func(ctx context.Context, l ltitest.Launch, ready string) {
		t.Helper()
		doSteps(t, ctx, "launch "+l.User, chromedp.Navigate(sim.LoginURL(srv.url+"/lti/login", l)), chromedp.WaitVisible(chromedp.CSS(ready)))
	}
	launch(learner, ltitest.Launch{User: "stu-a11y", Name: "Ada Lovelace", Graded: true, Target: srv.url + "/lessons/littles-law"},
		`[data-testid="predict-littles-double"]`)
	doSteps(t, learner, "lock a prediction",
		chromedp.Click(chromedp.CSS(`[data-testid="predict-littles-double"] [data-testid="option-b"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="predict-littles-double"] [data-testid="predict-lock"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="predict-littles-double"] [data-testid="predict-locked"]`)))
	sim.WaitScores(2, 10*time.Second)

	teacher := newBrowserFor(t, 3*time.Minute)
	launch(teacher, ltitest.Launch{User: "teach-a11y", Name: "Grace Hopper", DeepLink: true, Multiple: true,
		Roles: []string{ltitest.RoleInstructor}, Target: srv.url + "/lti/launch"}, `[data-testid="lti-picker"]`)

	audit := func(ctx context.Context, name string) {
		t.Helper()
		for _, v := range a11yViews() {
			setView(t, ctx, v)
			auditPage(t, ctx, src, name, v.name)
		}
		for _, v := range []a11yView{{"light, 1280 px", "light", 1280, 0}, {"dark, 1280 px", "dark", 1280, 0}, {"light, 375 px", "light", 375, 0}, {"dark, 375 px", "dark", 375, 0}} {
			setView(t, ctx, v)
			screenshot(t, ctx, "lti-"+name+"-"+strings.NewReplacer(", ", "-", " ", "").Replace(v.name))
		}
	}
	audit(teacher, "picker")
	// The choice, posted to the platform by lti.js without a click.
	doSteps(t, teacher, "choose and send",
		chromedp.Click(chromedp.CSS(`[data-testid="pick-lesson:littles-law"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="pick-lab:littles-law:littles-sweep"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="lti-add"]`)),
		chromedp.WaitVisible(chromedp.CSS("#added")))
	if items := sim.DeepLinkItems(); len(items) != 1 || len(items[0]) != 2 {
		t.Fatalf("the platform got %v", items)
	}

	doSteps(t, learner, "progress page", chromedp.Navigate(srv.url+"/progress"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="progress-grades"]`)))
	if got := textOf(t, learner, `[data-testid="progress-grades"] .grade-points`); got != "1 of 5 (20%)" {
		t.Errorf("the learner's grade reads %q", got)
	}
	audit(learner, "progress")

	launch(teacher, ltitest.Launch{User: "teach-a11y", Name: "Grace Hopper", Roles: []string{ltitest.RoleInstructor}, Target: srv.url + "/lti/grades"},
		`[data-testid="lti-grades"]`)
	if got := textOf(t, teacher, `[data-testid="lti-grades"] tbody`); !strings.Contains(got, "Ada Lovelace") || !strings.Contains(got, "1 of 5") {
		t.Errorf("the grade list reads %q", got)
	}
	audit(teacher, "grades")
	doSteps(t, teacher, "configuration page", chromedp.Navigate(srv.url+"/lti"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="lti-urls"]`)))
	audit(teacher, "config")
}
