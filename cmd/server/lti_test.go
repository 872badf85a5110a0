package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"capacitylab/lti"
	"capacitylab/lti/ltitest"
)

// runCmd runs the program with args and returns what it printed.
func runCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, &out, &errOut)
	return out.String() + errOut.String(), err
}

// addArgs are `server lti add` flags registering p.
func addArgs(p lti.Platform, data string) []string {
	args := []string{"lti", "add", "--data", data, "--name", "Simulated LMS", "--issuer", p.Issuer, "--client-id", p.ClientID,
		"--auth-url", p.AuthURL, "--token-url", p.TokenURL, "--jwks-url", p.JWKSURL}
	for _, d := range p.Deployments {
		args = append(args, "--deployment", d)
	}
	return args
}

// simAndServer starts a platform simulator, registers it with `server lti
// add` in a new data directory and starts a server there; the simulator
// expects launches back at the server's address.
func simAndServer(t *testing.T) (*ltitest.Platform, *running) {
	t.Helper()
	sim := ltitest.Start(t)
	data := t.TempDir()
	if out, err := runCmd(t, addArgs(sim.Registration(), data)...); err != nil {
		t.Fatalf("lti add: %v %s", err, out)
	}
	srv := start(t, nil, "--data", data)
	sim.ToolJWKS, sim.ToolLaunch = srv.url+"/lti/jwks.json", srv.url+"/lti/launch"
	return sim, srv
}

func TestLTICommands(t *testing.T) {
	data := t.TempDir()
	p := lti.Platform{Issuer: "https://moodle.example.org", ClientID: "abc123", Deployments: []string{"1", "2"},
		AuthURL: "https://moodle.example.org/mod/lti/auth.php", TokenURL: "https://moodle.example.org/mod/lti/token.php",
		JWKSURL: "https://moodle.example.org/mod/lti/certs.php"}
	out, err := runCmd(t, addArgs(p, data)...)
	if err != nil || !strings.Contains(out, "registered Simulated LMS") || !strings.Contains(out, "deployments 1, 2") ||
		!strings.Contains(out, "frame the tool from https://moodle.example.org") {
		t.Fatalf("add: %v\n%s", err, out)
	}
	out, err = runCmd(t, "lti", "list", "--data", data)
	if err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), "stored Simulated LMS https://moodle.example.org abc123 1,2 https://moodle.example.org") ||
		!strings.Contains(out, "the tool has no key yet") {
		t.Errorf("list: %v\n%s", err, out)
	}
	// Mistakes name the flag and what is allowed, and exit 2.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lti", "add", "--data", data, "--issuer", "https://x.example.org", "--client-id", "c", "--deployment", "1",
			"--auth-url", "https://x.example.org/a", "--token-url", "https://x.example.org/t"}, `--jwks-url "" is not an absolute URL`},
		{[]string{"lti", "add", "--data", data, "--issuer", "https://x.example.org", "--client-id", "c",
			"--auth-url", "https://x.example.org/a", "--token-url", "https://x.example.org/t", "--jwks-url", "https://x.example.org/k"}, "--deployment is empty"},
		{[]string{"lti", "add", "--data", data, "--issuer", "https://x.example.org", "--client-id", "c", "--deployment", "1",
			"--auth-url", "http://x.example.org/a", "--token-url", "https://x.example.org/t", "--jwks-url", "https://x.example.org/k"}, "--auth-url \"http://x.example.org/a\" is plain http"},
		{[]string{"lti", "remove", "--data", data, "--issuer", "https://nope.example.org", "--client-id", "c"}, "no stored platform"},
		{[]string{"lti", "frobnicate"}, "unknown subcommand"},
		{[]string{"lti"}, "server lti add"},
	} {
		out, err := runCmd(t, c.args...)
		var u usageError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v (%s), want a usage error with %q", c.args[:2], err, out, c.want)
		}
	}
	// Keys: the first rotation makes the first key, which signs at once;
	// the second's key signs after the publish delay, and until it does a
	// third rotation is refused unless --now.
	for range 2 {
		out, err = runCmd(t, "lti", "rotate-key", "--data", data)
		if err != nil || !strings.Contains(out, "new key") {
			t.Fatalf("rotate-key: %v %s", err, out)
		}
	}
	out, err = runCmd(t, "lti", "rotate-key", "--data", data)
	if err == nil || !strings.Contains(err.Error(), "rotate again after that, or now with --now") {
		t.Errorf("a second rotation within the delay: %v %s", err, out)
	}
	if out, err = runCmd(t, "lti", "rotate-key", "--now", "--data", data); err != nil {
		t.Fatalf("rotate-key --now: %v %s", err, out)
	}
	out, _ = runCmd(t, "lti", "list", "--data", data)
	if n := strings.Count(out, "\n") - strings.Count(out[:strings.Index(out, "KEY")], "\n"); n != 4 {
		t.Errorf("list after three rotations shows %d key lines, want a header and 3 keys:\n%s", n, out)
	}
	if out, err := runCmd(t, "lti", "remove", "--data", data, "--issuer", p.Issuer, "--client-id", p.ClientID); err != nil || !strings.Contains(out, "removed") {
		t.Errorf("remove: %v %s", err, out)
	}
}

// TestLTIServerEndToEnd: a platform added with `server lti add`, a server
// on its data directory, a graded launch, progress, and the score posted.
func TestLTIServerEndToEnd(t *testing.T) {
	sim, srv := simAndServer(t)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res := sim.Do(c, srv.url+"/lti/login", ltitest.Launch{User: "learner-7", Graded: true, Target: srv.url + "/lessons/littles-law"})
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("launch %d", res.StatusCode)
	}
	if s := sim.WaitScores(1, 10*time.Second)[0]; s.ScoreGiven != 0 || s.ScoreMaximum != 5 {
		t.Errorf("first score %+v", s)
	}
	res, err := c.PostForm(srv.url+"/lessons/littles-law/predict/littles-double", url.Values{"action": {"lock"}, "option": {"a"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if s := sim.WaitScores(2, 10*time.Second)[1]; s.ScoreGiven != 1 || s.UserID != "learner-7" {
		t.Errorf("score after a prediction %+v", s)
	}
	if !strings.Contains(srv.stderr.String(), "lti platforms registered") || !strings.Contains(srv.stderr.String(), "lti: score posted") {
		t.Errorf("no log of the platforms or the posted score:\n%s", srv.stderr.String())
	}
}

func TestLTIPlatformsFileAndPublicURL(t *testing.T) {
	sim := ltitest.Start(t)
	p := sim.Registration()
	file := filepath.Join(t.TempDir(), "platforms.json")
	b, _ := json.Marshal(map[string]any{"platforms": []map[string]any{{"name": "Canvas test", "issuer": "https://canvas.instructure.com",
		"client_id": "10000000000001", "deployments": []string{"7:abc"}, "auth_url": "https://sso.canvaslms.com/api/lti/authorize_redirect",
		"token_url": "https://sso.canvaslms.com/login/oauth2/token", "jwks_url": "https://sso.canvaslms.com/api/lti/security/jwks",
		"frame_origins": []string{"https://school.instructure.com"}}, {"issuer": p.Issuer, "client_id": p.ClientID,
		"deployments": p.Deployments, "auth_url": p.AuthURL, "token_url": p.TokenURL, "jwks_url": p.JWKSURL}}})
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := start(t, map[string]string{"LTI_PLATFORMS": file, "PUBLIC_URL": "https://lab.example.org"}, "--data", t.TempDir())
	res, err := http.Get(srv.url + "/lti")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), "2 platforms are registered") || !strings.Contains(string(page), "https://lab.example.org/lti/login") {
		t.Errorf("/lti does not show the file's platforms or the public URL:\n%s", page)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'self' "+sim.URL+" https://school.instructure.com;") {
		t.Errorf("CSP %q: want the file's platforms' frame origins", csp)
	}

	// A bad file stops the server at start, naming the file and the field.
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"platforms": [{"issuer": "https://x.example.org", "client_id": "c", "deployments": ["1"], "auth_url": "https://x.example.org/a", "token_url": "https://x.example.org/t"}]}`), 0o600)
	var out bytes.Buffer
	err = run(context.Background(), []string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--lti-platforms", bad}, func(string) string { return "" }, &out, &out)
	if err == nil || !strings.Contains(err.Error(), bad+": platform 1: jwks_url") {
		t.Errorf("bad platforms file: %v", err)
	}
	// A public URL that is not an origin is a usage error.
	err = run(context.Background(), []string{"--data", t.TempDir(), "--public-url", "https://lab.example.org/course"}, func(string) string { return "" }, &out, &out)
	var u usageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "--public-url") {
		t.Errorf("a public URL with a path: %v", err)
	}
}
