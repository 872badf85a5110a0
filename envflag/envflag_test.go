package envflag

import (
	"errors"
	"flag"
	"strings"
	"testing"
)

// TestParse checks where a setting's value comes from: the flag when
// given (even empty), else the environment when not blank, else the
// default; and that Name says which.
func TestParse(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		env         map[string]string
		value, from string
	}{
		// Nothing given: the default, named by its variable.
		{"default", nil, nil, "8", "QUEUE"},
		// The environment.
		{"env", nil, map[string]string{"QUEUE": "20"}, "20", "QUEUE"},
		// A blank variable counts as unset.
		{"blank env", nil, map[string]string{"QUEUE": "  "}, "8", "QUEUE"},
		// The flag wins over the environment.
		{"flag wins", []string{"--queue", "30"}, map[string]string{"QUEUE": "20"}, "30", "--queue"},
		// A flag given empty is given: the command reports it.
		{"empty flag", []string{"--queue="}, map[string]string{"QUEUE": "20"}, "", "--queue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New("server")
			q := s.Add(Setting{Flag: "queue", Env: "QUEUE", Default: "8", Allowed: "1 to 100", Usage: "runs the queue holds"})
			if err := s.Parse(tt.args, func(k string) string { return tt.env[k] }, nil); err != nil {
				t.Fatal(err)
			}
			if q.Value != tt.value || q.Name() != tt.from {
				t.Errorf("value %q from %s, want %q from %s", q.Value, q.Name(), tt.value, tt.from)
			}
		})
	}
}

// TestParseMistakes checks -h, an unknown flag and a plain flag's bad
// value.
func TestParseMistakes(t *testing.T) {
	s := New("load")
	s.Add(Setting{Flag: "target", Env: "TARGET", Default: "http://127.0.0.1:8000", Usage: "where requests go"})
	s.FlagSet().Float64("seconds", 20, "length of each window")
	var usage strings.Builder
	err := s.Parse([]string{"-h"}, func(string) string { return "" }, &usage)
	if !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(usage.String(), "usage: load [flags]\n") ||
		!strings.Contains(usage.String(), "where requests go (env TARGET, default http://127.0.0.1:8000)") {
		t.Errorf("-h: %v\n%s", err, usage.String())
	}
	var ue *UsageError
	err = s.Parse([]string{"--rps", "40"}, func(string) string { return "" }, nil)
	if !errors.As(err, &ue) || ue.Error() != "flag provided but not defined: -rps; want only the flags --seconds, --target (-h explains them)" {
		t.Errorf("unknown flag: %v", err)
	}
	err = s.Parse([]string{"--seconds", "soon"}, func(string) string { return "" }, nil)
	if !errors.As(err, &ue) || !strings.Contains(ue.Error(), `invalid value "soon" for flag -seconds`) {
		t.Errorf("bad value: %v", err)
	}
}

// TestUsage checks -h's text: each flag as "--name ARG" with its text
// under it; a word in backquotes names the argument, a command in
// backquotes stays in the text; a switch has no argument; a plain flag's
// default follows its text unless it is its type's zero.
func TestUsage(t *testing.T) {
	s := New("proxy")
	s.Add(Setting{Flag: "upstream", Env: "UPSTREAM", Default: "http://127.0.0.1:8000", Usage: "the `URL` of the service behind"})
	s.Add(Setting{Flag: "platforms", Env: "PLATFORMS", Shown: "none", Usage: "a JSON file, beside those `server lti add` stored"})
	s.Add(Setting{Flag: "queue", Env: "QUEUE", Default: "8", Allowed: "1 to 100", Usage: "runs the queue holds"})
	s.FlagSet().Bool("json", false, "one JSON object per row")
	s.FlagSet().String("rate", "40,48", "offered rates, arrivals a second, one window each")
	s.FlagSet().Int("closed", 0, "closed loop with `N` clients")
	var out strings.Builder
	s.Usage(&out)
	want := `usage: proxy [flags]
  --closed N
      closed loop with N clients
  --json
      one JSON object per row
  --platforms value
      a JSON file, beside those ` + "`server lti add`" + ` stored (env PLATFORMS, default none)
  --queue value
      runs the queue holds (env QUEUE, default 8, 1 to 100)
  --rate string
      offered rates, arrivals a second, one window each (default 40,48)
  --upstream URL
      the URL of the service behind (env UPSTREAM, default http://127.0.0.1:8000)
`
	if out.String() != want {
		t.Errorf("usage:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestCheckTable checks the README check on a small table: every kind of
// difference is reported, and a true table passes.
func TestCheckTable(t *testing.T) {
	s := New("lab")
	s.Add(Setting{Flag: "limit", Env: "LIMIT", Default: "0", Allowed: "0 to 100000", Usage: "admission queue depth"})
	s.FlagSet().Bool("json", false, "rows as JSON")
	good := "### `lab`\n\n| flag | env | default | allowed | meaning |\n|---|---|---|---|---|\n" +
		"| `--limit` | `LIMIT` | 0 (off) | 0 to 100000 | the door |\n| `--json` | | | | JSON |\n\nAfter.\n"
	if d := s.CheckTable(good, "### `lab`", nil); len(d) != 0 {
		t.Errorf("a true table: %v", d)
	}
	bad := strings.NewReplacer("`LIMIT`", "`LIMITS`", "| `--json` | | | | JSON |", "| `--jsn` | | | | JSON |").Replace(good)
	d := s.CheckTable(bad, "### `lab`", nil)
	want := []string{`--limit's variable is "LIMITS"`, "--json is not in the table", "the table has --jsn"}
	for _, w := range want {
		if !strings.Contains(strings.Join(d, "\n"), w) {
			t.Errorf("differences %q lack %q", d, w)
		}
	}
}
