package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"capacitylab/admit"
	"capacitylab/lessons"
	"capacitylab/measure"
	"capacitylab/recorder"
	"capacitylab/runner"
	"capacitylab/store"
)

// The capstone's design task. A judge block (lessons.Judge) names a lab
// preset whose workers, admission limit and policy the learner chooses;
// the page judges the learner's finished runs of it, a choice at a time,
// against both halves of the criterion at every seed the block names, and
// says which half failed where and by how much. Once a choice passes, it
// shows the cheapest choice that passes in the simulator (package sim),
// found by trying worker counts from one up, each with the admission
// limit the course's formula gives and with none.

// judgedSeed is one run of a choice at one seed, judged at the block's rate.
type judgedSeed struct {
	Seed        uint64
	Run         string  // the run's id
	Sent, OK    int     // at the judged rate
	Delivered   float64 // OK ÷ Sent
	P99MS       float64
	DeliveredOK bool // Delivered ≥ the block's share
	LatencyOK   bool // P99MS ≤ the block's budget
}

// judgedChoice is one choice of workers, limit and policy, judged over
// the learner's runs of it.
type judgedChoice struct {
	Workers, Limit int
	Policy         string       // as the learner wrote it ("" = queue)
	Seeds          []judgedSeed // the newest run at each of the block's seeds, in the block's order
	Missing        []uint64     // the block's seeds with no run yet
	Pass           bool         // a run at every seed, each passing both halves
	Verdict        string       // the judgement in one or two sentences
}

// cheapestChoice is the fewest workers that pass in the simulator.
type cheapestChoice struct {
	Workers, Limit int
	Found          bool   // false: none up to cheapestMaxWorkers passed
	Err            string // the simulator failed (the page says so)
}

// judgement is a judge block's view of the learner's runs.
type judgement struct {
	Choices  []judgedChoice  // newest choice first
	Other    int             // runs of the preset whose service or load differ from the brief's: not judged
	Cheapest *cheapestChoice // once a choice passes
}

// cheapestMaxWorkers bounds the simulator's search for the cheapest choice.
const cheapestMaxWorkers = 64

// judgeRuns judges runs (the learner's, newest first, with their rows) of
// the lab preset lab against j. Runs of other blocks, unfinished runs and
// runs without a row at j's rate are left out; runs whose settings other
// than the workers, limit, policy, seed and rates differ from the preset's
// are counted in Other.
func judgeRuns(j *lessons.Judge, lab *lessons.Lab, runs []store.Run) judgement {
	base := recorder.Preset(lab)
	var out judgement
	byChoice := map[string]int{} // choice key → index in out.Choices
	type seen struct{ choice, seed int }
	taken := map[seen]bool{}
	for _, r := range runs {
		if r.Block != lab.ID || r.Status != store.RunDone {
			continue
		}
		var q runner.Request
		if err := json.Unmarshal(r.Request, &q); err != nil {
			continue
		}
		if !sameBrief(base, q.Preset, j.Rate) {
			out.Other++
			continue
		}
		row := -1
		for i, w := range r.Rows {
			if math.Abs(w.Offered-j.Rate) < 1e-9 {
				row = i
				break
			}
		}
		if row < 0 {
			continue
		}
		key := fmt.Sprintf("%d\x00%d\x00%s", q.Workers, q.Limit, q.Policy.String())
		ci, ok := byChoice[key]
		if !ok {
			ci = len(out.Choices)
			byChoice[key] = ci
			out.Choices = append(out.Choices, judgedChoice{Workers: q.Workers, Limit: q.Limit, Policy: q.Policy.String()})
		}
		si := slices.Index(j.Seeds, q.Seed)
		if si < 0 || taken[seen{ci, si}] {
			continue // a seed the block does not ask for, or an older run of one judged already
		}
		taken[seen{ci, si}] = true
		w := r.Rows[row]
		s := judgedSeed{Seed: q.Seed, Run: r.ID, Sent: w.Sent, OK: w.OK, P99MS: w.P99MS}
		if w.Sent > 0 {
			s.Delivered = float64(w.OK) / float64(w.Sent)
		}
		s.DeliveredOK = w.Sent > 0 && s.Delivered >= j.Delivered
		s.LatencyOK = w.OK > 0 && w.P99MS <= j.BudgetMS
		out.Choices[ci].Seeds = append(out.Choices[ci].Seeds, s)
	}
	for i := range out.Choices {
		c := &out.Choices[i]
		slices.SortFunc(c.Seeds, func(a, b judgedSeed) int { return slices.Index(j.Seeds, a.Seed) - slices.Index(j.Seeds, b.Seed) })
		for _, seed := range j.Seeds {
			if !slices.ContainsFunc(c.Seeds, func(s judgedSeed) bool { return s.Seed == seed }) {
				c.Missing = append(c.Missing, seed)
			}
		}
		c.Pass = len(c.Missing) == 0 && !slices.ContainsFunc(c.Seeds, func(s judgedSeed) bool { return !s.DeliveredOK || !s.LatencyOK })
		c.Verdict = verdict(j, *c)
	}
	return out
}

// sameBrief reports whether p is the brief's preset base with only what
// the learner chooses changed: workers, limit, policy, seed, and rates
// that still include the judged rate.
func sameBrief(base, p measure.Preset, rate float64) bool {
	if !slices.ContainsFunc(p.Rates, func(r float64) bool { return math.Abs(r-rate) < 1e-9 }) {
		return false
	}
	p.Workers, p.Limit, p.Policy, p.Seed, p.Rates = base.Workers, base.Limit, base.Policy, base.Seed, base.Rates
	a, errA := json.Marshal(base)
	b, errB := json.Marshal(p)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// verdict says what the judgement of c is, in words: passed, or which
// half failed at which seed and by how much, and which seeds are still
// to run.
func verdict(j *lessons.Judge, c judgedChoice) string {
	budget := fmtNum(j.BudgetMS)
	share := fmtNum(100 * j.Delivered)
	if c.Pass {
		least, most := 1.0, 0.0
		for _, s := range c.Seeds {
			least, most = min(least, s.Delivered), max(most, s.P99MS)
		}
		return fmt.Sprintf("Passes at every seed: at least %s%% answered (%s%% wanted) and a p99 of at most %s ms (budget %s ms).",
			fmtNum(round1(100*least)), share, fmtNum(round1(most)), budget)
	}
	var fails []string
	for _, s := range c.Seeds {
		var why []string
		if !s.DeliveredOK {
			got := 100 * s.Delivered
			why = append(why, fmt.Sprintf("%s%% answered, %s points under %s%%", fmtNum(round1(got)), fmtNum(round1(100*j.Delivered-got)), share))
		}
		if !s.LatencyOK {
			if s.OK == 0 {
				why = append(why, "no answers, so no p99")
			} else {
				why = append(why, fmt.Sprintf("p99 %s ms, %s ms over the %s ms budget", fmtNum(round1(s.P99MS)), fmtNum(round1(s.P99MS-j.BudgetMS)), budget))
			}
		}
		if len(why) > 0 {
			fails = append(fails, "at seed "+strconv.FormatUint(s.Seed, 10)+", "+strings.Join(why, " and "))
		}
	}
	var out []string
	if len(fails) > 0 {
		out = append(out, "Fails: "+strings.Join(fails, "; ")+".")
	}
	if len(c.Missing) > 0 {
		seeds := make([]string, len(c.Missing))
		for i, s := range c.Missing {
			seeds[i] = strconv.FormatUint(s, 10)
		}
		what := "seed " + seeds[0]
		if len(seeds) > 1 {
			what = "seeds " + strings.Join(seeds[:len(seeds)-1], ", ") + " and " + seeds[len(seeds)-1]
		}
		if len(fails) > 0 {
			out = append(out, "Not yet run at "+what+".")
		} else {
			out = append(out, "Run it at "+what+" too: a choice passes only at every seed.")
		}
	}
	return strings.Join(out, " ")
}

func round1(x float64) float64 { return math.Round(10*x) / 10 }

// choiceWords names a choice as the lab's knobs: WORKERS=5, LIMIT=33,
// POLICY=… (the policy only when it is not the queue's).
func choiceWords(workers, limit int, policy string) string {
	s := fmt.Sprintf("WORKERS=%d, LIMIT=%d", workers, limit)
	if policy != "" && policy != admit.Queue {
		s += ", POLICY=" + policy
	}
	return s
}

// derivedLimit is the admission-limit lesson's formula for w workers, a
// budget and the preset's service time at rest, rounded down:
// w × (budget − service) ÷ service.
func derivedLimit(w int, budgetMS float64, lab *lessons.Lab) int {
	service := float64(lab.SpinMS + lab.WaitMS)
	if service <= 0 {
		return 0
	}
	return max(0, int(math.Floor(float64(w)*(budgetMS-service)/service)))
}

// cheapest finds, with the simulator, the fewest workers that pass j on
// lab's service at every seed: for each count from one up, the queue
// policy with the derived limit, then with none. It is kept per judge
// block and preset (server.cheapest), as it is the same for everyone.
func (s *server) cheapest(ctx context.Context, j *lessons.Judge, lab *lessons.Lab) cheapestChoice {
	key := j.ID + "\x00" + fmt.Sprint(recorder.Preset(lab), j.Rate, j.Seeds, j.BudgetMS, j.Delivered)
	c, err := s.cheapestKept.getOrMake(key, func() (cheapestChoice, bool, error) {
		c, err := findCheapest(ctx, j, lab)
		if err != nil {
			return cheapestChoice{Err: err.Error()}, false, nil
		}
		return c, true, nil
	})
	if err != nil {
		return cheapestChoice{Err: err.Error()}
	}
	return c
}

func findCheapest(ctx context.Context, j *lessons.Judge, lab *lessons.Lab) (cheapestChoice, error) {
	for w := 1; w <= cheapestMaxWorkers; w++ {
		limits := []int{derivedLimit(w, j.BudgetMS, lab)}
		if limits[0] != 0 {
			limits = append(limits, 0)
		}
		for _, limit := range limits {
			ok, err := passesSimulated(ctx, j, lab, w, limit)
			if err != nil {
				return cheapestChoice{}, err
			}
			if ok {
				return cheapestChoice{Workers: w, Limit: limit, Found: true}, nil
			}
		}
	}
	return cheapestChoice{}, nil
}

// passesSimulated simulates lab with w workers and the queue policy's
// limit at j's rate and every seed, and reports whether both halves hold
// at all of them.
func passesSimulated(ctx context.Context, j *lessons.Judge, lab *lessons.Lab, w, limit int) (bool, error) {
	for _, seed := range j.Seeds {
		try := *lab
		try.Workers, try.Limit, try.Policy, try.Seed, try.Rates, try.OverTime = w, limit, "", int64(seed), []float64{j.Rate}, false
		rows, err := recorder.SimulatePreset(ctx, &try)
		if err != nil {
			return false, err
		}
		if len(rows) != 1 {
			return false, errors.New("the simulator gave no row")
		}
		r := rows[0]
		if r.Sent == 0 || float64(r.OK)/float64(r.Sent) < j.Delivered || r.OK == 0 || r.P99MS > j.BudgetMS {
			return false, nil
		}
	}
	return true, nil
}

// judgeOf judges the learner's runs for a judge block of lesson l (the
// runs in the page's lessonCtx), and, once a choice passes, finds the
// cheapest passing choice.
func (s *server) judgeOf(ctx context.Context, l *lessons.Lesson, j *lessons.Judge, runs []store.Run) judgement {
	b, ok := l.Block(j.Lab)
	lab, isLab := b.(*lessons.Lab)
	if !ok || !isLab {
		return judgement{}
	}
	jd := judgeRuns(j, lab, runs)
	if slices.ContainsFunc(jd.Choices, func(c judgedChoice) bool { return c.Pass }) {
		c := s.cheapest(ctx, j, lab)
		jd.Cheapest = &c
	}
	return jd
}

// judgeCriterion says what the block judges, in words.
func judgeCriterion(j *lessons.Judge) string {
	return fmt.Sprintf("A choice passes when, at %s a second offered and at %s, at least %s%% of the requests sent are answered and their p99 is within %s ms.",
		fmtNum(j.Rate), judgeSeeds(j), fmtNum(100*j.Delivered), fmtNum(j.BudgetMS))
}

// judgeSeeds names the block's seeds: "seeds 1, 2 and 3".
func judgeSeeds(j *lessons.Judge) string {
	s := make([]string, len(j.Seeds))
	for i, x := range j.Seeds {
		s[i] = strconv.FormatUint(x, 10)
	}
	if len(s) == 1 {
		return "seed " + s[0]
	}
	return "every one of seeds " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// cheapestWords compares the learner's cheapest passing choice with the
// simulator's.
func cheapestWords(jd judgement, c cheapestChoice) string {
	mine := 0
	for _, ch := range jd.Choices {
		if ch.Pass && (mine == 0 || ch.Workers < mine) {
			mine = ch.Workers
		}
	}
	sim := choiceWords(c.Workers, c.Limit, "")
	switch {
	case mine == c.Workers:
		return fmt.Sprintf("The cheapest choice that passes in the simulator has %s, as your cheapest passing choice does (the simulator's: %s).", counted(c.Workers, "worker", "workers"), sim)
	case mine > c.Workers:
		return fmt.Sprintf("The cheapest choice that passes in the simulator has %s (%s); your cheapest passing choice has %d. What made you add the rest, and would you keep them as a margin?", counted(c.Workers, "worker", "workers"), sim, mine)
	default:
		return fmt.Sprintf("Your choice passes with fewer workers (%d) than the simulator's cheapest (%s): the simulator tries only the queue policy, with the derived limit or none.", mine, sim)
	}
}
