package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A database that cannot be reached stops the server at start with one
// line naming what failed, and never the password, whether the URL comes
// from --database-url or DATABASE_URL.
func TestUnreachableDatabaseFailsAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now
	const password = "Hunter2-secret"
	dbURL := fmt.Sprintf("postgres://capacitylab:%s@127.0.0.1:%d/capacitylab", password, port)
	for _, c := range []struct {
		what string
		args []string
		env  map[string]string
	}{
		{"the flag", []string{"--database-url", dbURL}, nil},
		{"the environment", nil, map[string]string{"DATABASE_URL": dbURL}},
	} {
		data := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var stdout, stderr strings.Builder
		err := run(ctx, append([]string{"--addr", "127.0.0.1:0", "--data", data}, c.args...), func(k string) string { return c.env[k] }, &stdout, &stderr)
		cancel()
		if err == nil {
			t.Fatalf("%s: the server started without its database", c.what)
		}
		msg := err.Error()
		want := fmt.Sprintf("store: cannot connect to Postgres at 127.0.0.1:%d", port)
		if !strings.HasPrefix(msg, want) || strings.Contains(msg, password) || strings.Contains(msg, "\n") {
			t.Errorf("%s: %q, want one line starting %q, without the password", c.what, msg, want)
		}
		if strings.Contains(stdout.String(), "serving on") {
			t.Errorf("%s: it printed that it serves", c.what)
		}
		if _, err := os.Stat(filepath.Join(data, dbFile)); err == nil {
			t.Errorf("%s: a SQLite file was made beside the Postgres URL", c.what)
		}
	}
}

// Two servers on one Postgres (CAPACITYLAB_TEST_POSTGRES, a schema of
// this test's own) share the learners' progress: a prediction locked on
// one shows on the other's lesson page at once.
func TestTwoServersShareOnePostgres(t *testing.T) {
	env := map[string]string{"DATABASE_URL": postgresSchemaURL(t, "two servers on one database")}

	a := start(t, env, "--data", t.TempDir())
	bb := start(t, env, "--data", t.TempDir())
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.PostForm(a.url+"/lessons/sample/predict/sample-predict", url.Values{"action": {"lock"}, "option": {"c"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	ua, _ := url.Parse(a.url)
	ub, _ := url.Parse(bb.url)
	jar.SetCookies(ub, jar.Cookies(ua))
	if _, body := get(t, c, bb.url+"/lessons/sample"); !strings.Contains(body, "You predicted <strong>As many as are sent</strong>") {
		t.Errorf("the prediction locked on server A is not on server B's page:\n%.2000s", body)
	}
}
