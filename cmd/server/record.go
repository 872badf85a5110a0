package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"strconv"

	"capacitylab/labsvc"
	"capacitylab/measure"
	"capacitylab/recorder"
)

// defaultContentDir is where `server lessons record` finds the lessons when
// run from the repository root.
const defaultContentDir = "lessons/content"

// runRecord is "server lessons record": it runs each lab preset of the
// lessons in --content (default lessons/content) as a learner's run is
// measured, with a lab child and a load child (this binary with
// "lab-child" and "load-child"; package recorder), and writes each
// preset's result table into its lesson file. Progress goes to stderr. Run
// it on a quiet machine: the tables are what the lessons' prose reads.
// Every table written by one invocation names the same session in its
// source; record a lesson's presets together (--lesson), since its tables
// are compared.
//
//	--content DIR       lesson directory to record into (default lessons/content)
//	--lesson SLUG       only this lesson
//	--lab ID            only this preset
//	--seconds-scale F   shorten every window by F (0 < F ≤ 1) for a trial; the
//	                    tables then say TRIAL and fail validation until recorded at 1
//	--max-load F        refuse when the 1-minute load average is above F per core at
//	                    the start, or other programs use more than F cores per core
//	                    while a preset runs (default 0.3)
//	--busy              record anyway above --max-load; the sources say BUSY
func runRecord(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("server lessons record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("content", defaultContentDir, "lesson directory to record into")
	slug := fs.String("lesson", "", "record only this lesson (slug)")
	lab := fs.String("lab", "", "record only this lab preset (id)")
	scaleText := fs.String("seconds-scale", "1", "multiply every window's length by this, more than 0 and at most 1, for quick trials")
	maxLoadText := fs.String("max-load", strconv.FormatFloat(recorder.DefaultMaxLoad, 'g', -1, 64), "most load a core may carry from other work while recording")
	busy := fs.Bool("busy", false, "record even when the machine is busier than --max-load (the tables say so)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("lessons record: unexpected argument %q: want flags only: [--content DIR] [--lesson SLUG] [--lab ID] [--seconds-scale F] [--max-load F] [--busy]", fs.Arg(0))}
	}
	scale, err := strconv.ParseFloat(*scaleText, 64)
	if err != nil || !(scale > 0 && scale <= 1) {
		return usageError{fmt.Sprintf("lessons record: --seconds-scale %q is not allowed: want a number more than 0 and at most 1", *scaleText)}
	}
	maxLoad, err := strconv.ParseFloat(*maxLoadText, 64)
	if err != nil || !(maxLoad > 0) || math.IsInf(maxLoad, 0) {
		return usageError{fmt.Sprintf("lessons record: --max-load %q is not allowed: want a number more than 0 (load per core, such as 0.3)", *maxLoadText)}
	}
	if info, err := os.Stat(*dir); err != nil || !info.IsDir() {
		return usageError{fmt.Sprintf("lessons record: --content %q is not a directory: want the directory holding the lesson *.md files (run from the repository root for the default, lessons/content)", *dir)}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding this binary to run a preset's children: %w", err)
	}
	recs, err := recorder.Record(ctx, recorder.Config{
		Dir:          *dir,
		Lesson:       *slug,
		Lab:          *lab,
		SecondsScale: scale,
		MaxLoad:      maxLoad,
		Busy:         *busy,
		Children: measure.Config{
			Lab:  labsvc.ChildCommand{Path: exe, Args: []string{"lab-child"}},
			Load: labsvc.ChildCommand{Path: exe, Args: []string{"load-child"}},
		},
		Log:   stderr,
		Build: buildRevision(),
	})
	fmt.Fprintf(stderr, "record: wrote %d table(s) into %s\n", len(recs), *dir)
	return err
}

// buildRevision is the version control revision this binary was built
// from (12 characters, "+dirty" when the tree had changes), or "" when the
// build carries none (go run, go test, or a build outside a checkout).
func buildRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev[:min(len(rev), 12)] + dirty
}
