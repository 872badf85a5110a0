// Package envflag is how the commands (server, lab, load, proxy) read their
// settings: flags, some of which fall back to an environment variable and
// then a default. It is the one way to read flags with environment
// fallbacks.
//
// A Setting's value comes from, in order: its flag when the command line
// gives it (even empty: --limit= left empty by an unset shell variable is a
// mistake to report, not "use the default"), else its environment
// variable when set and not blank, else its default. The value is text:
// the command checks and converts it, and names where a bad value came
// from (Setting.Name: --queue, or QUEUE). Flags without an environment
// variable are defined on the FlagSet as usual.
//
// Parse prints nothing itself. -h writes "usage: NAME [flags]" and every
// flag, with its environment variable, default and allowed values, to the
// usage writer (see Usage) and returns an error wrapping flag.ErrHelp (the
// command then exits 0); an unknown flag or a plain flag's bad value
// returns a *UsageError (exit status 2), an unknown flag's listing the
// flags there are. Positional arguments are the command's to check.
package envflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// Set is one command's flags.
type Set struct {
	name     string
	fs       *flag.FlagSet
	settings []*Setting
}

// Setting is a flag with an environment variable as its fallback.
type Setting struct {
	Flag    string // the flag's name, without dashes: "queue"
	Env     string // the environment variable: "QUEUE" ("" for none)
	Default string // the value when neither is given
	// Shown is how -h and the README say the default when Default does
	// not ("embedded", "this binary", "none"); "" shows Default.
	Shown string
	// Allowed says what values are allowed ("1 to 100"), for -h and the
	// README; "" when any text is.
	Allowed string
	Usage   string // what it sets, for -h

	// Value is the setting's value after Parse.
	Value string
	// Source is where Value came from after Parse: "--queue" when the
	// flag was given, the variable's name when it was set, "" for the
	// default.
	Source string

	text string // the flag's text, when given
}

// Name names the setting where its value came from, for messages: the
// flag when it was given, else its environment variable (else its flag).
func (s *Setting) Name() string {
	switch {
	case s.Source != "":
		return s.Source
	case s.Env != "":
		return s.Env
	}
	return "--" + s.Flag
}

// Given reports whether the setting's flag was on the command line.
func (s *Setting) Given() bool { return s.Source == "--"+s.Flag }

// DefaultText is the default as -h and the README show it.
func (s *Setting) DefaultText() string {
	if s.Shown != "" {
		return s.Shown
	}
	return s.Default
}

// UsageError is a mistake in a command line: the command should exit with
// status 2 and print it.
type UsageError struct {
	Msg string
	err error // flag.ErrHelp for -h
}

func (e *UsageError) Error() string { return e.Msg }

// Unwrap returns flag.ErrHelp for -h.
func (e *UsageError) Unwrap() error { return e.err }

// New returns an empty Set for the command name.
func New(name string) *Set {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Set{name: name, fs: fs}
}

// FlagSet is the set's flag.FlagSet, for flags without an environment
// variable.
func (s *Set) FlagSet() *flag.FlagSet { return s.fs }

// Add defines the setting's flag; its Value and Source are set by Parse.
func (s *Set) Add(st Setting) *Setting {
	p := &st
	usage := st.Usage
	var notes []string
	if st.Env != "" {
		notes = append(notes, "env "+st.Env)
	}
	if d := st.DefaultText(); d != "" {
		notes = append(notes, "default "+d)
	}
	if st.Allowed != "" {
		notes = append(notes, st.Allowed)
	}
	if len(notes) > 0 {
		usage += " (" + strings.Join(notes, ", ") + ")"
	}
	s.fs.Func(st.Flag, usage, func(v string) error { p.text, p.Source = v, "--"+st.Flag; return nil })
	s.settings = append(s.settings, p)
	return p
}

// Settings returns the settings in the order they were added.
func (s *Set) Settings() []*Setting { return s.settings }

// Flags lists every flag's name, with two dashes, sorted.
func (s *Set) Flags() []string {
	var names []string
	s.fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name) })
	return names
}

// Given reports whether the flag name (without dashes) was on the command
// line.
func (s *Set) Given(name string) bool {
	given := false
	s.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// Parse parses args and resolves every setting through getenv (see the
// package doc). usage, which may be nil, gets -h's text.
func (s *Set) Parse(args []string, getenv func(string) string, usage io.Writer) error {
	for _, st := range s.settings {
		st.Source, st.text = "", ""
	}
	if err := s.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if usage != nil {
				s.Usage(usage)
			}
			return &UsageError{Msg: "usage asked for", err: err}
		}
		msg := err.Error()
		if strings.HasPrefix(msg, "flag provided but not defined") {
			msg = fmt.Sprintf("%s; want only the flags %s (-h explains them)", msg, strings.Join(s.Flags(), ", "))
		}
		return &UsageError{Msg: msg}
	}
	for _, st := range s.settings {
		switch {
		case st.Source != "":
			st.Value = st.text
		case st.Env != "" && strings.TrimSpace(getenv(st.Env)) != "":
			st.Value, st.Source = getenv(st.Env), st.Env
		default:
			st.Value = st.Default
		}
	}
	return nil
}

// Usage writes -h's text to w: "usage: NAME [flags]", then every flag in
// name order, as "  --name ARG" on a line of its own with what it sets
// on the next, indented. ARG follows the flag
// package's convention: a word in backquotes in the usage names the
// argument ("the `URL` of the service" shows --upstream URL, the
// backquotes dropped); a switch has none; any other flag's is its type
// ("value" for a setting, "string", "int", ...). Backquotes around
// several words (a command: `server lti add`) name no argument and stay
// in the text as written, where the flag package would have taken the
// whole command for the argument's name. A plain flag's default, when
// not its type's zero, follows its text.
func (s *Set) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s [flags]\n", s.name)
	s.fs.VisitAll(func(f *flag.Flag) {
		arg, text := argName(f)
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		if s.setting(f.Name) == nil && !zeroDefault(f.DefValue) {
			text += " (default " + f.DefValue + ")"
		}
		fmt.Fprintln(w, line)
		fmt.Fprintln(w, "      "+text)
	})
}

// argName is a flag's argument name for Usage and its text without the
// backquotes that named it (see Usage).
func argName(f *flag.Flag) (name, text string) {
	text = f.Usage
	if i := strings.IndexByte(text, '`'); i >= 0 {
		if j := strings.IndexByte(text[i+1:], '`'); j > 0 {
			word := text[i+1 : i+1+j]
			if !strings.ContainsFunc(word, unicode.IsSpace) {
				return word, text[:i] + word + text[i+1+j+1:]
			}
		}
	}
	// The type's name, as the flag package gives it to a usage without
	// backquotes: "" for a switch.
	bare := *f
	bare.Usage = ""
	name, _ = flag.UnquoteUsage(&bare)
	return name, text
}

// zeroDefault reports whether a plain flag's default is its type's zero
// value, which Usage does not show.
func zeroDefault(v string) bool {
	switch v {
	case "", "0", "false", "0s", "[]":
		return true
	}
	return false
}

// CheckTable compares a Markdown table of a command's flags (the first
// table after the line heading: `--flag`, its environment variable, its
// default, then optionally what is allowed) with the set's flags, and
// returns one line per difference: a flag the table lacks or names
// wrongly, or a row for a flag there is not. skip leaves flags out (nil:
// none). Defaults are compared up to a note in parentheses ("0 (off)"),
// without backquotes; a flag without an environment variable has an empty
// env cell. The README's configuration tables are kept true by it.
func (s *Set) CheckTable(markdown, heading string, skip func(flag string) bool) []string {
	rows, err := tableAfter(markdown, heading)
	if err != nil {
		return []string{err.Error()}
	}
	clean := func(cell string) string {
		cell = strings.TrimSpace(strings.ReplaceAll(cell, "`", ""))
		if i := strings.Index(cell, " ("); i > 0 {
			cell = cell[:i]
		}
		return cell
	}
	var diffs []string
	seen := map[string]bool{}
	s.fs.VisitAll(func(f *flag.Flag) {
		if skip != nil && skip(f.Name) {
			return
		}
		seen[f.Name] = true
		env, def, allowed := "", f.DefValue, ""
		if st := s.setting(f.Name); st != nil {
			env, def, allowed = st.Env, st.DefaultText(), st.Allowed
		} else if def == "false" {
			def = "" // a switch: off unless given
		}
		row, ok := rows["--"+f.Name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s: --%s is not in the table", heading, f.Name))
		case clean(row[1]) != env:
			diffs = append(diffs, fmt.Sprintf("%s: --%s's variable is %q in the table, %q in the code", heading, f.Name, clean(row[1]), env))
		case clean(row[2]) != clean(def):
			diffs = append(diffs, fmt.Sprintf("%s: --%s's default is %q in the table, %q in the code", heading, f.Name, clean(row[2]), clean(def)))
		case len(row) > 4 && clean(row[3]) != allowed:
			diffs = append(diffs, fmt.Sprintf("%s: --%s allows %q in the table, %q in the code", heading, f.Name, clean(row[3]), allowed))
		}
	})
	for name := range rows {
		if !seen[strings.TrimPrefix(name, "--")] {
			diffs = append(diffs, fmt.Sprintf("%s: the table has %s, which is not a flag", heading, name))
		}
	}
	return diffs
}

func (s *Set) setting(name string) *Setting {
	for _, st := range s.settings {
		if st.Flag == name {
			return st
		}
	}
	return nil
}

// tableAfter reads the first Markdown table after the line heading: its
// rows (not the header) by their first cell, each split into cells.
func tableAfter(markdown, heading string) (map[string][]string, error) {
	_, rest, ok := strings.Cut("\n"+markdown, "\n"+heading+"\n")
	if !ok {
		return nil, fmt.Errorf("no line %q", heading)
	}
	rows := map[string][]string{}
	inTable := false
	for line := range strings.SplitSeq(rest, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		if !inTable {
			inTable = true // the header row
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		first := strings.TrimSpace(strings.ReplaceAll(cells[0], "`", ""))
		if strings.HasPrefix(first, "---") {
			continue
		}
		rows[first] = cells
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no table after %q", heading)
	}
	return rows, nil
}
