package main

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"

	"capacitylab/affinity"
)

// composeFile is the part of compose.yaml these tests read.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Entrypoint  []string          `yaml:"entrypoint"`
		Volumes     []string          `yaml:"volumes"`
		Environment map[string]string `yaml:"environment"`
		Profiles    []string          `yaml:"profiles"`
		Ports       []string          `yaml:"ports"`
		DependsOn   any               `yaml:"depends_on"` // a list, or a map of conditions
		Cpuset      string            `yaml:"cpuset"`
		CapAdd      []string          `yaml:"cap_add"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// interpolate replaces ${NAME:-default} with the default, as compose does
// with NAME unset.
func interpolate(s string) string {
	return regexp.MustCompile(`\$\{[A-Z_]+:-([^}]*)\}`).ReplaceAllString(s, "$1")
}

// compose.yaml: the default server keeps the SQLite file (no
// DATABASE_URL); server-postgres, behind the postgres profile, reaches the
// postgres service with the user, password and database that service
// creates, once it is healthy, and the server's flags take its URL.
func TestComposePostgres(t *testing.T) {
	raw, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if url, ok := c.Services["server"].Environment["DATABASE_URL"]; ok {
		t.Errorf("the default server has DATABASE_URL %q: it must keep the SQLite file", url)
	}
	sp, pg := c.Services["server-postgres"], c.Services["postgres"]
	if sp.Image != c.Services["server"].Image || pg.Image == "" {
		t.Fatalf("server-postgres image %q (server's %q), postgres image %q", sp.Image, c.Services["server"].Image, pg.Image)
	}
	if len(sp.Profiles) != 1 || sp.Profiles[0] != "postgres" {
		t.Errorf("server-postgres has profiles %v, want [postgres]: the default `docker compose up` stays SQLite", sp.Profiles)
	}
	if !slices.Contains(pg.Profiles, "postgres") || !slices.Contains(pg.Profiles, "scale") {
		t.Errorf("postgres has profiles %v, want postgres and scale (and no default): the default `docker compose up` stays SQLite", pg.Profiles)
	}
	dep, _ := sp.DependsOn.(map[string]any)
	cond, _ := dep["postgres"].(map[string]any)
	if cond["condition"] != "service_healthy" || len(pg.Healthcheck.Test) == 0 {
		t.Errorf("server-postgres must wait for a healthy postgres: depends_on %+v, healthcheck %v", sp.DependsOn, pg.Healthcheck.Test)
	}
	if _, ok := c.Volumes["pgdata"]; !ok {
		t.Error("no pgdata volume: the database would go with its container")
	}
	dbURL := interpolate(sp.Environment["DATABASE_URL"])
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatalf("server-postgres's DATABASE_URL %q: %v", dbURL, err)
	}
	env := pg.Environment
	if cfg.Host != "postgres" || cfg.Port != 5432 || cfg.User != env["POSTGRES_USER"] ||
		cfg.Password != interpolate(env["POSTGRES_PASSWORD"]) || cfg.Database != env["POSTGRES_DB"] {
		t.Errorf("server-postgres reaches %s@%s:%d/%s, but the postgres service makes user %q, database %q (and its password)",
			cfg.User, cfg.Host, cfg.Port, cfg.Database, env["POSTGRES_USER"], env["POSTGRES_DB"])
	}
	got, err := parseFlags(nil, func(k string) string { return interpolate(sp.Environment[k]) }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got.databaseURL != dbURL {
		t.Errorf("the server read DATABASE_URL as %q, want %q", got.databaseURL, dbURL)
	}
}

// compose.yaml's scale profile: two web replicas and two runners on the
// postgres service (the same URL as server-postgres), each replica
// reachable only through the load balancer, whose nginx.conf sends to
// both and passes websockets through; the runners' cpusets set apart,
// each defaulting to a pair that a host of two processors has; and the
// server reads each one's environment as the role it is meant to have.
func TestComposeScale(t *testing.T) {
	raw, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	wantURL := c.Services["server-postgres"].Environment["DATABASE_URL"]
	for _, name := range []string{"web-a", "web-b", "runner-a", "runner-b", "lb"} {
		s, ok := c.Services[name]
		if !ok {
			t.Fatalf("compose.yaml has no service %s", name)
		}
		if len(s.Profiles) != 1 || s.Profiles[0] != "scale" {
			t.Errorf("%s has profiles %v, want [scale]", name, s.Profiles)
		}
	}
	for name, role := range map[string]string{"web-a": "web", "web-b": "web", "runner-a": "runner", "runner-b": "runner"} {
		s := c.Services[name]
		if s.Image != c.Services["server"].Image {
			t.Errorf("%s runs image %q, want the server's %q", name, s.Image, c.Services["server"].Image)
		}
		if s.Environment["ROLE"] != role || s.Environment["DATABASE_URL"] != wantURL {
			t.Errorf("%s: ROLE %q, DATABASE_URL %q; want %q and server-postgres's %q", name, s.Environment["ROLE"], s.Environment["DATABASE_URL"], role, wantURL)
		}
		if len(s.Ports) != 0 {
			t.Errorf("%s publishes %v: only the load balancer should be reached from outside", name, s.Ports)
		}
		dep, _ := s.DependsOn.(map[string]any)
		cond, _ := dep["postgres"].(map[string]any)
		if cond["condition"] != "service_healthy" {
			t.Errorf("%s must wait for a healthy postgres: depends_on %+v", name, s.DependsOn)
		}
		got, err := parseFlags(nil, func(k string) string { return interpolate(s.Environment[k]) }, io.Discard)
		if err != nil {
			t.Fatalf("%s's environment: %v", name, err)
		}
		if got.databaseURL != interpolate(wantURL) || got.role != role {
			t.Errorf("%s: the server read role %q, database %q", name, got.role, got.databaseURL)
		}
	}
	// Each runner's cpuset is its own variable (so a host of 4 or more can
	// give them disjoint sets), and its default names 2 processors that
	// every host of two has: docker refuses to start a container whose
	// cpuset names a processor the host lacks, and a runner needs a pair.
	for name, env := range map[string]string{"runner-a": "RUNNER_A_CPUS", "runner-b": "RUNNER_B_CPUS"} {
		s := c.Services[name]
		if !strings.HasPrefix(s.Cpuset, "${"+env+":-") {
			t.Errorf("%s's cpuset %q is not ${%s:-...}: it cannot be set apart from the other runner's", name, s.Cpuset, env)
		}
		cpus, err := affinity.ParseCPUList(interpolate(s.Cpuset))
		if err != nil {
			t.Errorf("%s's default cpuset: %v", name, err)
			continue
		}
		if len(cpus) != 2 || slices.Max(cpus) >= 2 {
			t.Errorf("%s's default cpuset %v: want processors 0 and 1, a pair that a host of two processors has", name, cpus)
		}
	}
	for name, s := range c.Services {
		if len(s.CapAdd) > 0 {
			t.Errorf("%s adds capabilities %v: no service needs one (a capability such as SYS_NICE does nothing for the image's unprivileged user)", name, s.CapAdd)
		}
	}
	lb := c.Services["lb"]
	if len(lb.Ports) != 1 || !slices.Contains(lb.Volumes, "./deploy/nginx/nginx.conf:/etc/nginx/nginx.conf:ro") {
		t.Fatalf("lb: ports %v, volumes %v", lb.Ports, lb.Volumes)
	}
	conf, err := os.ReadFile("../../deploy/nginx/nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server web-a:8080", "server web-b:8080", "proxy_pass http://web;", "proxy_set_header Upgrade $http_upgrade;",
		"proxy_set_header Connection $connection_upgrade;", "proxy_http_version 1.1;", "proxy_set_header X-Forwarded-For"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("deploy/nginx/nginx.conf lacks %q", want)
		}
	}
}
