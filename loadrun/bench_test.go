package loadrun_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"capacitylab/labsvc"
	"capacitylab/loadrun"
	"capacitylab/result"
	"capacitylab/retry"
)

// benchRates is the list of offered rates the fidelity benchmarks try;
// LOADRUN_BENCH_RATES=1000,2000 overrides it.
func benchRates(b *testing.B) []float64 {
	spec := os.Getenv("LOADRUN_BENCH_RATES")
	if spec == "" {
		spec = "1000,2000,5000,8000,10000"
	}
	var rates []float64
	for f := range strings.SplitSeq(spec, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			b.Fatalf("LOADRUN_BENCH_RATES: %v", err)
		}
		rates = append(rates, r)
	}
	return rates
}

// fidelity runs b.N Poisson windows of 2 s at rate against target, each
// paired with a floor window just before it: the same schedule slept
// through by the sender's own sleep with nothing to send
// (loadrun.SleepFloorWindow: the machine's wake-up floor at that moment),
// both at GOMAXPROCS procs.
// It reports how faithfully the generator kept the schedule, worst window
// of b.N for each but the last two:
//
//	achieved/offered  ok_per_sec ÷ (arrivals ÷ window)
//	lag_p99_ms        the generator's send lag p99
//	floor_p99_ms      the floor window's wake-up lateness p99
//	over_floor_ms     lag_p99_ms − floor_p99_ms of the same pair
//	late_%            sends more than 1 ms late (every one is in the row's late)
//	not_sent          arrivals not sent (the in-flight cap; counted in not_sent)
//	pairs_met         of the b.N pairs, those with over_floor_ms ≤ 0.5
//	over_median_ms    the median pair's lag_p99_ms − floor_p99_ms
//	pooled_over_ms    the send lag p99 of every arrival sent in the b.N
//	                  windows, less the wake-up p99 of every arrival of the
//	                  b.N floor windows: the run's generator against the
//	                  run's floor (a stall of the machine's that meets one
//	                  2 s window and not its pair moves that pair's p99,
//	                  and hardly moves these)
//
// and logs each pair, with the time the hypervisor took from this machine
// (steal, /proc/stat, in 10 ms ticks) during its floor and its window.
//
// The goals: achieved/offered ≥ 0.99 and over_floor_ms ≤ 0.5 at every
// rate up to result.MaxRate.
func fidelity(b *testing.B, url string, rate float64, procs int) {
	target, err := loadrun.NewTarget(url, result.DefaultTimeout)
	if err != nil {
		b.Fatal(err)
	}
	const seconds = 2
	worstRatio, worstLag, worstFloor, worstOver, worstLate, notSent := 2.0, 0.0, 0.0, math.Inf(-1), 0.0, 0
	var overs []float64
	var allLags, allWakes []time.Duration
	for i := 0; b.Loop(); i++ {
		sched, err := loadrun.Schedule(loadrun.Poisson, rate, seconds, uint64(i+1))
		if err != nil {
			b.Fatal(err)
		}
		prev := runtime.GOMAXPROCS(procs)
		steal0 := loadrun.StealTicks(b)
		wakes := loadrun.SleepFloorWindow(sched)
		steal1 := loadrun.StealTicks(b)
		allWakes = append(allWakes, wakes...)
		slices.Sort(wakes)
		floor := float64(result.NearestRank(wakes, 99)) / 1e6
		res := loadrun.Open{Target: target, Schedule: sched}.Run(context.Background(), nil)
		steal2 := loadrun.StealTicks(b)
		runtime.GOMAXPROCS(prev)
		row := res.Metrics.Row(rate, seconds*time.Second)
		if row.Lost != 0 {
			b.Fatalf("lost %d", row.Lost)
		}
		for _, r := range res.Records {
			if r.Outcome != result.NotSent {
				allLags = append(allLags, r.Lag())
			}
		}
		over := row.SendLagP99MS - floor
		overs = append(overs, over)
		pairLog(b, "rate %.0f procs %d pair %d: floor p99 %.3f ms (steal %d ms), lag p99 %.3f ms (steal %d ms), over %.3f ms, achieved %.4f, late %d; of %d arrivals ok %d refused %d gaveup %d error %d, latency p99 %.1f ms, max %.1f ms",
			rate, procs, i+1, floor, 10*(steal1-steal0), row.SendLagP99MS, 10*(steal2-steal1), over, row.OKPerSec/(float64(row.Arrivals)/seconds), row.Late,
			row.Arrivals, row.OK, row.Refused, row.Gaveup, row.Error, row.P99MS, row.MaxMS)
		worstRatio = min(worstRatio, row.OKPerSec/(float64(row.Arrivals)/seconds))
		worstLag = max(worstLag, row.SendLagP99MS)
		worstFloor = max(worstFloor, floor)
		worstOver = max(worstOver, over)
		worstLate = max(worstLate, 100*float64(row.Late)/float64(max(1, row.Sent)))
		notSent = max(notSent, row.NotSent)
	}
	b.ReportMetric(worstRatio, "achieved/offered")
	b.ReportMetric(worstLag, "lag_p99_ms")
	b.ReportMetric(worstFloor, "floor_p99_ms")
	b.ReportMetric(worstOver, "over_floor_ms")
	b.ReportMetric(worstLate, "late_%")
	b.ReportMetric(float64(notSent), "not_sent")
	slices.Sort(overs)
	met, _ := slices.BinarySearch(overs, 0.5000001)
	b.ReportMetric(float64(met), "pairs_met")
	b.ReportMetric(overs[(len(overs)-1)/2], "over_median_ms")
	slices.Sort(allLags)
	slices.Sort(allWakes)
	lag99, floor99 := max(0, result.NearestRank(allLags, 99)), result.NearestRank(allWakes, 99)
	b.ReportMetric(float64(lag99-floor99)/1e6, "pooled_over_ms")
	pairLog(b, "rate %.0f: all %d pairs pooled: floor p99 %.3f ms of %d wake-ups, lag p99 %.3f ms of %d sends, over %.3f ms; pairs within 0.5 ms %d of %d",
		rate, len(overs), float64(floor99)/1e6, len(allWakes), float64(lag99)/1e6, len(allLags), float64(lag99-floor99)/1e6, met, len(overs))
	b.ReportMetric(0, "ns/op")
}

// BenchmarkOpenLoopInstant measures the generator against an instant target
// (answers at once) in this process. Run with -benchtime=3x.
func BenchmarkOpenLoopInstant(b *testing.B) {
	url := loadrun.StartInstant(b)
	for _, rate := range benchRates(b) {
		b.Run(fmt.Sprintf("rate=%.0f", rate), func(b *testing.B) { fidelity(b, url, rate, runtime.GOMAXPROCS(0)) })
	}
}

// BenchmarkOpenLoopLabOneCore measures the generator against a lab child
// pinned to one core that does no work per request (WORKERS=64, SPIN_MS=0,
// WAIT_MS=0, CPUS=1). Run with -benchtime=3x. This process is pinned away
// from the lab meanwhile (startChildLab) and runs its windows at the
// GOMAXPROCS a load child so pinned runs at (generatorProcs).
func BenchmarkOpenLoopLabOneCore(b *testing.B) {
	l := startChildLab(b, labsvc.Config{Workers: 64, SpinMS: 0, WaitMS: 0, CPUs: 1})
	procs := generatorProcs(b)
	for _, rate := range benchRates(b) {
		b.Run(fmt.Sprintf("rate=%.0f", rate), func(b *testing.B) { fidelity(b, l.target, rate, procs) })
	}
}

// generatorProcs is the GOMAXPROCS of a generator pinned as this process
// is now: the runtime's default for the processors it may use, which the
// load child sets as it pins itself (measure), or LOADRUN_BENCH_PROCS=N
// to compare another.
func generatorProcs(b *testing.B) int {
	if n, err := strconv.Atoi(os.Getenv("LOADRUN_BENCH_PROCS")); err == nil && n > 0 {
		return n
	}
	prev := runtime.GOMAXPROCS(0)
	runtime.SetDefaultGOMAXPROCS()
	procs := runtime.GOMAXPROCS(prev)
	b.Logf("as the load child, pinned away from the lab: GOMAXPROCS %d in the generator's windows", procs)
	return procs
}

// BenchmarkRetainedRecord measures the heap a finished window keeps per
// arrival (its Record plus the Metrics samples): runtime.MemStats.HeapAlloc
// after a full GC with the window's Result held, minus the same after it is
// released. It also reports the allocations of the whole window per request
// (generator and in-process target together).
func BenchmarkRetainedRecord(b *testing.B) {
	target, err := loadrun.NewTarget(loadrun.StartInstant(b), result.DefaultTimeout)
	if err != nil {
		b.Fatal(err)
	}
	sched, err := loadrun.Schedule(loadrun.Uniform, 2000, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC() // twice: the first only moves the reply buffers' pool to its victim cache
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var perRecord, allocs float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res := loadrun.Open{Target: target, Schedule: sched}.Run(context.Background(), nil)
		runtime.ReadMemStats(&after)
		allocs = float64(after.Mallocs-before.Mallocs) / float64(len(sched))
		time.Sleep(100 * time.Millisecond) // let the target's handlers finish
		held := heap()
		runtime.KeepAlive(res)
		res = result.Result{}
		perRecord = (float64(held) - float64(heap())) / float64(len(sched))
	}
	b.ReportMetric(perRecord, "retained_B/record")
	b.ReportMetric(float64(unsafe.Sizeof(result.Record{})), "sizeof_Record_B")
	b.ReportMetric(allocs, "allocs/request")
	b.ReportMetric(0, "ns/op")
}

// pairLog logs one pair, and appends it as a line to the file
// LOADRUN_BENCH_PAIRS names when it is set (a benchmark's log keeps only
// some of its lines).
func pairLog(b *testing.B, format string, args ...any) {
	b.Logf(format, args...)
	name := os.Getenv("LOADRUN_BENCH_PAIRS")
	if name == "" {
		return
	}
	f, err := os.OpenFile(name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		b.Fatalf("LOADRUN_BENCH_PAIRS: %v", err)
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

// BenchmarkRetryPath measures what a retrying client costs the generator
// where it never retries: the same Poisson window at 2,000 a second
// against an instant target (every answer ok) sent by the plain client,
// by a client with retries, a budget and a breaker (each attempt's end
// goes through the client under the window's lock), and with classes
// (each request carries X-Criticality). Windows of the three take turns,
// b.N of each; it reports, per variant, the median window's send lag p99
// and late sends, and the allocations a request. Run with -benchtime=5x.
func BenchmarkRetryPath(b *testing.B) {
	target, err := loadrun.NewTarget(loadrun.StartInstant(b), result.DefaultTimeout)
	if err != nil {
		b.Fatal(err)
	}
	sched, err := loadrun.Schedule(loadrun.Poisson, 2000, 2, 1)
	if err != nil {
		b.Fatal(err)
	}
	sp, err := retry.Parse("retries=3,budget=0.1,breaker=0.5")
	if err != nil {
		b.Fatal(err)
	}
	variants := []struct {
		name string
		open loadrun.Open
	}{
		{"plain", loadrun.Open{Target: target, Schedule: sched}},
		{"retry", loadrun.Open{Target: target, Schedule: sched, Retry: sp, RetrySeed: 1}},
		{"classes", loadrun.Open{Target: target, Schedule: sched, Classes: loadrun.WindowClasses(len(sched), 0.2, 0.3, 1)}},
	}
	lags := make([][]float64, len(variants))
	late := make([][]float64, len(variants))
	allocs := make([][]float64, len(variants))
	for b.Loop() {
		for i, v := range variants {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res := v.open.Run(context.Background(), nil)
			runtime.ReadMemStats(&after)
			row := res.Metrics.Row(2000, 2*time.Second)
			if row.OK != len(sched) || row.Attempts != len(sched) {
				b.Fatalf("%s: %d ok, %d attempts of %d arrivals: want every one answered once", v.name, row.OK, row.Attempts, len(sched))
			}
			lags[i] = append(lags[i], row.SendLagP99MS)
			late[i] = append(late[i], float64(row.Late))
			allocs[i] = append(allocs[i], float64(after.Mallocs-before.Mallocs)/float64(len(sched)))
			time.Sleep(100 * time.Millisecond) // let the target's handlers finish
		}
	}
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for i, v := range variants {
		b.ReportMetric(median(lags[i]), v.name+"_lag_p99_ms")
		b.ReportMetric(median(late[i]), v.name+"_late")
		b.ReportMetric(median(allocs[i]), v.name+"_allocs/req")
	}
	b.ReportMetric(0, "ns/op")
}
