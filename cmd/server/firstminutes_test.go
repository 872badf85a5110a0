package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

// Without --addr or ADDR the server listens on 127.0.0.1:8080, this
// machine only; --addr and ADDR choose another address, every interface
// included.
func TestDefaultAddrIsThisMachineOnly(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"default", nil, nil, "127.0.0.1:8080"},
		{"flag", []string{"--addr", ":8080"}, nil, ":8080"},
		{"env", nil, map[string]string{"ADDR": "0.0.0.0:9000"}, "0.0.0.0:9000"},
	} {
		cfg, err := parseFlags(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if cfg.addr != tt.want {
			t.Errorf("%s: listens on %q, want %q", tt.name, cfg.addr, tt.want)
		}
	}
}

// The log warns when the server listens on every interface, saying who
// may then use it and what the instructor key keeps to instructors; on
// one address it says nothing.
func TestExposureOnEveryInterface(t *testing.T) {
	addr := func(s string) net.Addr {
		a, err := net.ResolveTCPAddr("tcp", s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, tt := range []struct {
		addr string
		key  bool
		want string // "" for no warning
	}{
		{"127.0.0.1:8080", false, ""},
		{"[::1]:8080", false, ""},
		{"192.168.1.20:8080", false, ""},
		{"0.0.0.0:8080", false, "without --instructor-key: anyone who reaches this address may read the lessons, run sweeps, and start class sessions"},
		{"[::]:8080", false, "without --instructor-key"},
		{"[::]:8080", true, "starting a class session needs the instructor key"},
	} {
		got := exposure(addr(tt.addr), tt.key)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("exposure(%s, key %v) = %q, want %q", tt.addr, tt.key, got, tt.want)
		}
	}
}

// -h prints each flag as "--name ARG" on a line of its own (ARG one word,
// or none for a switch), then its text indented; backquotes in a usage never swallow a command into the
// argument's name (they once printed "-lti-platforms server lti add").
func TestHelpNamesArguments(t *testing.T) {
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, func(string) string { return "" }, io.Discard, &stderr); err != nil {
		t.Fatalf("--help: %v", err)
	}
	out := stderr.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if lines[0] != "usage: server [flags]" {
		t.Errorf("first line %q", lines[0])
	}
	flagLine := regexp.MustCompile(`^  --([a-z-]+)( [^ ]+)?$`)
	seen := map[string]string{}
	for _, l := range lines[1:] {
		switch {
		case strings.HasPrefix(l, "      ") && strings.TrimSpace(l) != "":
		case flagLine.MatchString(l):
			m := flagLine.FindStringSubmatch(l)
			seen["--"+m[1]] = strings.TrimSpace(m[2])
		default:
			t.Errorf("line is neither a flag nor its text: %q", l)
		}
		if strings.Contains(l, "`") {
			t.Errorf("a backquote in the usage: %q", l)
		}
	}
	for _, f := range newServerFlags().set.Flags() {
		if _, ok := seen[f]; !ok {
			t.Errorf("%s is not listed:\n%s", f, out)
		}
	}
	for flag, arg := range map[string]string{"--addr": "host:port", "--lti-platforms": "file", "--data": "directory", "--queue": "value"} {
		if seen[flag] != arg {
			t.Errorf("%s's argument is %q, want %q", flag, seen[flag], arg)
		}
	}
	if !strings.Contains(out, `beside those "server lti add" stored`) {
		t.Errorf("--lti-platforms's text lost its command:\n%s", out)
	}
}

// `lessons check` counts the lessons the site lists (its /api/lessons),
// and names the fixtures it serves without listing them.
func TestLessonsCheckCountsListedLessons(t *testing.T) {
	srv := start(t, nil, "--data", t.TempDir())
	res, err := http.Get(srv.url + "/api/lessons")
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		Lessons []struct {
			Slug string `json:"slug"`
		} `json:"lessons"`
	}
	err = json.NewDecoder(res.Body).Decode(&api)
	res.Body.Close()
	if err != nil || len(api.Lessons) == 0 {
		t.Fatalf("/api/lessons: %v, %d lessons", err, len(api.Lessons))
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"lessons", "check"}, func(string) string { return "" }, &stdout, io.Discard); err != nil {
		t.Fatalf("lessons check: %v\n%s", err, stdout.String())
	}
	want := fmt.Sprintf("ok: %d lesson(s) the site lists, and 1 test fixture(s) it serves without listing (sample)\n", len(api.Lessons))
	if stdout.String() != want {
		t.Errorf("lessons check says %q, want %q", stdout.String(), want)
	}
	for _, l := range api.Lessons {
		if l.Slug == "sample" {
			t.Error("the site lists the sample fixture")
		}
	}
}

// The README's first five minutes stay true: the address the server
// prints by default, lesson 1's address (the first lesson the site
// lists), /teach, how to listen on every interface and what the
// instructor key protects there, and how to stop a lab started in the
// background with go run.
func TestREADMEFirstMinutes(t *testing.T) {
	text := readme(t)
	_, part, ok := strings.Cut(text, "### The first five minutes\n")
	if !ok {
		t.Fatal("the README has no section The first five minutes")
	}
	part, _, _ = strings.Cut(part, "\n## ")
	c, err := loadCourse(config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	course, err := c()
	if err != nil {
		t.Fatal(err)
	}
	first := course.Listed()[0]
	for _, want := range []string{
		"serving on " + serveURL(mustAddr(t, defaultAddr)),
		"`/lessons/" + first.Slug + "`",
		"*" + first.Title + "*",
		"**`/teach`**",
		"`--addr :8080`",
		"`--instructor-key`",
		"the instructor key\nprotects starting a class session",
		"Ctrl-C",
		"`kill %1`",
		"`kill $!` stops only `go run`",
	} {
		if !strings.Contains(part, want) {
			t.Errorf("the first five minutes lack %q", want)
		}
	}
	if !strings.Contains(text, "go run ./cmd/server     # serves the course on "+serveURL(mustAddr(t, defaultAddr))) {
		t.Errorf("the two commands do not say the server's default address %s", serveURL(mustAddr(t, defaultAddr)))
	}
}

func mustAddr(t *testing.T, s string) net.Addr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The Docker image's server listens on every interface of its container,
// or compose's published port would reach nothing.
func TestDockerImageListensInItsContainer(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ENV .*\bADDR=(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Dockerfile sets no ADDR: the server would listen on 127.0.0.1 inside its container")
	}
	if host, _, err := net.SplitHostPort(string(m[1])); err != nil || (host != "" && !net.ParseIP(host).IsUnspecified()) {
		t.Errorf("the Dockerfile's ADDR=%s is not every interface", m[1])
	}
}
