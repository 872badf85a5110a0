package recorder

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"capacitylab/internal/physics"
	"capacitylab/lessons"
	"capacitylab/measure"
)

// overTimeLab is a lab block with over_time: true (one worker of 20 ms,
// two windows of 2.5 s at 30 and 60 a second, a door of 3 by policy).
func overTimeLab(id string, simulated bool) string {
	sim := ""
	if simulated {
		sim = "simulated: true\n"
	}
	return "```lab id=" + id + "\nworkers: 4\nspin_ms: 0\nwait_ms: 20\nlimit: 0\npolicy: inflight,quota=3\ncpus: 1\nrates: [30, 200]\nseconds: 2.5\nseed: 4\n" + sim + "over_time: true\n```\n\nProse.\n"
}

// checkTimeTable holds a recorded time table to its window table: the
// time columns, rows in window and second order, at least three rows a
// window (its 2.5 s: two whole seconds and the rest), and each window's
// rows adding up to its row's ok, refused and gaveup. It returns the
// table and how many rows each window has: a window lasts until its last
// answer ends, so on a live lab a late answer adds rows.
func checkTimeTable(t *testing.T, c *lessons.Course, id string) (*lessons.Table, []int) {
	t.Helper()
	b, _, ok := c.Block(id + "-time")
	tt, _ := b.(*lessons.Table)
	wb, _, _ := c.Block(id + "-result")
	wt, _ := wb.(*lessons.Table)
	if !ok || tt == nil || wt == nil || !tt.TimeTable() || wt.TimeTable() {
		t.Fatalf("tables %s-result and %s-time: %+v, %+v", id, id, wt, tt)
	}
	if !slices.Equal(tt.Columns, lessons.TimeColumns()) || tt.Source != wt.Source || tt.Preset != id {
		t.Errorf("time table columns %v source %q preset %q; want %v, the window table's source, %s", tt.Columns, tt.Source, tt.Preset, lessons.TimeColumns(), id)
	}
	if !strings.Contains(tt.Caption, " over time") || !strings.Contains(tt.Caption, "a row a second of each window: ") {
		t.Errorf("time table caption %q", tt.Caption)
	}
	col := func(cols []string, name string) int { return slices.Index(cols, name) }
	perWindow := make([]int, len(wt.Rows))
	for w, row := range wt.Rows {
		sums := map[string]int{}
		n := 0
		for _, r := range tt.Rows {
			if r[0] != strconv.Itoa(w) {
				continue
			}
			if at, _ := strconv.ParseFloat(r[1], 64); at != float64(n) {
				t.Errorf("window %d row %d at %s s, want %d", w, n, r[1], n)
			}
			n++
			for _, name := range []string{"ok", "refused", "gaveup"} {
				v, err := strconv.Atoi(r[col(tt.Columns, name)])
				if err != nil {
					t.Fatalf("row %v: %s: %v", r, name, err)
				}
				sums[name] += v
			}
		}
		if n < 3 {
			t.Errorf("window %d: %d rows, want at least 3 (2.5 s: two whole seconds and the rest)", w, n)
		}
		perWindow[w] = n
		for _, name := range []string{"ok", "refused", "gaveup"} {
			if strconv.Itoa(sums[name]) != row[col(wt.Columns, name)] {
				t.Errorf("window %d: the time table's %s add up to %d, the window table says %s", w, name, sums[name], row[col(wt.Columns, name)])
			}
		}
	}
	return tt, perWindow
}

// A simulated preset with over_time: true gets its time table after its
// window table, both loading with their fingerprints; recording again
// replaces each where it stands.
func TestRecordOverTimeSimulated(t *testing.T) {
	dir := writeDir(t, map[string]string{"s.md": lessonHead("s", 1) + overTimeLab("s", true)})
	var log bytes.Buffer
	cfg := testConfig(t, dir, &log)
	cfg.Children = measure.Config{}
	recs, err := recordOrSkip(t, cfg)
	if err != nil {
		t.Fatalf("Record: %v\nlog:\n%s", err, log.String())
	}
	if len(recs) != 1 || recs[0].Table != "s-result" || recs[0].Time.Table != "s-time" || len(recs[0].Samples) != 6 {
		t.Fatalf("recorded %+v", recs)
	}
	if !strings.Contains(log.String(), "wrote time table s-time") {
		t.Errorf("log:\n%s", log.String())
	}
	c, err := lessons.LoadWith(os.DirFS(dir), LoadOptions())
	if err != nil {
		t.Fatalf("the recorded file does not load: %v", err)
	}
	tt, perWindow := checkTimeTable(t, c, "s")
	// The simulated windows end on time: 2.5 s, three rows.
	if !slices.Equal(perWindow, []int{3, 3}) {
		t.Errorf("rows a window %v, want 3 and 3", perWindow)
	}
	// The simulated lab is read each second: its door of 3.
	for _, r := range tt.Rows {
		if r[10] != "3" {
			t.Errorf("simulated row %v: want limit 3", r)
		}
	}
	first := readFile(t, dir, "s.md")
	if i, j := strings.Index(first, "```table id=s-result"), strings.Index(first, "```table id=s-time"); i < 0 || j < i {
		t.Errorf("the time table is not after the window table:\n%s", first)
	}
	if _, err := recordOrSkip(t, cfg); err != nil {
		t.Fatal(err)
	}
	if again := readFile(t, dir, "s.md"); again != first || len(tableBlocks(again)) != 2 {
		t.Errorf("recording a simulation again changed the file or its tables (%d):\n%s", len(tableBlocks(again)), again)
	}
	// The time table's numbers are covered by its fingerprint.
	edited := strings.Replace(first, `- ["0", "0", "`, `- ["0", "0", "9`, 1)
	writeFile(t, dir, "s.md", edited)
	if _, err := lessons.LoadWith(os.DirFS(dir), LoadOptions()); err == nil || !strings.Contains(err.Error(), `table "s-time": fingerprint does not match`) {
		t.Errorf("a time table edited by hand loads: %v", err)
	}
}

// A measured preset with over_time: true, through real children: the
// time table's rows read the lab each second (its policy's limit, 3).
// That every window ends on time (three rows) and every read but the last
// answers within its second are physics checks: on a busy machine an
// answer ends late and a read takes longer.
func TestRecordOverTime(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real lab and load children for about 6 s")
	}
	dir := writeDir(t, map[string]string{"m.md": lessonHead("m", 1) + overTimeLab("m", false)})
	var log bytes.Buffer
	recs, err := recordOrSkip(t, testConfig(t, dir, &log))
	if err != nil {
		t.Fatalf("Record: %v\nlog:\n%s", err, log.String())
	}
	c, err := lessons.LoadWith(os.DirFS(dir), LoadOptions())
	if err != nil {
		t.Fatalf("the recorded file does not load: %v", err)
	}
	tt, perWindow := checkTimeTable(t, c, "m")
	read := 0
	for _, r := range tt.Rows {
		if r[10] != "—" {
			read++
			if r[10] != "3" {
				t.Errorf("row %v: limit %s, want 3", r, r[10])
			}
		}
	}
	if read == 0 {
		t.Errorf("the lab was read for none of %d rows", len(tt.Rows))
	}
	t.Run("on time", func(t *testing.T) {
		physics.Require(t)
		if !slices.Equal(perWindow, []int{3, 3}) {
			t.Errorf("rows a window %v, want 3 and 3 (2.5 s: two whole seconds and the rest)", perWindow)
		}
		if read < len(tt.Rows)-1 {
			t.Errorf("the lab was read for %d of %d rows", read, len(tt.Rows))
		}
	})
	var refused int
	for _, s := range recs[0].Samples {
		if s.Window == 1 {
			refused += s.Refused
		}
	}
	if refused == 0 || recs[0].Rows[1].Refused != refused {
		t.Errorf("at 200 a second a door of 3 refused %d (samples) and %d (row)", refused, recs[0].Rows[1].Refused)
	}
}
