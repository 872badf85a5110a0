package lessons

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// judgeLesson is a lesson of one open-loop lab at 10 and 20 a second and a
// judge block (fence on line 20) with the given fields.
func judgeLesson(fields string) fstest.MapFS {
	body := head("a", 1) + "```lab id=l\nworkers: 4\nspin_ms: 2\nwait_ms: 18\nlimit: 0\ncpus: 1\nrates: [10, 20]\nseconds: 1\n```\n\n" +
		"```judge id=j\n" + fields + "```\n"
	return fstest.MapFS{"a.md": &fstest.MapFile{Data: []byte(body)}}
}

// A judge block names the lab whose runs it judges, the rate, the seeds
// and both halves of the criterion; each bad field is reported at its line
// with what is allowed.
func TestJudgeBlock(t *testing.T) {
	good := "lab: l\nrate: 20\nseeds: [1, 2, 3]\nbudget_ms: 230\ndelivered: 0.99\n"
	c, err := Load(judgeLesson(good))
	if err != nil {
		t.Fatal(err)
	}
	b, ok := c.Lessons[0].Block("j")
	j, isJudge := b.(*Judge)
	if !ok || !isJudge || j.Lab != "l" || j.Rate != 20 || len(j.Seeds) != 3 || j.Seeds[2] != 3 || j.BudgetMS != 230 || j.Delivered != 0.99 {
		t.Fatalf("judge = %+v", b)
	}
	// Choosing and running take time: a judge adds its minutes and a run
	// of the lab at each seed beyond the first.
	if r := c.Lessons[0].Reading(); r.Doing != judgeMinutes || r.RunSeconds != 3*2*(1+runOverheadSeconds) {
		t.Errorf("Reading = %+v, want %d minutes of doing and three runs of two 1 s windows", r, judgeMinutes)
	}
	for _, tt := range []struct{ fields, want string }{
		{"rate: 20\nseeds: [1]\nbudget_ms: 230\ndelivered: 0.99\n", `a.md:20: judge "j": lab is missing`},
		{"lab: nope\nrate: 20\nseeds: [1]\nbudget_ms: 230\ndelivered: 0.99\n", `a.md:21: judge "j": lab: no block "nope" in this lesson`},
		{"lab: l\nrate: 15\nseeds: [1]\nbudget_ms: 230\ndelivered: 0.99\n", `a.md:22: judge "j": rate 15 is not an offered rate of the preset "l": want one of 10, 20`},
		{"lab: l\nrate: 20\nseeds: [1, 1]\nbudget_ms: 230\ndelivered: 0.99\n", `seeds[1] 1 is given twice`},
		{"lab: l\nrate: 20\nseeds: []\nbudget_ms: 230\ndelivered: 0.99\n", `seeds has 0 entries: want 1 to 5`},
		{"lab: l\nrate: 20\nseeds: [1]\nbudget_ms: 0\ndelivered: 0.99\n", `budget_ms 0 is not allowed`},
		{"lab: l\nrate: 20\nseeds: [1]\nbudget_ms: 230\ndelivered: 99\n", `delivered 99 is not allowed: want the least share`},
	} {
		_, err := Load(judgeLesson(tt.fields))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.fields, err, tt.want)
		}
	}
}

// A judged preset has no table to record: the recorder leaves it out, and
// says why when asked for it by name.
func TestJudgedPresetIsNotRecorded(t *testing.T) {
	dir := t.TempDir()
	fs := judgeLesson("lab: l\nrate: 20\nseeds: [1]\nbudget_ms: 230\ndelivered: 0.99\n")
	if err := os.WriteFile(filepath.Join(dir, "a.md"), fs["a.md"].Data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PlanRecording(dir, "", "l", LoadOptions{}); err == nil || !strings.Contains(err.Error(), `lab preset "l" is judged by "j" and has no table to record`) {
		t.Errorf("recording the judged preset by name: %v", err)
	}
	if _, err := PlanRecording(dir, "a", "", LoadOptions{}); err == nil || !strings.Contains(err.Error(), "lesson a has no lab presets to record") {
		t.Errorf("recording the lesson: %v, want its only preset left out", err)
	}
}
