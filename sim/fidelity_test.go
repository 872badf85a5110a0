package sim_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/model"
	"capacitylab/recorder"
	"capacitylab/retry"
	"capacitylab/sim"
)

// kneeRho is where "below the knee" ends: a row is below the knee when its
// offered rate is at most kneeRho of the preset's ceiling in the model,
// min(workers ÷ (spin + wait), cpus ÷ spin). Why 0.7: for one worker and a
// fixed service time S (M/D/1) the mean latency is S(1 + ρ/(2(1−ρ))), and its
// elasticity with respect to S (the percentage it moves for one percent
// more service time) is 1 + ρ/(1−ρ)·… = 2.8 at ρ = 0.7 and grows without
// bound past it (4.9 at 0.8, 10.5 at 0.9). Below 0.7 a service time a few
// percent off (the live lab's WAIT_MS ends late; see the package doc) moves
// latency by less than three times as much, which 15% can hold; past it,
// small differences in the lab's speed decide the figure, and the test only
// reports them. A closed loop keeps its workers busy whatever its clients
// number, so it is never below the knee.
const kneeRho = 0.7

// fidelityCPU is the processor time per request beyond SPIN_MS that the
// fidelity comparison gives the simulator: MeasuredCPUPerRequest, what this
// project measured of the live lab (see docs/BENCHMARKS.md).
const fidelityCPU = sim.MeasuredCPUPerRequest

// column returns the cell of a recorded table's row under the named
// column as a number, and whether there is one.
func column(tb *lessons.Table, row int, name string) (float64, bool) {
	i := slices.Index(tb.Columns, name)
	if i < 0 || i >= len(tb.Rows[row]) {
		return 0, false
	}
	v, err := strconv.ParseFloat(tb.Rows[row][i], 64)
	return v, err == nil
}

// For every recorded table in the course, the simulator given the table's
// preset: the same arrivals (sent equal, row for row); below the knee
// ok_per_sec within 3% of the recorded figure; and below the knee p50
// within 15%, for tables recorded on a quiet machine (the one-minute load
// average at the start, which the table's source gives, at most
// lessons.QuietLoadAverage, the level above which the recorder itself
// warns that other work makes the numbers worse). On a busy machine the
// live lab's waits end late and its processor is shared with others, so
// its service time there is longer than the knobs say by an amount that
// changes from window to window (docs/BENCHMARKS.md measures it): a
// recording made so says nothing about the simulator's p50, and its rows
// are reported, not held to 15%. The ratios of every row are printed (go
// test -run Fidelity -v ./sim) and kept in docs/BENCHMARKS.md. The tables
// are read from the course as it is, so re-recorded tables are compared as
// they are.
func TestFidelityAgainstRecordedTables(t *testing.T) {
	// Tables still to be recorded (pending) load too, and are skipped below.
	course, err := lessons.LoadWith(os.DirFS("../lessons/content"), lessons.LoadOptions{Pending: true})
	if err != nil {
		t.Fatalf("the course does not load: %v", err)
	}
	var report strings.Builder
	fmt.Fprintf(&report, "simulated ÷ recorded, CPUPerRequest %v (the last two columns: 0, the knobs alone); * = below the knee (offered ≤ %.1f × the model's ceiling), q = recorded at a load average ≤ %.1f\n",
		fidelityCPU, kneeRho, lessons.QuietLoadAverage)
	fmt.Fprintf(&report, "%-30s %5s %8s %5s %9s %9s %9s %9s %7s %7s %7s %7s\n", "table", "load", "offered", "ρ", "ok/s rec", "ok/s sim", "p50 rec", "p50 sim", "ok/s", "p50", "ok/s 0", "p50 0")
	tables, below, p50Held := 0, 0, 0
	var notSimulated []string // tables of presets the simulator does not model
	for _, l := range course.Lessons {
		for _, b := range l.Blocks() {
			tb, ok := b.(*lessons.Table)
			if !ok || tb.Fixture || tb.Fingerprint == "" || tb.TimeTable() {
				// A time table's seconds add up to its window table's
				// row, which is compared below.
				continue
			}
			blk, _ := l.Block(tb.Preset)
			lab, ok := blk.(*lessons.Lab)
			if !ok {
				t.Fatalf("%s: table %s: preset %s is not a lab block", l.File, tb.ID, tb.Preset)
			}
			if lab.Simulated {
				continue // the simulator's own table: nothing measured to compare with
			}
			p := recorder.Preset(lab)
			if cfg := p.Config; cfg.Accept != labsvc.AcceptDoor || cfg.Backlog != 0 {
				// The kernel's accept queue is the live lab's alone
				// (Model.Validate): such a table has nothing to be
				// compared with.
				notSimulated = append(notSimulated, fmt.Sprintf("%s (ACCEPT=%s BACKLOG=%d)", tb.ID, cfg.Accept, cfg.Backlog))
				continue
			}
			tables++
			load, known := tb.LoadAverageAtStart()
			quiet := known && load <= lessons.QuietLoadAverage
			m := sim.Model{Lab: p.Config, Timeout: p.Timeout(), CPUPerRequest: fidelityCPU}
			rep, err := simulate(context.Background(), m, p.Sweep(), nil)
			if err != nil {
				t.Fatalf("%s: preset %s: %v", l.File, lab.ID, err)
			}
			rows := rep.Rows()
			// The same without the lab's own processor time: the knobs alone.
			m0 := m
			m0.CPUPerRequest = 0
			rep0, err := simulate(context.Background(), m0, p.Sweep(), nil)
			if err != nil {
				t.Fatalf("%s: preset %s: %v", l.File, lab.ID, err)
			}
			rows0 := rep0.Rows()
			if len(rows) != len(tb.Rows) {
				t.Errorf("%s: table %s has %d rows, the simulation %d", l.File, tb.ID, len(tb.Rows), len(rows))
				continue
			}
			ceiling := float64(model.TwoCeilings(float64(lab.Workers), float64(lab.CPUs), float64(lab.SpinMS), float64(lab.WaitMS)).Ceiling)
			for i, sr := range rows {
				where := fmt.Sprintf("%s: table %s row %d", l.File, tb.ID, i+1)
				sent, _ := column(tb, i, "sent")
				okps, ok1 := column(tb, i, "ok_per_sec")
				p50, ok2 := column(tb, i, "p50_ms")
				if !ok1 || !ok2 {
					t.Errorf("%s: no ok_per_sec or p50_ms column to compare", where)
					continue
				}
				// Open loop: the simulated generator sends the recorded
				// run's arrivals (the live one sent every one of them).
				// A client of fixed workers sends those that find one
				// free, which depends on how long each earlier answer
				// took: a few more or fewer. So does a client with a
				// circuit breaker, whose opening depends on when answers
				// end: compare its arrivals, sent or stopped.
				if sp, err := retry.Parse(lab.Retry); err == nil && sp.Breaker > 0 {
					stopped, _ := column(tb, i, "breaker_open")
					sent += stopped
					sent -= float64(sr.BreakerOpen)
				}
				if lab.Closed == 0 && lab.MaxInFlight == 0 && float64(sr.Sent) != sent {
					t.Errorf("%s: simulated sent %d, recorded %v: not the same arrivals", where, sr.Sent, sent)
				}
				rho := math.Inf(1)
				if lab.Closed == 0 {
					rho = sr.Offered / ceiling
				}
				knee := rho <= kneeRho
				rOK, rP50 := sr.OKPerSec/okps, sr.P50MS/p50
				mark := ""
				if knee {
					mark = "*"
					below++
				}
				if quiet {
					mark += "q"
				}
				fmt.Fprintf(&report, "%-30s %5.2f %8s %5.2f %9.1f %9.1f %9.1f %9.1f %7.3f %7.3f %7.3f %7.3f %s\n",
					strings.TrimSuffix(tb.ID, "-result"), load, strconv.FormatFloat(sr.Offered, 'f', -1, 64), rho, okps, sr.OKPerSec, p50, sr.P50MS, rOK, rP50,
					rows0[i].OKPerSec/okps, rows0[i].P50MS/p50, mark)
				if knee && math.Abs(rOK-1) > 0.03 {
					t.Errorf("%s (offered %v, ρ %.2f): ok_per_sec simulated %.1f, recorded %.1f: ratio %.3f, more than 3%% off", where, sr.Offered, rho, sr.OKPerSec, okps, rOK)
				}
				if knee && quiet {
					p50Held++
					if math.Abs(rP50-1) > 0.15 {
						t.Errorf("%s (offered %v, ρ %.2f, recorded at load %.2f): p50 simulated %.1f ms, recorded %.1f ms: ratio %.3f, more than 15%% off", where, sr.Offered, rho, load, sr.P50MS, p50, rP50)
					}
				}
			}
		}
	}
	t.Logf("\n%s", report.String())
	if len(notSimulated) > 0 {
		t.Logf("NOT COMPARED: %d table(s) of presets whose workers accept from the kernel's queue, which the simulator does not model: %s",
			len(notSimulated), strings.Join(notSimulated, ", "))
	}
	if tables == 0 || below == 0 {
		t.Fatalf("%d recorded tables, %d rows below the knee: nothing was compared", tables, below)
	}
	t.Logf("%d tables; %d rows below the knee held to 3%% on ok_per_sec; %d of them, recorded on a quiet machine, to 15%% on p50", tables, below, p50Held)
	if p50Held == 0 {
		t.Logf("NOTE: NO ROW'S p50 WAS HELD TO 15%%: every table below the knee was recorded at a load average above %.1f (see each table's source); "+
			"re-record the course on a quiet machine (server lessons record) and this test holds them", lessons.QuietLoadAverage)
	}
}
