package evidence_test

import (
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"capacitylab/evidence"
	"capacitylab/result"
)

// benchDataset is 1,000,000 records over 10 windows of 10 s, offered
// 1,000 to 19,000 a second (Poisson arrivals), against a service of
// 8,000 a second: below it ok answers of about 20 ms with their queue
// wait, past it a growing queue, answers up to the 2 s timeout and gave
// up after it.
func benchDataset() evidence.Dataset {
	rng := rand.New(rand.NewPCG(1, 2))
	d := evidence.Dataset{Name: "bench.csv", Format: evidence.LoadCSV, Timing: evidence.FromIntended}
	const perWindow = 100_000
	d.Records = make([]result.Record, 0, 10*perWindow)
	for w := range 10 {
		rate := 1000 + 2000*float64(w)
		secs := perWindow / rate
		d.Windows = append(d.Windows, evidence.Window{Offered: rate, Seconds: secs})
		at, backlog := 0.0, 0.0
		for k := range perWindow {
			at += rng.ExpFloat64() / rate
			intended := time.Duration(at * float64(time.Second))
			wait := 0.0
			if rate > 8000 {
				backlog = (rate - 8000) * at / 8000 // seconds of queue ahead
				wait = backlog
			}
			service := 0.018 + 0.004*rng.Float64()
			r := result.Record{Window: w, Seq: k, Intended: intended, Sent: intended, Outcome: result.OK, Status: 200,
				QueueWaitMS: result.Round(wait*1000, 1000), ServiceMS: result.Round(service*1000, 1000)}
			if lat := wait + service; lat < 2 {
				r.End = intended + time.Duration(lat*float64(time.Second))
			} else {
				r.End, r.Outcome, r.Status, r.Reason = intended+2*time.Second, result.Gaveup, 0, result.ReasonReadTimeout
				r.QueueWaitMS, r.ServiceMS = -1, -1
			}
			d.Records = append(d.Records, r)
		}
	}
	return d
}

// peakRSS is the process's most resident memory so far (VmHWM), bytes.
func peakRSS(b *testing.B) float64 {
	s, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(s), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	b.Skip("no VmHWM in /proc/self/status")
	return 0
}

// BenchmarkAnalyze1M is Analyze over 1,000,000 records in 10 windows:
// its time and its allocations (B/op, an upper bound on the memory it
// adds at its peak), and the process's peak resident memory with the
// records held (peak-rss-MB).
func BenchmarkAnalyze1M(b *testing.B) {
	d := benchDataset()
	runtime.GC()
	b.ReportAllocs()
	var a evidence.Analysis
	for b.Loop() {
		a = evidence.Analyze(d, evidence.Options{BudgetMS: 250})
	}
	b.ReportMetric(peakRSS(b)/1e6, "peak-rss-MB")
	if len(a.Rows) != 10 || a.Knee < 0 || a.Rows[0].N != 100_000 {
		b.Fatalf("analysis of the benchmark's data: %d rows, knee %d: want 10 rows through a knee", len(a.Rows), a.Knee)
	}
}
