package web

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"capacitylab/affinity"
	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/measure"
	"capacitylab/result"
	"capacitylab/runner"
	"capacitylab/store"
)

// benchWatchers is how many websocket watchers BenchmarkWatchers connects.
const benchWatchers = 1000

// benchSweep is the run the watcher benchmark measures: three windows, the
// watchers connect during the first, so windows 1 and 2 are the ones to
// compare with and without them.
const benchSweep = `{"workers":4,"spin_ms":1,"wait_ms":9,"cpus":1,"rates":[100,200,300],"seconds":2,"seed":11}`

// benchOverTimeEnv, set to 1, makes benchSweep a run over time with
// windows of 6 s (benchSweepOverTime): a sample every second, and the
// panels that follow the samples while each window is measured
// (samplePanelEvery), sent to every watcher.
const benchOverTimeEnv = "CAPACITYLAB_BENCH_OVER_TIME"

const benchSweepOverTime = `{"workers":4,"spin_ms":1,"wait_ms":9,"cpus":1,"rates":[100,200,300],"seconds":6,"seed":11,"over_time":true}`

// benchBody is the sweep the benchmark posts: benchSweep, or
// benchSweepOverTime with benchOverTimeEnv=1.
func benchBody() string {
	if os.Getenv(benchOverTimeEnv) == "1" {
		return benchSweepOverTime
	}
	return benchSweep
}

// watcherRoleEnv selects the watcher role: when it is set (to the number of
// websocket clients to open), the test binary is not a test run but a class
// of watchers in a process of its own (see watcherMain), as browsers would
// be.
const watcherRoleEnv = "CAPACITYLAB_BENCH_WATCHERS"

// TestMain runs the tests, or, with watcherRoleEnv set, the watcher role.
func TestMain(m *testing.M) {
	measure.ChildMain(loadChildEnv)
	if n := os.Getenv(watcherRoleEnv); n != "" {
		os.Exit(watcherMain(n, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// watchReport is what a watcher process prints when every stream ended.
type watchReport struct {
	RowDelaysUS []int64  `json:"row_delays_us"` // per row event received live: wall clock at reading minus the event's at
	RowSeqs     []int    `json:"row_seqs"`      // each of those rows' seq
	Rows        int      `json:"rows"`          // row events received, live or replayed
	Progress    int      `json:"progress"`      // progress events received, every watcher together
	Gaps        int      `json:"gaps"`          // seq jumps seen (each one a superseded progress)
	Panels      []int64  `json:"panels_us"`     // each panel fetch's time (see watcherPanelsEnv)
	Carried     int      `json:"carried"`       // panel messages that brought their panel
	PanelLagsUS []int64  `json:"panel_lags_us"` // from reading a row to reading the panel after it
	Errors      []string `json:"errors"`
}

// watcherPanelsEnv: unless it is "0", each watcher does what runs.js does
// in a learner's browser to redraw the chart and the rows: it reads the
// panel messages the stream sends after rows and the last event, and
// fetches the panel (/runs/{id}/panel) only when a panel message comes
// without one, so the benchmark charges the server what a class of
// browsers costs it.
const watcherPanelsEnv = "CAPACITYLAB_BENCH_WATCHER_PANELS"

// watcherMain is the watcher role: it reads one line "wsURL origin" from
// in, opens n websocket clients of that URL, reads every stream to its
// end, and prints a watchReport as JSON on out. Delivery times are wall
// clock readings of this process against the event's at, stamped by the
// server: one clock, as both processes run on one machine.
func watcherMain(nText string, in io.Reader, out, errOut io.Writer) int {
	var n int
	if _, err := fmt.Sscan(nText, &n); err != nil || n < 1 {
		fmt.Fprintf(errOut, "%s=%q: want a number of watchers, 1 or more\n", watcherRoleEnv, nText)
		return 2
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	var url, origin string
	if _, serr := fmt.Sscan(line, &url, &origin); err != nil || serr != nil {
		fmt.Fprintf(errOut, "watcher: want a line \"wsURL origin\" on stdin, got %q (%v %v)\n", line, err, serr)
		return 2
	}
	var mu sync.Mutex
	var rep watchReport
	var wg sync.WaitGroup
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	// Each browser keeps its connection to the site: one idle connection
	// a watcher.
	web := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n}}
	panelURL := ""
	if os.Getenv(watcherPanelsEnv) != "0" {
		id, _, _ := strings.Cut(strings.TrimPrefix(url[strings.Index(url, "/ws/runs/"):], "/ws/runs/"), "?")
		panelURL = origin + "/runs/" + id + "/panel"
	}
	var fetches sync.WaitGroup
	fetchPanel := func() {
		if panelURL == "" {
			return
		}
		fetches.Go(func() {
			start := time.Now()
			res, err := web.Get(panelURL)
			if err == nil {
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if err == nil && res.StatusCode != http.StatusOK {
					err = fmt.Errorf("GET %s: %s", panelURL, res.Status)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				rep.Errors = append(rep.Errors, err.Error())
				return
			}
			rep.Panels = append(rep.Panels, time.Since(start).Microseconds())
		})
	}
	dials := make(chan struct{}, 32) // dial 32 at a time, as a class arrives
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dials <- struct{}{}
			conn, _, err := dialer.Dial(url, http.Header{"Origin": {origin}})
			<-dials
			if err != nil {
				mu.Lock()
				rep.Errors = append(rep.Errors, err.Error())
				mu.Unlock()
				return
			}
			defer conn.Close()
			connected := time.Now()
			var delays []int64
			var seqs []int
			rows, progress, gaps, last, carried := 0, 0, 0, 0, 0
			var rowRead time.Time // when the last row was read, until its panel came
			var panelLags []int64
			var failure string
			for {
				conn.SetReadDeadline(time.Now().Add(60 * time.Second))
				_, data, err := conn.ReadMessage()
				if err != nil {
					if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
						failure = err.Error()
					}
					break
				}
				now := time.Now()
				// Only what the measure needs: a browser parses its
				// own messages on its own machine, so the thousand
				// watchers here should spend little on it. seq, kind
				// and at lead every event (runner.Event's field
				// order), so the head up to at is decoded alone.
				var e struct {
					Seq  int         `json:"seq"`
					Kind runner.Kind `json:"kind"`
					At   time.Time   `json:"at"`
				}
				head := data
				if i := bytes.Index(data, []byte(`"at":"`)); i >= 0 {
					if j := bytes.IndexByte(data[i+6:], '"'); j >= 0 {
						end := i + 6 + j + 1
						head = append(data[:end:end], '}')
					}
				}
				if json.Unmarshal(head, &e) != nil {
					if err := json.Unmarshal(data, &e); err != nil {
						failure = err.Error()
						break
					}
				}
				if e.Kind != "panel" {
					if e.Seq != last+1 {
						gaps++
					}
					last = e.Seq
				}
				switch e.Kind {
				case runner.KindProgress:
					progress++
				case runner.KindRow:
					rows++
					if e.At.After(connected) {
						delays = append(delays, now.Sub(e.At).Microseconds())
						seqs = append(seqs, e.Seq)
					}
					rowRead = now
				case "panel":
					if !bytes.Contains(data, []byte(`"panel":`)) {
						fetchPanel()
					} else {
						carried++
					}
					if !rowRead.IsZero() {
						panelLags = append(panelLags, now.Sub(rowRead).Microseconds())
						rowRead = time.Time{}
					}
				}
			}
			mu.Lock()
			rep.RowDelaysUS = append(rep.RowDelaysUS, delays...)
			rep.RowSeqs = append(rep.RowSeqs, seqs...)
			rep.Rows += rows
			rep.Progress += progress
			rep.Gaps += gaps
			rep.Carried += carried
			rep.PanelLagsUS = append(rep.PanelLagsUS, panelLags...)
			if failure != "" {
				rep.Errors = append(rep.Errors, failure)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	fetches.Wait()
	if err := json.NewEncoder(out).Encode(rep); err != nil {
		fmt.Fprintln(errOut, err)
		return 1
	}
	return 0
}

// watcherNiceEnv sets the niceness of the watcher process's scheduling
// group (default defaultWatcherNice; 0 runs it as the server runs).
const watcherNiceEnv = "CAPACITYLAB_BENCH_WATCHER_NICE"

// defaultWatcherNice is the watcher process's niceness. Not lowered by
// default: at 19 the watchers, starved whenever the machine is busy, read
// rows late and so measure their own waiting rather than the server's
// delivery.
const defaultWatcherNice = 0

// watcherCPUsEnv sets the processors the watcher process may use:
// "server" (the default: those the benchmark's server keeps for itself
// and its labs, which the process inherits), "free" (those kept free for
// the load generator), "lab" (the processors the run's lab child will be
// pinned to, labsvc.LabCPUs of benchSweep's config), or a list as taskset
// -c takes it (e.g. "1").
//
// Why it matters: the watchers stand in for a class's browsers, whose
// reading happens on their own machines. On this one machine their reading
// must land somewhere, and the kernel wakes a reader on the processor of
// the thread that woke it (a loopback write is a synchronous wake-up), the
// server's. "server" charges the reading to the server's processors, as
// the server's own fan-out is; "free" charges it to the generator's, the
// worst case for the generator's send lag.
const watcherCPUsEnv = "CAPACITYLAB_BENCH_WATCHER_CPUS"

// watcherCPUs is the taskset -c list for the watcher process, or "" to
// leave it the benchmark process's processors (see watcherCPUsEnv); free
// is the processors kept free for the generator.
func watcherCPUs(b *testing.B, free []int) string {
	b.Helper()
	var cpus []int
	switch v := os.Getenv(watcherCPUsEnv); v {
	case "", "server":
		return ""
	case "free":
		if len(free) == 0 {
			b.Fatalf("%s=free: no processor was kept free for the generator on this machine", watcherCPUsEnv)
		}
		cpus = free
	case "lab":
		var q runner.Request
		if err := json.Unmarshal([]byte(benchSweep), &q); err != nil {
			b.Fatal(err)
		}
		var err error
		if cpus, err = labsvc.LabCPUs(q.Config); err != nil || len(cpus) == 0 {
			b.Logf("watchers not confined: the lab's processors are unknown (%v)", err)
			return ""
		}
	default:
		if _, err := affinity.ParseCPUList(v); err != nil {
			b.Fatalf("%s=%q: want server, free, lab, or a processor list such as 0 or 0-1: %v", watcherCPUsEnv, v, err)
		}
		return v
	}
	list := make([]string, len(cpus))
	for i, c := range cpus {
		list[i] = strconv.Itoa(c)
	}
	return strings.Join(list, ",")
}

// startWatchers starts a watcher process of n clients; it waits for the
// line naming the run (see watcherMain).
func startWatchers(b *testing.B, n int, free []int) (cmd *exec.Cmd, stdin io.WriteCloser, stdout *strings.Builder) {
	b.Helper()
	nice := defaultWatcherNice
	if v := os.Getenv(watcherNiceEnv); v != "" {
		if _, err := fmt.Sscan(v, &nice); err != nil || nice < 0 || nice > 19 {
			b.Fatalf("%s=%q: want a niceness from 0 to 19", watcherNiceEnv, v)
		}
	}
	args := []string{"nice", "-n", fmt.Sprint(nice), os.Args[0], "-test.run=^$"}
	cpus := watcherCPUs(b, free)
	if cpus != "" {
		args = append([]string{"taskset", "-c", cpus}, args...)
	}
	b.Logf("watcher process on processors %q (empty: the server's), niceness %d", cpus, nice)
	cmd = exec.Command(args[0], args[1:]...)
	// A session of its own: with the kernel's autogroup scheduling (on by
	// default) a session's processes share one group's processor time,
	// so the watchers, started from the server's session, would take it
	// from the server and its load generator, and a process's niceness
	// would only rank it within that group. Browsers are nobody's
	// group-mates; the new group's niceness is set below.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", watcherRoleEnv, n))
	stdout = &strings.Builder{}
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	// Where autogroups exist, rank the watchers' group as the process
	// would be ranked (a missing file means no autogroups: nothing to do).
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/autogroup", cmd.Process.Pid), []byte(fmt.Sprint(nice)), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
		b.Logf("watcher group niceness not set: %v", err)
	}
	return cmd, stdin, stdout
}

// runAndWatch posts benchSweep and, with watchers > 0, has a watcher
// process connect that many websocket clients at once. It waits for the
// run to end and returns its rows and the watchers' report.
func runAndWatch(b *testing.B, site *testSite, rn *runner.Runner, watchers int) ([]result.Row, watchReport, cpuTimes) {
	b.Helper()
	var cpu cpuTimes
	startCPU := processCPU(b)
	var cmd *exec.Cmd
	var stdin io.WriteCloser
	var stdout *strings.Builder
	if watchers > 0 {
		cmd, stdin, stdout = startWatchers(b, watchers, site.free)
	}
	code, _, m := postSweep(b, site.client(), site.srv.URL, benchBody())
	if code != http.StatusAccepted {
		b.Fatalf("POST: %d %v", code, m)
	}
	id := m["id"].(string)
	var rep watchReport
	if watchers > 0 {
		fmt.Fprintf(stdin, "%s %s\n", wsURL(site.srv.URL, id, 0), site.srv.URL)
		stdin.Close()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		snap, ok := rn.Get(id)
		if !ok {
			b.Fatalf("run %s is gone", id)
		}
		if snap.Status != store.RunQueued && snap.Status != store.RunRunning {
			if snap.Status != store.RunDone {
				b.Fatalf("run %s: %s (%s)", id, snap.Status, snap.Reason)
			}
			if watchers > 0 {
				if err := cmd.Wait(); err != nil {
					b.Fatalf("watcher process: %v", err)
				}
				cpu.watchers = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil {
					b.Fatalf("watcher report %q: %v", stdout.String(), err)
				}
				if len(rep.Errors) > 0 {
					b.Fatalf("%d watchers failed, the first: %s", len(rep.Errors), rep.Errors[0])
				}
			}
			cpu.server = processCPU(b) - startCPU
			return snap.Rows, rep, cpu
		}
		if time.Now().After(deadline) {
			b.Fatalf("run %s still %s after 2 minutes", id, snap.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cpuTimes is the processor time a run cost the server process (the web
// server, the runner and the websocket fan-out; the load generator is the
// run's load child) and the watcher process.
type cpuTimes struct {
	server, watchers time.Duration
}

// processCPU is this process's user and system time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWatchers runs the same sweep without watchers and with 1,000
// websocket watchers on loopback (in a process of their own, as a class's
// browsers would be), and reports the p99 and max time from a row being
// logged to a watcher reading it, and the run's ok/s and p99 in windows 1
// and 2 both times, with the generator's send lag p99 and the lab's own
// mean service time in those windows, so the watchers' cost to the
// measurement can be seen and placed, and the processor time the run cost
// the server process and the watcher process. Run it with -benchtime=1x.
func BenchmarkWatchers(b *testing.B) {
	lab := buildLab(b)
	for b.Loop() {
		site, rn := newBenchSite(b, lab)
		alone, _, cpuAlone := runAndWatch(b, site, rn, 0)
		watched, rep, cpuWatched := runAndWatch(b, site, rn, benchWatchers)
		b.ReportMetric(cpuAlone.server.Seconds(), "server-cpu-s-alone")
		b.ReportMetric(cpuWatched.server.Seconds(), "server-cpu-s-watched")
		b.ReportMetric(cpuWatched.watchers.Seconds(), "watchers-cpu-s")
		if len(alone) != 3 || len(watched) != 3 {
			b.Fatalf("rows: %d alone, %d watched; want 3 each", len(alone), len(watched))
		}
		if rep.Rows != 3*benchWatchers {
			b.Fatalf("watchers read %d row events, want %d (3 rows × %d watchers)", rep.Rows, 3*benchWatchers, benchWatchers)
		}
		delays := make([]time.Duration, len(rep.RowDelaysUS))
		for i, us := range rep.RowDelaysUS {
			delays[i] = time.Duration(us) * time.Microsecond
		}
		if len(delays) == 0 {
			b.Fatal("no row reached a watcher live")
		}
		slices.Sort(delays)
		p99 := result.NearestRank(delays, 99)
		b.ReportMetric(float64(p99.Microseconds())/1000, "row-p99-ms")
		b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "row-max-ms")
		b.ReportMetric(float64(len(delays)), "rows-live")
		b.ReportMetric(float64(rep.Carried)/benchWatchers, "panels-carried/watcher")
		if len(rep.PanelLagsUS) > 0 {
			lags := slices.Clone(rep.PanelLagsUS)
			slices.Sort(lags)
			b.ReportMetric(float64(lags[len(lags)*99/100])/1000, "panel-after-row-p99-ms")
		}
		if len(rep.Panels) > 0 {
			panels := slices.Clone(rep.Panels)
			slices.Sort(panels)
			b.ReportMetric(float64(len(panels)), "panels")
			b.ReportMetric(float64(panels[len(panels)*99/100])/1000, "panel-p99-ms")
		}
		b.ReportMetric(float64(rep.Progress)/benchWatchers, "progress/watcher")
		b.ReportMetric(float64(rep.Gaps)/benchWatchers, "gaps/watcher")
		// The generator's send lag watched against alone, in one run of
		// the benchmark: 1 means the class cost it nothing. And whether
		// the rows' counts are the same (the same arrivals, all ok).
		same := 1.0
		for w := range 3 {
			a, x := alone[w], watched[w]
			if a.Sent != x.Sent || a.OK != x.OK || a.Refused != x.Refused || a.Gaveup != x.Gaveup || a.Error != x.Error || a.NotSent != x.NotSent || a.Lost != 0 || x.Lost != 0 {
				same = 0
			}
		}
		b.ReportMetric(same, "rows-counts-same")
		for _, w := range []int{1, 2} {
			if alone[w].SendLagP99MS > 0 {
				b.ReportMetric(watched[w].SendLagP99MS/alone[w].SendLagP99MS, fmt.Sprintf("w%d-lagp99-watched/alone", w))
			}
			b.ReportMetric(alone[w].OKPerSec, fmt.Sprintf("w%d-ok/s-alone", w))
			b.ReportMetric(watched[w].OKPerSec, fmt.Sprintf("w%d-ok/s-watched", w))
			b.ReportMetric(alone[w].P99MS, fmt.Sprintf("w%d-p99ms-alone", w))
			b.ReportMetric(watched[w].P99MS, fmt.Sprintf("w%d-p99ms-watched", w))
			b.ReportMetric(alone[w].SendLagP99MS, fmt.Sprintf("w%d-lagp99-alone", w))
			b.ReportMetric(watched[w].SendLagP99MS, fmt.Sprintf("w%d-lagp99-watched", w))
			b.ReportMetric(alone[w].LabServiceMS, fmt.Sprintf("w%d-labsvc-alone", w))
			b.ReportMetric(watched[w].LabServiceMS, fmt.Sprintf("w%d-labsvc-watched", w))
		}
	}
}

// newBenchSite starts a real server with a runner for a benchmark (the
// test helpers take a *testing.T); only its srv, store, client and free are
// set. It places the benchmark's process as cmd/server places itself: one
// processor kept free of the server's work for the runs' load children
// (runner.KeepGeneratorsFree), put back when the benchmark ends.
func newBenchSite(b *testing.B, lab string) (*testSite, *runner.Runner) {
	b.Helper()
	free, kept, undo, err := runner.KeepGeneratorsFree(1)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := undo(); err != nil {
			b.Error(err)
		}
	})
	b.Logf("processors kept free for the load generator: %v (the server's: %v)", free, kept)
	st, err := store.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	c := loadCourse(b)
	rn, err := runner.New(runner.Config{Load: testLoad(b), Lab: labsvc.ChildCommand{Path: lab, Args: []string{"lab-child"}}, Store: st, Generator: free})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(NewServer(Deps{
		Course: func() (*lessons.Course, error) { return c, nil },
		Store:  st,
		Assets: newAssets(b),
		Runner: rn,
	}))
	b.Cleanup(func() {
		rn.Close()
		srv.Close()
		st.Close()
	})
	return &testSite{srv: srv, store: st, course: c, free: free}, rn
}
