package lti_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws"

	"capacitylab/lti"
	"capacitylab/lti/ltitest"
	"capacitylab/store"
)

// clock is the real time moved on by Add (tokens the simulator signs use
// the real time).
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// harness is a tool on a real SQLite file beside a platform simulator.
// Its HTTP server serves the tool's JWKS (the simulator's token and deep
// linking endpoints fetch it); the launch URL is on it too, though the
// tests hand the launch form to Tool.Launch directly.
type harness struct {
	t     *testing.T
	st    *store.Store
	sim   *ltitest.Platform
	tool  *lti.Tool
	srv   *httptest.Server
	clock *clock
	score *scores
}

// scores is the ScoreFunc the harness gives the tool: a settable score
// per learner and lesson.
type scores struct {
	mu sync.Mutex
	m  map[string]lti.Score
}

func (s *scores) set(learner, lesson string, sc lti.Score) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[learner+"/"+lesson] = sc
}

func (s *scores) get(_ context.Context, learner, lesson string) (lti.Score, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.m[learner+"/"+lesson]
	if !ok {
		return lti.Score{Max: 10}, nil
	}
	return sc, nil
}

func newHarness(t *testing.T, tweak func(*lti.Config)) *harness {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "lti.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, st: st, sim: ltitest.Start(t), clock: &clock{}, score: &scores{m: map[string]lti.Score{}}}
	h.sim.Now = h.clock.Now
	h.start(tweak)
	return h
}

// start makes the harness's tool (again, after stop: a restart).
func (h *harness) start(tweak func(*lti.Config)) {
	cfg := lti.Config{Store: h.st, Platforms: []lti.Platform{h.sim.Registration()}, Score: h.score.get, Now: h.clock.Now,
		KeyRefetch: time.Millisecond, RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond}
	if tweak != nil {
		tweak(&cfg)
	}
	tool, err := lti.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.tool = tool
	h.t.Cleanup(tool.Close)
	if h.srv == nil {
		h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := h.tool.JWKS(r.Context())
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Write(b)
		}))
		h.t.Cleanup(h.srv.Close)
		h.sim.ToolJWKS = h.srv.URL + "/lti/jwks.json"
		h.sim.ToolLaunch = h.srv.URL + "/lti/launch"
	}
}

// login runs the login step and the platform's authorization answer: it
// returns the form the platform posts to the tool and the state cookie.
func (h *harness) login(l ltitest.Launch) (url.Values, *http.Cookie) {
	h.t.Helper()
	if l.Target == "" {
		l.Target = h.srv.URL + "/lessons/littles-law"
	}
	u, _ := url.Parse(h.sim.LoginURL(h.srv.URL+"/lti/login", l))
	lg, err := h.tool.Login(context.Background(), lti.LoginRequestOf(u.Query()), h.srv.URL+"/lti/launch")
	if err != nil {
		h.t.Fatalf("login: %v", err)
	}
	res, err := http.Get(lg.RedirectURL)
	if err != nil {
		h.t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	_, form, err := ltitest.LaunchForm(string(page))
	if err != nil {
		h.t.Fatalf("authorization answer %d: %v", res.StatusCode, err)
	}
	return form, lg.Cookie
}

// launch posts form (with cookie, if any) to Tool.Launch.
func (h *harness) launch(form url.Values, cookie *http.Cookie) (*lti.Launch, error) {
	r := httptest.NewRequest(http.MethodPost, h.srv.URL+"/lti/launch", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if cookie != nil {
		r.AddCookie(cookie)
	}
	return h.tool.Launch(context.Background(), r, h.srv.URL)
}

// kidOf is the kid in a compact JWS's header.
func kidOf(t *testing.T, tok string) string {
	t.Helper()
	m, err := jws.Parse([]byte(tok))
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := m.Signatures()[0].ProtectedHeaders().KeyID()
	return kid
}

func reason(err error) string {
	var r *lti.Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	if err == nil {
		return "accepted"
	}
	return "error: " + err.Error()
}

func TestLaunchAcceptsAValidResourceLink(t *testing.T) {
	h := newHarness(t, nil)
	form, cookie := h.login(ltitest.Launch{User: "u-1", Name: "Ada Lovelace", Graded: true, Roles: []string{ltitest.RoleInstructor}})
	l, err := h.launch(form, cookie)
	if err != nil {
		t.Fatalf("valid launch refused: %v", err)
	}
	if l.Subject != "u-1" || l.Name != "Ada Lovelace" || l.MessageType != lti.MessageResourceLink || l.ContextID != "course-1" ||
		l.ResourceLink != "link-1" || l.Deployment != h.sim.Deployment || !l.Instructor() {
		t.Errorf("launch = %+v", l)
	}
	if l.LineItem != h.sim.URL+"/lineitems/li-link-1" {
		t.Errorf("line item %q", l.LineItem)
	}
	if l.TargetLinkURI != h.srv.URL+"/lessons/littles-law" {
		t.Errorf("target %q", l.TargetLinkURI)
	}
	// The same form again is a replay.
	if _, err := h.launch(form, cookie); reason(err) != lti.ReasonReplay {
		t.Errorf("second use of a launch: %s, want %s", reason(err), lti.ReasonReplay)
	}
}

// TestLaunchRefusals checks each way a launch is refused, by its reason.
func TestLaunchRefusals(t *testing.T) {
	h := newHarness(t, nil)
	set := func(k string, v any) func(map[string]any) { return func(c map[string]any) { c[k] = v } }
	del := func(ks ...string) func(map[string]any) {
		return func(c map[string]any) {
			for _, k := range ks {
				delete(c, k)
			}
		}
	}
	cases := []struct {
		name   string
		launch ltitest.Launch
		form   func(url.Values) // change the posted form
		noCook bool             // the browser sends no state cookie
		want   string
	}{
		{name: "exp has passed (beyond the minute of skew allowed)",
			launch: ltitest.Launch{Tamper: set("exp", time.Now().Add(-2*time.Minute).Unix())}, want: lti.ReasonExpired},
		{name: "iat is in the future",
			launch: ltitest.Launch{Tamper: set("iat", time.Now().Add(10*time.Minute).Unix())}, want: lti.ReasonExpired},
		{name: "aud is another client id",
			launch: ltitest.Launch{Tamper: set("aud", "someone-else")}, want: lti.ReasonAudience},
		{name: "several audiences without azp",
			launch: ltitest.Launch{Tamper: set("aud", []string{h.sim.ClientID, "other"})}, want: lti.ReasonAudience},
		{name: "azp is another client id",
			launch: ltitest.Launch{Tamper: set("azp", "other")}, want: lti.ReasonAudience},
		{name: "iss is another platform",
			launch: ltitest.Launch{Tamper: set("iss", "https://elsewhere.example.org")}, want: lti.ReasonIssuer},
		{name: "deployment not registered",
			launch: ltitest.Launch{Tamper: set("https://purl.imsglobal.org/spec/lti/claim/deployment_id", "dep-unknown")}, want: lti.ReasonDeployment},
		{name: "signed by another key that claims the platform's kid",
			launch: ltitest.Launch{Key: h.sim.Impostor()}, want: lti.ReasonSignature},
		{name: "signed by a key the platform does not publish",
			launch: ltitest.Launch{Key: ltitest.NewKey(t)}, want: lti.ReasonUnknownKid},
		{name: "no sub, roles or message type",
			launch: ltitest.Launch{Tamper: del("sub", "https://purl.imsglobal.org/spec/lti/claim/roles", "https://purl.imsglobal.org/spec/lti/claim/message_type")},
			want:   lti.ReasonClaims},
		{name: "no resource link",
			launch: ltitest.Launch{User: "u", Tamper: del("https://purl.imsglobal.org/spec/lti/claim/resource_link")}, want: lti.ReasonClaims},
		{name: "no exp",
			launch: ltitest.Launch{User: "u", Tamper: del("exp")}, want: lti.ReasonClaims},
		{name: "no nonce",
			launch: ltitest.Launch{User: "u", Tamper: del("nonce")}, want: lti.ReasonClaims},
		{name: "a nonce this login did not issue",
			launch: ltitest.Launch{User: "u", Tamper: set("nonce", "n-of-another-login")}, want: lti.ReasonNonce},
		{name: "LTI 1.1 version",
			launch: ltitest.Launch{User: "u", Tamper: set("https://purl.imsglobal.org/spec/lti/claim/version", "1.1")}, want: lti.ReasonVersion},
		{name: "a message type the tool does not take",
			launch: ltitest.Launch{User: "u", Tamper: set("https://purl.imsglobal.org/spec/lti/claim/message_type", "LtiSubmissionReviewRequest")}, want: lti.ReasonMessage},
		{name: "target on another site",
			launch: ltitest.Launch{User: "u", Target: "https://evil.example.org/lessons/littles-law"}, want: lti.ReasonTarget},
		{name: "without the login step: no state",
			launch: ltitest.Launch{User: "u"}, form: func(v url.Values) { v.Del("state") }, want: lti.ReasonNoLogin},
		{name: "without the login step: a state the tool never issued",
			launch: ltitest.Launch{User: "u"}, form: func(v url.Values) { v.Set("state", strings.Repeat("ab", 16)) }, want: lti.ReasonNoLogin},
		{name: "the browser did not send the state cookie back",
			launch: ltitest.Launch{User: "u"}, noCook: true, want: lti.ReasonStateCookie},
		{name: "not a JWT",
			launch: ltitest.Launch{User: "u"}, form: func(v url.Values) { v.Set("id_token", "not.a.token") }, want: lti.ReasonMalformed},
		{name: "the platform answered with an error",
			launch: ltitest.Launch{User: "u"}, form: func(v url.Values) { v.Set("error", "login_required") }, want: lti.ReasonPlatformErr},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.launch.User == "" && c.launch.Tamper != nil && c.want != lti.ReasonClaims {
				c.launch.User = "u"
			}
			form, cookie := h.login(c.launch)
			if c.form != nil {
				c.form(form)
			}
			if c.noCook {
				cookie = nil
			}
			l, err := h.launch(form, cookie)
			if got := reason(err); got != c.want {
				t.Fatalf("refusal %s, want %s (launch %+v)", got, c.want, l)
			}
			var r *lti.Refusal
			errors.As(err, &r)
			if r.Message == "" || r.Detail == "" {
				t.Errorf("refusal without a message or a detail: %+v", r)
			}
		})
	}
}

// TestReplayedNonce posts a used id_token again under a fresh login: its
// nonce is the old login's, so it is refused.
func TestReplayedNonce(t *testing.T) {
	h := newHarness(t, nil)
	form, cookie := h.login(ltitest.Launch{User: "u"})
	if _, err := h.launch(form, cookie); err != nil {
		t.Fatal(err)
	}
	fresh, cookie2 := h.login(ltitest.Launch{User: "u"})
	fresh.Set("id_token", form.Get("id_token"))
	if _, err := h.launch(fresh, cookie2); reason(err) != lti.ReasonNonce {
		t.Errorf("an old token under a new login: %s, want %s", reason(err), lti.ReasonNonce)
	}
}

// TestUnknownKidStaysUnknown: a token with a kid the platform does not
// publish makes the tool fetch the keys again (once), then refuses.
func TestUnknownKidStaysUnknown(t *testing.T) {
	h := newHarness(t, nil)
	form, cookie := h.login(ltitest.Launch{User: "u"})
	if _, err := h.launch(form, cookie); err != nil { // the keys are fetched once
		t.Fatal(err)
	}
	before := h.sim.JWKSFetches()
	form, cookie = h.login(ltitest.Launch{User: "u", Key: ltitest.NewKey(t)})
	_, err := h.launch(form, cookie)
	if reason(err) != lti.ReasonUnknownKid {
		t.Fatalf("%s, want %s", reason(err), lti.ReasonUnknownKid)
	}
	if got := h.sim.JWKSFetches() - before; got != 1 {
		t.Errorf("the unknown kid made %d fetches of the platform's keys, want 1", got)
	}
}

// TestUnknownKidRefetchIsRateLimited: with the default minimum of 10 s
// between refetches, a burst of made-up kids costs the platform one fetch.
func TestUnknownKidRefetchIsRateLimited(t *testing.T) {
	h := newHarness(t, func(c *lti.Config) { c.KeyRefetch = 0 })
	form, cookie := h.login(ltitest.Launch{User: "u"})
	if _, err := h.launch(form, cookie); err != nil {
		t.Fatal(err)
	}
	before := h.sim.JWKSFetches()
	for range 5 {
		form, cookie = h.login(ltitest.Launch{User: "u", Key: ltitest.NewKey(t)})
		if _, err := h.launch(form, cookie); reason(err) != lti.ReasonUnknownKid {
			t.Fatalf("%s, want %s", reason(err), lti.ReasonUnknownKid)
		}
	}
	if got := h.sim.JWKSFetches() - before; got != 0 {
		t.Errorf("5 made-up kids within 10 s of the last fetch made %d fetches, want 0", got)
	}
}

// TestPlatformKeyRotation: the platform signs with a new key (and drops
// the old one); the tool fetches its keys again at the new kid and takes
// the launch.
func TestPlatformKeyRotation(t *testing.T) {
	h := newHarness(t, nil)
	form, cookie := h.login(ltitest.Launch{User: "u"})
	if _, err := h.launch(form, cookie); err != nil {
		t.Fatal(err)
	}
	k := h.sim.Rotate(true)
	form, cookie = h.login(ltitest.Launch{User: "u"})
	if _, err := h.launch(form, cookie); err != nil {
		t.Fatalf("launch signed with the platform's new key %s: %v", k.ID, err)
	}
}

// TestToolKeyRotation: a rotated-in key is published at once and signs
// after KeyPublishDelay; the platform verifies what each key signs; after
// two more rotations the first key is gone.
func TestToolKeyRotation(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	kids := func() []string {
		keys, err := h.st.LTIKeys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range keys {
			out = append(out, k.ID)
		}
		return out
	}
	// The first request that needs a key makes one.
	if _, err := h.tool.JWKS(ctx); err != nil {
		t.Fatal(err)
	}
	first := kids()
	if len(first) != 1 {
		t.Fatalf("keys after the first JWKS: %v", first)
	}
	// A deep linking response is signed with the first key, and verifies.
	signedBy := func() string {
		form, cookie := h.login(ltitest.Launch{User: "teacher", DeepLink: true, Roles: []string{ltitest.RoleInstructor}})
		l, err := h.launch(form, cookie)
		if err != nil {
			t.Fatal(err)
		}
		id, err := h.tool.BeginDeepLink(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		ret, tok, err := h.tool.DeepLinkResponse(ctx, id, []lti.ContentItem{{Type: "ltiResourceLink", Title: "t", URL: h.srv.URL + "/lessons/x"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.PostForm(ret, url.Values{lti.DeepLinkForm: {tok}})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("the platform refused the deep linking response: %d %s", res.StatusCode, body)
		}
		return kidOf(t, tok)
	}
	if got := signedBy(); got != first[0] {
		t.Fatalf("signed by %s, want %s", got, first[0])
	}
	k2, err := lti.RotateKey(ctx, h.st, h.clock.Now(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lti.RotateKey(ctx, h.st, h.clock.Now(), false); err == nil {
		t.Error("a second rotation before the new key signs was allowed")
	}
	if got := kids(); len(got) != 2 || got[0] != k2.ID {
		t.Fatalf("keys after a rotation: %v", got)
	}
	if got := signedBy(); got != first[0] {
		t.Errorf("right after the rotation signed by %s, want the old key %s", got, first[0])
	}
	h.clock.Add(lti.KeyPublishDelay)
	if got := signedBy(); got != k2.ID {
		t.Errorf("after the publish delay signed by %s, want the new key %s", got, k2.ID)
	}
	// The token endpoint verifies the client assertion with the new key.
	h.gradedLaunch("u-rot", "littles-law")
	h.sim.WaitScores(1, 5*time.Second)
	// Two more rotations (one --now): the first key is deleted, three kept.
	if _, err := lti.RotateKey(ctx, h.st, h.clock.Now(), true); err != nil {
		t.Fatal(err)
	}
	if _, err := lti.RotateKey(ctx, h.st, h.clock.Now(), true); err != nil {
		t.Fatal(err)
	}
	got := kids()
	if len(got) != 3 || strings.Contains(strings.Join(got, " "), first[0]) {
		t.Errorf("keys after three rotations: %v (first %s)", got, first[0])
	}
}

// gradedLaunch launches learner user into a graded placement of lesson
// and begins their session.
func (h *harness) gradedLaunch(user, lesson string) lti.Session {
	h.t.Helper()
	form, cookie := h.login(ltitest.Launch{User: user, Graded: true, Link: "link-" + lesson, Target: h.srv.URL + "/lessons/" + lesson})
	l, err := h.launch(form, cookie)
	if err != nil {
		h.t.Fatal(err)
	}
	s, c, err := h.tool.Begin(context.Background(), l, lesson)
	if err != nil {
		h.t.Fatal(err)
	}
	if c.Name != lti.SessionCookie || !c.Secure || !c.Partitioned || c.SameSite != http.SameSiteNoneMode || !c.HttpOnly {
		h.t.Errorf("session cookie %+v: want HttpOnly, Secure, SameSite=None, Partitioned", c)
	}
	return s
}

func TestScoresArePostedRetriedAndSurviveARestart(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	s := h.gradedLaunch("u-1", "littles-law")
	// The launch makes the score due: the score at that moment is posted.
	first := h.sim.WaitScores(1, 5*time.Second)[0]
	if first.UserID != "u-1" || first.ScoreMaximum != 10 || first.ScoreGiven != 0 || first.ActivityProgress != "InProgress" ||
		first.GradingProgress != "FullyGraded" || first.LineItem != h.sim.URL+"/lineitems/li-link-littles-law" {
		t.Errorf("first score %+v", first)
	}
	// Progress changes; the platform fails twice, then takes it.
	h.sim.FailScores(2)
	h.score.set(s.Learner, "littles-law", lti.Score{Given: 4, Max: 10})
	h.tool.ProgressChanged(ctx, s.Learner, "littles-law")
	second := h.sim.WaitScores(2, 5*time.Second)[1]
	if second.ScoreGiven != 4 {
		t.Errorf("second score %+v", second)
	}
	waitGrade(t, h.st, s.Learner, func(g store.LTIGrade) bool { return g.Status == store.GradeSent && g.Given == 4 })
	// One token served every post (kept until it expires).
	if n := h.sim.TokensIssued(); n != 1 {
		t.Errorf("%d access tokens issued, want 1 (kept until expiry)", n)
	}

	// A failing post is recorded with its error and next try; after a
	// restart the new tool posts it.
	h.sim.FailScores(1000)
	h.score.set(s.Learner, "littles-law", lti.Score{Given: 10, Max: 10, Completed: true})
	h.tool.ProgressChanged(ctx, s.Learner, "littles-law")
	g := waitGrade(t, h.st, s.Learner, func(g store.LTIGrade) bool { return g.Attempts >= 1 })
	if g.Status != store.GradePending || !strings.Contains(g.LastError, "503") {
		t.Errorf("after a failed post: %+v", g)
	}
	h.tool.Close()
	h.sim.FailScores(0)
	h.start(nil)
	third := h.sim.WaitScores(3, 5*time.Second)[2]
	if third.ScoreGiven != 10 || third.ActivityProgress != "Completed" {
		t.Errorf("score after the restart %+v", third)
	}
	waitGrade(t, h.st, s.Learner, func(g store.LTIGrade) bool {
		return g.Status == store.GradeSent && g.Attempts == 0 && g.LastError == ""
	})
}

func TestFailedGradesGiveUpAndRetry(t *testing.T) {
	h := newHarness(t, func(c *lti.Config) { c.MaxAttempts = 3 })
	h.sim.FailScores(3)
	s := h.gradedLaunch("u-1", "littles-law")
	g := waitGrade(t, h.st, s.Learner, func(g store.LTIGrade) bool { return g.Status == store.GradeFailed })
	if g.Attempts != 3 {
		t.Errorf("failed after %d attempts, want 3", g.Attempts)
	}
	if len(h.sim.Scores()) != 0 {
		t.Fatal("a score was recorded while the platform failed")
	}
	n, err := h.tool.RetryCourse(context.Background(), s)
	if err != nil || n != 1 {
		t.Fatalf("RetryCourse = %d, %v", n, err)
	}
	h.sim.WaitScores(1, 5*time.Second)
	waitGrade(t, h.st, s.Learner, func(g store.LTIGrade) bool { return g.Status == store.GradeSent })
}

// TestTokenRenewedAtExpiry: a kept token is used until shortly before it
// expires, then a new one is asked for.
func TestTokenRenewedAtExpiry(t *testing.T) {
	h := newHarness(t, nil)
	h.sim.TokenLife = 2 * time.Second // kept for 2 s minus a tenth
	s := h.gradedLaunch("u-1", "littles-law")
	h.sim.WaitScores(1, 5*time.Second)
	h.clock.Add(2 * time.Second)
	h.tool.ProgressChanged(context.Background(), s.Learner, "littles-law")
	h.sim.WaitScores(2, 5*time.Second)
	if n := h.sim.TokensIssued(); n != 2 {
		t.Errorf("%d tokens issued, want 2 (the first expired)", n)
	}
}

func waitGrade(t *testing.T, st *store.Store, learner string, ok func(store.LTIGrade) bool) store.LTIGrade {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		gs, err := st.LTIGrades(context.Background(), store.LTIGradeQuery{Learner: learner})
		if err != nil {
			t.Fatal(err)
		}
		if len(gs) == 1 && ok(gs[0]) {
			return gs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("grade never reached the state wanted: %+v", gs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDeepLinkingResponse(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	form, cookie := h.login(ltitest.Launch{User: "teacher", DeepLink: true, Multiple: false, Roles: []string{ltitest.RoleInstructor}})
	l, err := h.launch(form, cookie)
	if err != nil {
		t.Fatal(err)
	}
	if l.MessageType != lti.MessageDeepLinking || l.DeepLinking.ReturnURL != h.sim.URL+"/deep-link-return" {
		t.Fatalf("launch %+v", l)
	}
	id, err := h.tool.BeginDeepLink(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	two := []lti.ContentItem{{Type: "ltiResourceLink", Title: "a"}, {Type: "ltiResourceLink", Title: "b"}}
	if _, _, err := h.tool.DeepLinkResponse(ctx, id, two, ""); reason(err) != lti.ReasonDeepLink {
		t.Errorf("two items where one is accepted: %s", reason(err))
	}
	item := lti.ContentItem{Type: "ltiResourceLink", Title: "Little's law", URL: h.srv.URL + "/lessons/littles-law",
		LineItem: &lti.LineItem{ScoreMaximum: 7, Label: "Little's law", ResourceID: "littles-law"}}
	ret, tok, err := h.tool.DeepLinkResponse(ctx, id, []lti.ContentItem{item}, "Added")
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.PostForm(ret, url.Values{lti.DeepLinkForm: {tok}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("platform answered %d", res.StatusCode)
	}
	items := h.sim.DeepLinkItems()
	if len(items) != 1 || len(items[0]) != 1 || items[0][0]["url"] != item.URL || items[0][0]["lineItem"].(map[string]any)["scoreMaximum"] != 7.0 {
		t.Errorf("platform got %v", items)
	}
	if _, _, err := h.tool.DeepLinkResponse(ctx, id, []lti.ContentItem{item}, ""); reason(err) != lti.ReasonDeepLink {
		t.Errorf("answering a request twice: %s", reason(err))
	}
}

func TestLoginRefusals(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	ok := url.Values{"iss": {h.sim.URL}, "login_hint": {"h"}, "target_link_uri": {h.srv.URL + "/"}, "client_id": {h.sim.ClientID}}
	for _, c := range []struct {
		name   string
		change func(url.Values)
		want   string
	}{
		{"no iss", func(v url.Values) { v.Del("iss") }, lti.ReasonClaims},
		{"no login_hint", func(v url.Values) { v.Del("login_hint") }, lti.ReasonClaims},
		{"unknown issuer", func(v url.Values) { v.Set("iss", "https://lms.example.org") }, lti.ReasonPlatform},
		{"unknown client id", func(v url.Values) { v.Set("client_id", "nope") }, lti.ReasonPlatform},
		{"unknown deployment", func(v url.Values) { v.Set("lti_deployment_id", "nope") }, lti.ReasonDeployment},
	} {
		v := url.Values{}
		for k, vs := range ok {
			v[k] = vs
		}
		c.change(v)
		_, err := h.tool.Login(ctx, lti.LoginRequestOf(v), h.srv.URL+"/lti/launch")
		if got := reason(err); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestIsInstructor(t *testing.T) {
	for _, c := range []struct {
		roles []string
		want  bool
	}{
		{[]string{ltitest.RoleLearner}, false},
		{[]string{ltitest.RoleInstructor}, true},
		{[]string{"http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"}, true},
		{[]string{"http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"}, true},
		{[]string{"http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"}, false}, // an instructor somewhere, not in this course
		{[]string{"Instructor"}, true},
		{nil, false},
	} {
		if got := lti.IsInstructor(c.roles); got != c.want {
			t.Errorf("IsInstructor(%v) = %v, want %v", c.roles, got, c.want)
		}
	}
}
