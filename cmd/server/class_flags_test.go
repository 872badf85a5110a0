package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"capacitylab/classroom"
)

// TestSessionIdleAccepted reads --session-idle and SESSION_IDLE at the
// edges of what is allowed and checks the duration the server passes on
// to the class sessions. (The refusals are cases of TestBadFlags.)
func TestSessionIdleAccepted(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want time.Duration
	}{
		// Neither flag nor environment: the classroom package's default.
		{"default", nil, nil, classroom.DefaultIdle},
		// The floor itself is allowed.
		{"one minute", []string{"--session-idle", "1m"}, nil, time.Minute},
		// The ceiling itself is allowed.
		{"one week", []string{"--session-idle", "168h"}, nil, 168 * time.Hour},
		// A usual class length, written the way the help suggests.
		{"ninety minutes", []string{"--session-idle", "90m"}, nil, 90 * time.Minute},
		// The environment is read when there is no flag (4h30m is not the default).
		{"from SESSION_IDLE", nil, map[string]string{"SESSION_IDLE": "4h30m"}, 4*time.Hour + 30*time.Minute},
		// The flag wins over the environment, even over a bad value there.
		{"flag over SESSION_IDLE", []string{"--session-idle", "2h"}, map[string]string{"SESSION_IDLE": "soon"}, 2 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseFlags(tt.args, func(k string) string { return tt.env[k] }, io.Discard)
			if err != nil {
				t.Fatalf("parseFlags(%q) with env %v: %v", tt.args, tt.env, err)
			}
			if cfg.sessionIdle != tt.want {
				t.Errorf("session idle = %v, want %v", cfg.sessionIdle, tt.want)
			}
		})
	}
}

// TestInstructorKey starts the real server with an instructor key (from
// the flag or from INSTRUCTOR_KEY) and starts class sessions through
// POST /api/sessions: without the key, or with a wrong one, the server
// refuses with 403 and says why; with the key it answers 201 with a
// join code and host link. Without a configured key anyone may start one.
func TestInstructorKey(t *testing.T) {
	const key = "correct horse battery"
	servers := []struct {
		name string
		env  map[string]string
		args []string
		need bool // whether this server needs a key
	}{
		// The key given on the command line.
		{"flag", nil, []string{"--instructor-key", key}, true},
		// The key given in the environment.
		{"env", map[string]string{"INSTRUCTOR_KEY": key}, nil, true},
		// No key configured: starting a session is open to anyone.
		{"none", nil, nil, false},
	}
	for _, sv := range servers {
		t.Run(sv.name, func(t *testing.T) {
			r := start(t, sv.env, append([]string{"--data", t.TempDir()}, sv.args...)...)
			tests := []struct {
				name   string
				body   string
				status int
				says   string // part of the refusal, or "" for a session
			}{
				// No key field at all.
				{"no key", `{"lesson": "sample"}`, http.StatusForbidden, "needs the instructor key"},
				// An empty key is no key.
				{"empty key", `{"lesson": "sample", "key": ""}`, http.StatusForbidden, "needs the instructor key"},
				// A wrong key is told apart from a missing one.
				{"wrong key", `{"lesson": "sample", "key": "correct horse"}`, http.StatusForbidden, "is not this server's"},
				// The configured key.
				{"right key", `{"lesson": "sample", "key": "` + key + `"}`, http.StatusCreated, ""},
			}
			for _, tt := range tests {
				status, says := tt.status, tt.says
				if !sv.need {
					status, says = http.StatusCreated, "" // any key, or none, is fine
				}
				res, err := http.Post(r.url+"/api/sessions", "application/json", strings.NewReader(tt.body))
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != status {
					t.Errorf("%s: POST /api/sessions = %d, want %d\n%s", tt.name, res.StatusCode, status, b)
					continue
				}
				if says != "" {
					if !strings.Contains(string(b), says) {
						t.Errorf("%s: refusal %s does not say %q", tt.name, b, says)
					}
					continue
				}
				var out struct {
					Code    string `json:"code"`
					HostURL string `json:"host_url"`
				}
				if err := json.Unmarshal(b, &out); err != nil || len(out.Code) != classroom.CodeLength || !strings.Contains(out.HostURL, "token=") {
					t.Errorf("%s: created session %s (%v), want a %d-character code and a host link with its token", tt.name, b, err, classroom.CodeLength)
					continue
				}
				// The session exists: its join page names it.
				if code, page := get(t, http.DefaultClient, r.url+"/join/"+out.Code); code != 200 || !strings.Contains(page, out.Code) {
					t.Errorf("%s: GET /join/%s = %d, want the join page for the new session", tt.name, out.Code, code)
				}
			}
		})
	}
}
