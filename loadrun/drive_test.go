package loadrun_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"capacitylab/loadrun"
	"capacitylab/result"
)

// fakeTarget is a tiny TCP server of the test's own, on 127.0.0.1, whose
// behaviour per connection is handle. It counts connections.
type fakeTarget struct {
	URL   string
	conns atomic.Int64
}

func startFake(t testing.TB, handle func(net.Conn)) *fakeTarget {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeTarget{URL: "http://" + ln.Addr().String() + "/"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			mu.Lock()
			open[c] = true
			mu.Unlock()
			wg.Go(func() {
				handle(c)
				mu.Lock()
				delete(open, c)
				mu.Unlock()
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return f
}

// readRequest reads one request head; it reports false if the caller went.
func readRequest(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return false
	}
	req.Body.Close()
	return true
}

func reply(text string) func(net.Conn) {
	return func(c net.Conn) {
		defer c.Close()
		if readRequest(c) {
			_, _ = io.WriteString(c, text)
		}
	}
}

const okReply = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\nX-Queue-Wait-Ms: 0.5\r\nX-Service-Ms: 1.25\r\n\r\nok\n"

// instant answers 200 at once with the lab's headers.
func instant(c net.Conn) { reply(okReply)(c) }

// silent reads the request and never answers, until the caller hangs up.
func silent(c net.Conn) {
	defer c.Close()
	if readRequest(c) {
		_ = c.SetReadDeadline(time.Time{})
		_, _ = io.Copy(io.Discard, c)
	}
}

// resetAfterRead reads the request and aborts the connection with RST.
func resetAfterRead(c net.Conn) {
	if readRequest(c) {
		_ = c.(*net.TCPConn).SetLinger(0)
	}
	c.Close()
}

// closeAfterRead reads the request and closes without a word.
func closeAfterRead(c net.Conn) {
	readRequest(c)
	c.Close()
}

// checkBooks asserts the accounting rules every window must obey.
func checkBooks(t *testing.T, res result.Result, arrivals int) result.Row {
	t.Helper()
	row := res.Metrics.Row(0, time.Second)
	if len(res.Records) != arrivals || row.Arrivals != arrivals {
		t.Errorf("%d records, %d counted, want one per arrival: %d", len(res.Records), row.Arrivals, arrivals)
	}
	if row.Lost != 0 {
		t.Errorf("lost = %d, want 0", row.Lost)
	}
	if row.Sent+row.NotSent != arrivals {
		t.Errorf("sent %d + not_sent %d != arrivals %d", row.Sent, row.NotSent, arrivals)
	}
	for i, r := range res.Records {
		if r.Seq != i {
			t.Fatalf("record %d has seq %d", i, r.Seq)
		}
		if r.Outcome == result.Unfinished {
			t.Fatalf("record %d has no outcome", i)
		}
		if r.Outcome != result.NotSent && (r.Sent < r.Intended || r.End < r.Sent) {
			t.Fatalf("record %d times out of order: %+v", i, r)
		}
	}
	return row
}

func uniform(t *testing.T, rate, seconds float64) []time.Duration {
	t.Helper()
	s, err := loadrun.Schedule(loadrun.Uniform, rate, seconds, 1)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpenOutcomes(t *testing.T) {
	down, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + down.Addr().String() + "/"
	down.Close() // nothing listens there now

	cases := []struct {
		name    string
		handle  func(net.Conn) // nil: use downURL
		outcome result.Outcome
		reason  string
		status  int
	}{
		// A healthy target: every request ok, the lab's headers recorded.
		{"instant 200", instant, result.OK, "", 200},
		// The lab's door is full: 503 is a refusal, not an error.
		{"503", reply("HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"), result.Refused, "", 503},
		// Nothing listening: connection refused at once.
		{"target down", nil, result.Error, result.ReasonConnRefused, 0},
		// The target aborts the connection: reset.
		{"reset", resetAfterRead, result.Error, result.ReasonReset, 0},
		// The target hangs up without a reply.
		{"closed without reply", closeAfterRead, result.Error, result.ReasonEOF, 0},
		// Garbage instead of HTTP.
		{"garbage reply", reply("HELLO THERE\r\n\r\n"), result.Error, result.ReasonMalformed, 0},
		// A reply cut off in the middle of its body.
		{"truncated body", reply("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"), result.Error, result.ReasonEOF, 200},
		// Another status is an error that names it.
		{"500", reply("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"), result.Error, "status_500", 500},
		// A target slower than the caller's patience: the caller gives up.
		{"slow beyond timeout", silent, result.Gaveup, result.ReasonReadTimeout, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			url := downURL
			if c.handle != nil {
				url = startFake(t, c.handle).URL
			}
			target, err := loadrun.NewTarget(url, 300*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			sched := uniform(t, 100, 0.3)
			res := loadrun.Open{Target: target, Schedule: sched}.Run(context.Background(), nil)
			row := checkBooks(t, res, len(sched))
			for _, r := range res.Records {
				if r.Outcome != c.outcome || r.Reason != c.reason || r.Status != c.status {
					t.Fatalf("record %d: %v/%q/%d, want %v/%q/%d", r.Seq, r.Outcome, r.Reason, r.Status, c.outcome, c.reason, c.status)
				}
			}
			if c.outcome == result.OK {
				r := res.Records[0]
				if r.QueueWaitMS != 0.5 || r.ServiceMS != 1.25 {
					t.Errorf("lab headers %v/%v, want 0.5/1.25", r.QueueWaitMS, r.ServiceMS)
				}
				if row.N != len(sched) || row.P99MS <= 0 {
					t.Errorf("n=%d p99=%v, want n=%d and a positive p99", row.N, row.P99MS, len(sched))
				}
			}
			if c.outcome == result.Gaveup {
				for _, r := range res.Records {
					if wait := r.End - r.Sent; wait < 300*time.Millisecond || wait > 600*time.Millisecond {
						t.Fatalf("record %d gave up after %v, want about the 300ms timeout", r.Seq, wait)
					}
				}
			}
		})
	}
}

// Arrivals that find the in-flight cap full are recorded, not dropped.
func TestOpenInFlightCap(t *testing.T) {
	target, err := loadrun.NewTarget(startFake(t, silent).URL, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	sched := uniform(t, 200, 0.25) // 50 arrivals, all within the first timeout
	res := loadrun.Open{Target: target, Schedule: sched, MaxInFlight: 5}.Run(context.Background(), nil)
	row := checkBooks(t, res, 50)
	if row.Sent != 5 || row.Gaveup != 5 || row.NotSent != 45 {
		t.Errorf("sent %d gaveup %d not_sent %d, want 5, 5, 45", row.Sent, row.Gaveup, row.NotSent)
	}
	for _, r := range res.Records[5:] {
		if r.Outcome != result.NotSent || r.Reason != result.ReasonInFlightCap {
			t.Fatalf("record %d: %v/%q, want not_sent/inflight_cap", r.Seq, r.Outcome, r.Reason)
		}
	}
}

// Cancelling mid-window stops at once and still accounts for every arrival.
func TestOpenCancel(t *testing.T) {
	target, err := loadrun.NewTarget(startFake(t, silent).URL, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sched := uniform(t, 100, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	res := loadrun.Open{Target: target, Schedule: sched}.Run(ctx, nil)
	if took := time.Since(begin); took > time.Second {
		t.Errorf("run took %v after a 300ms cancel, want it to stop promptly", took)
	}
	row := checkBooks(t, res, len(sched))
	if row.Sent == 0 || row.NotSent == 0 || row.Error != row.Sent {
		t.Errorf("sent %d error %d not_sent %d: want some sent (all ending error/canceled) and the rest not_sent", row.Sent, row.Error, row.NotSent)
	}
	for _, r := range res.Records {
		if r.Reason != result.ReasonCanceled {
			t.Fatalf("record %d: %v/%q, want reason canceled", r.Seq, r.Outcome, r.Reason)
		}
	}
}

// A burst the generator cannot send on time shows up as late sends.
func TestOpenReportsLateSends(t *testing.T) {
	target, err := loadrun.NewTarget(startFake(t, instant).URL, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sched := make([]time.Duration, 400) // 400 arrivals all due at the same instant
	res := loadrun.Open{Target: target, Schedule: sched}.Run(context.Background(), nil)
	row := checkBooks(t, res, len(sched))
	if row.Late == 0 || row.SendLagMaxMS <= 1 || row.SendLagMaxMS < row.SendLagP99MS {
		t.Errorf("late %d, lag p99 %vms, max %vms: want late sends reported", row.Late, row.SendLagP99MS, row.SendLagMaxMS)
	}
	t.Logf("400 simultaneous arrivals: ok %d, late %d, lag p99 %vms, max %vms", row.OK, row.Late, row.SendLagP99MS, row.SendLagMaxMS)
}

func TestOpenProgress(t *testing.T) {
	target, err := loadrun.NewTarget(startFake(t, instant).URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []loadrun.Progress
	sched := uniform(t, 100, 1)
	loadrun.Open{Target: target, Schedule: sched}.Run(context.Background(), func(p loadrun.Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	})
	// One every ProgressEvery (three in a window of just under a second),
	// plus the final one.
	if want := int(time.Second / loadrun.ProgressEvery); len(got) < want {
		t.Fatalf("%d progress reports in a 1 s window, want at least %d", len(got), want)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Sent < got[i-1].Sent || got[i].Ended < got[i-1].Ended || got[i].Elapsed < got[i-1].Elapsed {
			t.Fatalf("progress went backwards: %+v then %+v", got[i-1], got[i])
		}
	}
	if last := got[len(got)-1]; last.Sent != len(sched) || last.Ended != len(sched) || last.InFlight != 0 {
		t.Errorf("final progress %+v, want all %d sent and ended", last, len(sched))
	}
}

func TestClosedLoop(t *testing.T) {
	target, err := loadrun.NewTarget(startFake(t, instant).URL, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		clients int
		think   time.Duration
		maxSent int
	}{
		// Four busy clients against an instant target: many requests.
		{"4 clients, no think", 4, 0, 1 << 30},
		// Two clients thinking 50 ms: at most 2 × (500/50 + 1) requests.
		{"2 clients, 50ms think", 2, 50 * time.Millisecond, 22},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := loadrun.Closed{Target: target, Clients: c.clients, Think: c.think, Length: 500 * time.Millisecond}.Run(context.Background(), nil)
			row := checkBooks(t, res, len(res.Records))
			if row.OK != row.Sent || row.OK == 0 || row.Sent > c.maxSent {
				t.Errorf("sent %d ok %d, want all ok and at most %d", row.Sent, row.OK, c.maxSent)
			}
			for _, r := range res.Records {
				if r.Intended != r.Sent || r.Intended > 500*time.Millisecond {
					t.Fatalf("record %d: intended %v sent %v; closed loop sends when it means to, within the window", r.Seq, r.Intended, r.Sent)
				}
			}
		})
	}
}

func TestNewTargetRejectsBadInput(t *testing.T) {
	cases := []struct {
		name    string
		url     string
		timeout time.Duration
	}{
		// Only plain HTTP is spoken.
		{"https", "https://127.0.0.1:8000", time.Second},
		// A bare host:port is not a URL.
		{"no scheme", "127.0.0.1:8000", time.Second},
		// A negative timeout means nothing.
		{"negative timeout", "http://127.0.0.1:8000", -time.Second},
		// An hour-long timeout is beyond the cap.
		{"huge timeout", "http://127.0.0.1:8000", time.Hour},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := loadrun.NewTarget(c.url, c.timeout); err == nil {
				t.Errorf("NewTarget(%q, %v) accepted it", c.url, c.timeout)
			}
		})
	}
}

// Running out of file descriptors is an error with its reason, not a lost
// request. The test lowers this process's descriptor limit for one window.
func TestOpenOutOfFiles(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors in /proc/self/fd")
	}
	target, err := loadrun.NewTarget(startFake(t, silent).URL, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = uint64(len(fds) + 20) // room for about ten requests (two descriptors each, in process)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("cannot lower RLIMIT_NOFILE: %v", err)
	}
	sched := uniform(t, 200, 0.25)
	res := loadrun.Open{Target: target, Schedule: sched}.Run(context.Background(), nil)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	row := checkBooks(t, res, len(sched))
	emfile := 0
	for _, r := range res.Records {
		if r.Outcome == result.Error && r.Reason == result.ReasonEMFILE {
			emfile++
		}
	}
	if emfile == 0 || row.Error < emfile {
		t.Errorf("%d error/emfile records (row: %+v), want some", emfile, row)
	}
	t.Logf("with ~20 spare descriptors: ok %d gaveup %d error %d (emfile %d)", row.OK, row.Gaveup, row.Error, emfile)
}
