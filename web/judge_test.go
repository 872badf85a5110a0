package web

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"

	"capacitylab/lessons"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// capstoneJudge returns the capstone's judge block and the preset it judges.
func capstoneJudge(t *testing.T) (*lessons.Lesson, *lessons.Judge, *lessons.Lab) {
	t.Helper()
	c, err := lessons.Load(lessons.Content())
	if err != nil {
		t.Fatal(err)
	}
	l, _ := c.Lesson("capstone")
	b, _ := l.Block("capstone-judge")
	j, ok := b.(*lessons.Judge)
	if !ok {
		t.Fatal("the capstone has no judge block capstone-judge")
	}
	lb, _ := l.Block(j.Lab)
	return l, j, lb.(*lessons.Lab)
}

// judgedRun is a finished run of the capstone's preset with the given
// choice and seed, and one row at 100 a second.
func judgedRun(t *testing.T, lab *lessons.Lab, id string, workers, limit int, seed uint64, sent, ok int, p99 float64, change func(*runner.Request)) store.Run {
	t.Helper()
	q := labPreset(lab)
	q.Workers, q.Limit, q.Seed = workers, limit, seed
	if change != nil {
		change(&q)
	}
	req, err := json.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	return store.Run{ID: id, Lesson: "capstone", Block: lab.ID, Request: req, Status: store.RunDone,
		Rows: []result.Row{{Window: 0, Offered: 100, Sent: sent, OK: ok, P99MS: p99, N: ok, Seconds: 30}}}
}

// The judge takes each choice's newest run at each seed and says which
// half failed where and by how much; a choice passes only at every seed,
// and runs that change the service are left out.
func TestJudgeRuns(t *testing.T) {
	_, j, lab := capstoneJudge(t)
	runs := []store.Run{ // newest first
		judgedRun(t, lab, "a3", 5, 0, 3, 3000, 3000, 217, nil),
		judgedRun(t, lab, "a2", 5, 0, 2, 3000, 2998, 179, nil),
		judgedRun(t, lab, "b2", 4, 0, 2, 3000, 2800, 1952, nil),
		judgedRun(t, lab, "a1", 5, 0, 1, 3000, 3000, 136, nil),
		judgedRun(t, lab, "a1-old", 5, 0, 1, 3000, 3000, 900, nil), // older: the newer a1 is judged
		judgedRun(t, lab, "b1", 4, 0, 1, 3000, 3000, 1684, nil),
		judgedRun(t, lab, "other", 5, 0, 1, 3000, 3000, 100, func(q *runner.Request) { q.SpinMS = 1 }),
		judgedRun(t, lab, "c1", 4, 26, 1, 3000, 2870, 221, nil),
	}
	jd := judgeRuns(j, lab, runs)
	if jd.Other != 1 || len(jd.Choices) != 3 {
		t.Fatalf("judged %d choices, %d other runs: want 3 and 1\n%+v", len(jd.Choices), jd.Other, jd)
	}
	five, four, limited := jd.Choices[0], jd.Choices[1], jd.Choices[2]
	if !five.Pass || len(five.Seeds) != 3 || five.Seeds[0].Run != "a1" ||
		five.Verdict != "Passes at every seed: at least 99.9% answered (99% wanted) and a p99 of at most 217 ms (budget 230 ms)." {
		t.Errorf("five workers: %+v", five)
	}
	if four.Pass || !slices.Equal(four.Missing, []uint64{3}) ||
		four.Verdict != "Fails: at seed 1, p99 1684 ms, 1454 ms over the 230 ms budget; at seed 2, 93.3% answered, 5.7 points under 99% and p99 1952 ms, 1722 ms over the 230 ms budget. Not yet run at seed 3." {
		t.Errorf("four workers: %q (%+v)", four.Verdict, four)
	}
	if limited.Pass || limited.Verdict != "Fails: at seed 1, 95.7% answered, 3.3 points under 99%. Not yet run at seeds 2 and 3." {
		t.Errorf("four workers, LIMIT=26: %q", limited.Verdict)
	}
	if got := judgeRuns(j, lab, runs[3:4]).Choices[0].Verdict; got != "Run it at seeds 2 and 3 too: a choice passes only at every seed." {
		t.Errorf("one passing seed: %q", got)
	}
}

// The capstone page judges the learner's saved runs: a choice that fails
// says so and why; once one passes at all three seeds the page names the
// cheapest choice the simulator passes, which for this service is five
// workers (at 45 ms after the release four finish at most 89 a second).
func TestCapstoneJudgesSavedRuns(t *testing.T) {
	site := newSite(t)
	c := site.client()
	site.post(c, "/lessons/littles-law/check/littles-size", url.Values{"option": {"a"}}) // get a learner id
	me := learnerOf(t, site, c)
	_, _, lab := capstoneJudge(t)
	save := func(r store.Run) {
		t.Helper()
		r.Learner = me
		if err := site.store.SaveRun(t.Context(), r); err != nil {
			t.Fatal(err)
		}
		for _, row := range r.Rows {
			if err := site.store.AddRow(t.Context(), r.ID, row); err != nil {
				t.Fatal(err)
			}
		}
	}
	site.post(c, "/lessons/capstone/predict/capstone-predict", url.Values{"action": {"skip"}}) // the judge is past the Predict's gate
	page := site.get(c, "/lessons/capstone")
	if !strings.Contains(page.body, `data-testid="judge-none"`) {
		t.Error("with no runs the judge does not say what to do")
	}
	save(judgedRun(t, lab, "f1", 4, 0, 1, 3000, 3000, 1684, nil))
	page = site.get(c, "/lessons/capstone")
	if got := testIDText(t, page.body, "judged-verdict"); !strings.Contains(got, "at seed 1, p99 1684 ms, 1454 ms over the 230 ms budget") {
		t.Errorf("failing choice: verdict %q", got)
	}
	if strings.Contains(page.body, `data-testid="judge-cheapest"`) {
		t.Error("the cheapest choice shows before any choice passed")
	}
	for i, p99 := range []float64{136, 179, 217} {
		save(judgedRun(t, lab, "p"+string(rune('1'+i)), 6, 0, uint64(i+1), 3000, 3000, p99, nil))
	}
	page = site.get(c, "/lessons/capstone")
	if !strings.Contains(page.body, `data-pass="true"`) {
		t.Error("six workers passing at every seed are not judged a pass")
	}
	if got := testIDText(t, page.body, "judge-cheapest"); !strings.Contains(got, "has 5 workers (WORKERS=5, LIMIT=33); your cheapest passing choice has 6") {
		t.Errorf("cheapest: %q", got)
	}
}
