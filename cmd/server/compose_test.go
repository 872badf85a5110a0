package main

import (
	"io"
	"os"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"gopkg.in/yaml.v3"
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
	for name, s := range map[string][]string{"server-postgres": sp.Profiles, "postgres": pg.Profiles} {
		if len(s) != 1 || s[0] != "postgres" {
			t.Errorf("%s has profiles %v, want [postgres]: the default `docker compose up` stays SQLite", name, s)
		}
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
