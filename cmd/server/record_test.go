package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"capacitylab/lessons"
)

// TestLessonsRecordUsage checks that `server lessons record` refuses bad
// command lines with a usage error (exit 2) naming what is wrong, before
// any lab is started. (The recording itself is tested in package lessons
// with real lab children.)
func TestLessonsRecordUsage(t *testing.T) {
	dir := copyContent(t)
	tests := []struct {
		name  string
		args  []string
		want  string
		usage bool
	}{
		// A scale above 1 would record longer windows than the presets say.
		{"scale above 1", []string{"lessons", "record", "--content", dir, "--seconds-scale", "2"}, `--seconds-scale "2" is not allowed`, true},
		// A scale that is not a number.
		{"scale not a number", []string{"lessons", "record", "--content", dir, "--seconds-scale", "fast"}, `--seconds-scale "fast" is not allowed`, true},
		// The content directory must exist.
		{"missing content", []string{"lessons", "record", "--content", filepath.Join(dir, "nope")}, `is not a directory`, true},
		// Stray arguments are not guessed at.
		{"stray argument", []string{"lessons", "record", "--content", dir, "littles-law"}, `unexpected argument "littles-law"`, true},
		// An unknown lesson is named, with the slugs there are.
		{"unknown lesson", []string{"lessons", "record", "--content", dir, "--lesson", "nope"}, `no lesson with slug "nope"`, false},
		// An unknown preset is named.
		{"unknown lab", []string{"lessons", "record", "--content", dir, "--lab", "nope"}, `no lab preset "nope"`, false},
		// A load threshold must be a positive number.
		{"max load zero", []string{"lessons", "record", "--content", dir, "--max-load", "0"}, `--max-load "0" is not allowed`, true},
		{"max load not a number", []string{"lessons", "record", "--content", dir, "--max-load", "low"}, `--max-load "low" is not allowed`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args, func(string) string { return "" }, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			var u usageError
			if got := errors.As(err, &u); got != tt.usage {
				t.Errorf("usage error = %v, want %v (exit code %d)", got, tt.usage, exitCode(err))
			}
		})
	}
}

// marksLesson is a lesson with a recorded table (fingerprinted as the
// recorder would), a pending one, and marks on both: one that holds, one
// stale number, one claim that no longer holds and one pending.
func marksLesson() string {
	lab := lessons.Lab{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, Rates: []float64{40, 60}, Seconds: 5}
	cols := []string{"offered", "ok_per_sec", "p99_ms"}
	rows := [][]string{{"40", "40.2", "49.1"}, {"60", "47.1", "1937.5"}}
	fpr := lessons.Fingerprint(&lab, cols, rows, "recorded in a test")
	return "---\nslug: m\npart: P\nchapter: C\nnumber: 1\ntitle: T\nminutes: 5\nas_of: 2026-11-30\n---\n" +
		"```lab id=m-lab\nworkers: 1\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [40, 60]\nseconds: 5\n```\n\n" +
		"```table id=m-table preset=m-lab\ncaption: c\ncolumns: [offered, ok_per_sec, p99_ms]\nrows:\n  - [\"40\", \"40.2\", \"49.1\"]\n  - [\"60\", \"47.1\", \"1937.5\"]\nsource: recorded in a test\nfingerprint: " + fpr + "\n```\n\n" +
		"```lab id=m-later\nworkers: 2\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [80]\nseconds: 5\n```\n\n" +
		"```table id=m-later-result preset=m-later\npending: true\n```\n\n" +
		"It held [40.2]{= m-table[40].ok_per_sec}, then [46.0]{= m-table[60].ok_per_sec} a second, and the tail [stayed short]{? m-table[60].p99_ms < 230}.\n" + // 44
		"Two workers: [95]{= m-later[80].ok_per_sec}.\n" // 45
}

// TestLessonsMarks runs `server lessons marks` and `lessons check
// --pending` on a directory: each lists what does not hold with file and
// line, and --fix rewrites the stale number only.
func TestLessonsMarks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.md")
	if err := os.WriteFile(path, []byte(marksLesson()), 0o644); err != nil {
		t.Fatal(err)
	}
	run1 := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), args, func(string) string { return "" }, &out, io.Discard)
		return out.String(), err
	}
	out, err := run1("lessons", "marks", "--content", dir)
	if err == nil || !strings.Contains(err.Error(), "2 mark(s) do not hold") {
		t.Errorf("marks: err = %v, want 2 marks that do not hold", err)
	}
	for _, want := range []string{
		"m.md:44: [46.0]{= m-table[60].ok_per_sec}: STALE: the tables give 47.1000; write 47.1",
		"m.md:44: [stayed short]{? m-table[60].p99_ms < 230}: NO LONGER HOLDS",
		"m.md:45: [95]{= m-later[80].ok_per_sec}: pending: not recorded yet (server lessons record --lab m-later)",
		"marks: 1 ok, 2 stale, 0 broken, 1 pending",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("marks output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "[40.2]") {
		t.Errorf("marks lists a mark that holds without --all:\n%s", out)
	}
	if out, _ := run1("lessons", "marks", "--content", dir, "--all"); !strings.Contains(out, "m.md:44: [40.2]{= m-table[40].ok_per_sec}: ok (40.2000)") {
		t.Errorf("marks --all lacks the mark that holds:\n%s", out)
	}

	// check --pending lists the same problems, and the table to record.
	out, err = run1("lessons", "check", "--pending", dir)
	if err == nil || !strings.Contains(out, "m.md:44: mark [46.0]") || !strings.Contains(out, "m.md:44: mark [stayed short]") {
		t.Errorf("check --pending = %v:\n%s", err, out)
	}
	// Without --pending the pending table itself is the problem.
	if out, err := run1("lessons", "check", dir); err == nil || !strings.Contains(out, `m.md:41: table "m-later-result": is still to be recorded`) {
		t.Errorf("check without --pending = %v:\n%s", err, out)
	}

	// --fix rewrites the stale number, keeps the claim for a person.
	out, err = run1("lessons", "marks", "--content", dir, "--fix")
	if err == nil || !strings.Contains(out, "rewrote 1 number(s)") {
		t.Errorf("marks --fix = %v:\n%s", err, out)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "then [47.1]{= m-table[60].ok_per_sec} a second") || !strings.Contains(string(b), "[stayed short]{? m-table[60].p99_ms < 230}") {
		t.Errorf("after --fix the line reads:\n%s", strings.Split(string(b), "\n")[43])
	}
	if out, err := run1("lessons", "marks", "--content", dir); err == nil || !strings.Contains(out, "marks: 2 ok, 1 stale, 0 broken, 1 pending") {
		t.Errorf("after --fix: %v\n%s", err, out)
	}
}
