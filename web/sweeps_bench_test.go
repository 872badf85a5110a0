package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"capacitylab/labsvc"
	"capacitylab/lessons"
	"capacitylab/loadrun"
	"capacitylab/runner"
	"capacitylab/store"
)

// benchWatchers is how many websocket watchers BenchmarkWatchers connects.
const benchWatchers = 1000

// benchSweep is the run the watcher benchmark measures: three windows, the
// watchers connect during the first, so windows 1 and 2 are the ones to
// compare with and without them.
const benchSweep = `{"workers":4,"spin_ms":1,"wait_ms":9,"cpus":1,"rates":[100,200,300],"seconds":2,"seed":11}`

// runAndWatch posts benchSweep and, with watchers > 0, connects that many
// websocket watchers from the start. It returns the rows and, for every
// row event a watcher received live (not replayed), the time from the
// event being logged to the watcher reading it.
func runAndWatch(b *testing.B, site *testSite, watchers int) ([]loadrun.Row, []time.Duration) {
	b.Helper()
	code, _, m := postSweep(b, site.client(), site.srv.URL, benchSweep)
	if code != http.StatusAccepted {
		b.Fatalf("POST: %d %v", code, m)
	}
	id := m["id"].(string)
	var mu sync.Mutex
	var delays []time.Duration
	var rows []loadrun.Row
	var wg sync.WaitGroup
	dialer := websocket.Dialer{HandshakeTimeout: 30 * time.Second}
	errs := make(chan error, watchers+1)
	watch := func(keepRows bool) {
		defer wg.Done()
		conn, _, err := dialer.Dial(wsURL(site.srv.URL, id, 0), http.Header{"Origin": {site.srv.URL}})
		if err != nil {
			errs <- err
			return
		}
		defer conn.Close()
		connected := time.Now()
		for {
			conn.SetReadDeadline(time.Now().Add(60 * time.Second))
			_, data, err := conn.ReadMessage()
			if err != nil {
				if !websocket.IsCloseError(err, websocket.CloseNormalClosure) {
					errs <- err
				}
				return
			}
			now := time.Now()
			if !bytes.Contains(data, []byte(`"kind":"row"`)) {
				continue // progress and the rest: a browser would only move a bar
			}
			var e runner.Event
			if err := json.Unmarshal(data, &e); err != nil {
				errs <- err
				return
			}
			if e.Kind != runner.KindRow {
				continue
			}
			mu.Lock()
			if e.At.After(connected) {
				delays = append(delays, now.Sub(e.At))
			}
			if keepRows {
				rows = append(rows, *e.Row)
			}
			mu.Unlock()
		}
	}
	wg.Add(1)
	go watch(true)
	for range watchers {
		wg.Add(1)
		go watch(false)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatalf("watcher: %v", err)
	}
	return rows, delays
}

// BenchmarkWatchers runs the same sweep without watchers and with 1,000
// websocket watchers on loopback, and reports the p99 and max time from a
// row being logged to a watcher reading it, and the run's ok/s and p99 in
// windows 1 and 2 both times, with the generator's send lag p99 and the
// lab's own mean service time in those windows, so the watchers' cost to
// the measurement can be seen and placed. Run it with -benchtime=1x.
func BenchmarkWatchers(b *testing.B) {
	lab := buildLab(b)
	for b.Loop() {
		site := newBenchSite(b, lab)
		alone, _ := runAndWatch(b, site, 0)
		watched, delays := runAndWatch(b, site, benchWatchers)
		if len(alone) != 3 || len(watched) != 3 {
			b.Fatalf("rows: %d alone, %d watched; want 3 each", len(alone), len(watched))
		}
		slices.Sort(delays)
		if len(delays) == 0 {
			b.Fatal("no row reached a watcher live")
		}
		p99 := loadrun.NearestRank(delays, 99)
		b.ReportMetric(float64(p99.Microseconds())/1000, "row-p99-ms")
		b.ReportMetric(float64(delays[len(delays)-1].Microseconds())/1000, "row-max-ms")
		b.ReportMetric(float64(len(delays)), "rows-delivered")
		for _, w := range []int{1, 2} {
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
// test helpers take a *testing.T); only its srv, store and client are set.
func newBenchSite(b *testing.B, lab string) *testSite {
	b.Helper()
	st, err := store.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	c := loadCourse(b)
	rn, err := runner.New(runner.Config{Child: labsvc.ChildCommand{Path: lab, Args: []string{"lab-child"}}, Store: st})
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
	return &testSite{srv: srv, store: st, course: c}
}
