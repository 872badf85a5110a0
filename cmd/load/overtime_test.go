package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"capacitylab/internal/physics"
	"capacitylab/labsvc"
	"capacitylab/labsvc/labtest"
	"capacitylab/result"
)

// overTimeLine is one line --over-time prints.
var overTimeLine = regexp.MustCompile(`(?m)^w(\d+)  ([0-9.]+)s  ok/s ([0-9.]+)  refused (\d+)  gaveup (\d+)  in flight (\d+)  limit (\S+)  queue (\S+)  p99 ([0-9.]+) ms$`)

// checkSampleFile reads a --samples file and holds it to the rows: its
// header is result.SampleColumns, one line a sample, and each window's
// samples add up to its row (lost 0).
func checkSampleFile(t *testing.T, path string, rows []result.Row) [][]string {
	t.Helper()
	lines := readRecords(t, path)
	if !slices.Equal(lines[0], result.SampleColumns()) {
		t.Fatalf("--samples header %v, want %v", lines[0], result.SampleColumns())
	}
	samples, err := result.ParseSamples(lines[0], lines[1:])
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		var ok, refused, gaveup, errs, busy, notSent int
		for _, s := range samples {
			if s.Window == r.Window {
				ok, refused, gaveup, errs, busy, notSent = ok+s.OK, refused+s.Refused, gaveup+s.GaveUp, errs+s.Errors, busy+s.ClientBusy, notSent+s.NotSent
			}
		}
		if ok != r.OK || refused != r.Refused || gaveup != r.Gaveup || errs != r.Error || busy != r.ClientBusy || notSent != r.NotSent || r.Lost != 0 {
			t.Errorf("window %d: the samples count ok %d, refused %d, gaveup %d, errors %d, client_busy %d, not_sent %d; the row %+v",
				r.Window, ok, refused, gaveup, errs, busy, notSent, r)
		}
	}
	return lines
}

// jsonRows reads the rows load --json printed, one JSON object a line.
func jsonRows(t *testing.T, out string) []result.Row {
	t.Helper()
	var rows []result.Row
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var r result.Row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		rows = append(rows, r)
	}
	return rows
}

// --over-time against a real lab whose door lets 3 in at once: a line on
// stderr at each second of each window and one as it ends, saying the
// lab's limit (3) and queue; --samples writes the same samples as CSV,
// adding up to the rows. A window lasts until its last answer ends and a
// read of the lab that takes longer than its second is not used, so that
// each 1.5 s window has exactly two lines, each with the lab read, is a
// physics check: on a busy machine a late answer adds a line and a slow
// read says "?".
func TestOverTime(t *testing.T) {
	l := labtest.Serve(t, labsvc.Config{Workers: 8, SpinMS: 0, WaitMS: 20, CPUs: 1, Policy: "inflight,quota=3"})
	path := filepath.Join(t.TempDir(), "samples.csv")
	out, errOut, err := runLoad(t, noenv, "--target", l.Target, "--control", l.Control, "--rate", "40,200", "--seconds", "1.5",
		"--over-time", "--samples", path, "--json")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	t.Log(errOut)
	rows := jsonRows(t, out)
	lines := checkSampleFile(t, path, rows)
	got := overTimeLine.FindAllStringSubmatch(errOut, -1)
	if len(got) != len(lines)-1 {
		t.Fatalf("%d lines on stderr, %d samples in the file: want one a sample", len(got), len(lines)-1)
	}
	// Each window's lines in order, at least two (1.5 s: a whole second
	// and the rest), each saying the lab's limit when it was read.
	perWindow := map[string]int{}
	refusedLines, prev := 0, 0
	for i, m := range got {
		if w, _ := strconv.Atoi(m[1]); i > 0 && w < prev {
			t.Errorf("line %q after a line of window %s", m[0], got[i-1][1])
		}
		prev, _ = strconv.Atoi(m[1])
		perWindow[m[1]]++
		if m[7] != "3" && m[7] != "?" {
			t.Errorf("line %q: want limit 3 (or ?, the lab not read in time)", m[0])
		}
		if m[1] == "2" && m[4] != "0" {
			refusedLines++
		}
	}
	if len(perWindow) != 2 || perWindow["1"] < 2 || perWindow["2"] < 2 {
		t.Errorf("lines a window %v, want at least 2 in each of windows 1 and 2", perWindow)
	}
	// At 200 a second a door of 3 refuses some: the lines say so.
	if rows[1].Refused == 0 || refusedLines == 0 {
		t.Errorf("at 200 a second %d refused, and %d of window 2's lines say so", rows[1].Refused, refusedLines)
	}
	t.Run("two lines a window, the lab read", func(t *testing.T) {
		physics.Require(t)
		if perWindow["1"] != 2 || perWindow["2"] != 2 {
			t.Errorf("lines a window %v, want 2 and 2", perWindow)
		}
		for _, m := range got {
			if m[7] != "3" {
				t.Errorf("line %q: want limit 3", m[0])
			}
		}
	})
}

// --over-time with --simulate: the simulated windows are sampled from
// their records, the simulated lab read at each second (a door of 3
// inside by policy: limit 3).
func TestSimulateOverTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "samples.csv")
	out, errOut, err := runLoad(t, noenv, "--simulate", "--workers", "4", "--spin-ms", "0", "--wait-ms", "50", "--policy", "inflight,quota=3", "--rate", "30,60", "--seconds", "3",
		"--over-time", "--samples", path, "--json", "--max-inflight", "3")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, errOut)
	}
	rows := jsonRows(t, out)
	lines := checkSampleFile(t, path, rows)
	got := overTimeLine.FindAllStringSubmatch(errOut, -1)
	if len(got) != len(lines)-1 || len(got) < 6 {
		t.Fatalf("%d lines on stderr, %d samples in the file: want at least 3 a window\n%s", len(got), len(lines)-1, errOut)
	}
	for _, m := range got {
		if m[7] != "3" || m[8] == "?" {
			t.Errorf("line %q: want the simulated lab read: limit 3 and its queue", m[0])
		}
	}
}
