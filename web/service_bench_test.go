package web

import (
	"bufio"
	"encoding/csv"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"capacitylab/lessons"
	"capacitylab/result"
	"capacitylab/store"
)

// BenchmarkServiceUpload1M measures what an upload of 1,000,000 of load's
// records costs the server, both ways its analysis could be had: upload,
// POST /service of the CSV (63 MB) through a real server on 127.0.0.1 with
// its SQLite file, read, analysed and stored in one transaction; view,
// GET of the upload's run page with the analysis stored at upload;
// budget, the same page for another budget, the limit re-derived from
// the stored analysis (Analysis.WithBudget). Besides ns/op it reports peak-heap-MB:
// the most heap held by live and not yet collected objects
// (runtime/metrics /memory/classes/heap/objects:bytes, the server and the
// client in this one process; the client streams the file, holding next
// to none of it) sampled every millisecond, after a GC
// before each operation.
//
//	go test ./web -run '^$' -bench ServiceUpload1M -benchtime 3x
func BenchmarkServiceUpload1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.csv")
	writeMillion(b, path)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	st, err := store.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	course := loadCourse(b)
	srv := httptest.NewServer(NewServer(Deps{Course: func() (*lessons.Course, error) { return course, nil }, Store: st, Assets: newAssets(b)}))
	b.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var id string
	b.Run("upload", func(b *testing.B) {
		b.SetBytes(fi.Size())
		peakHeap(b, func() {
			// The body is streamed from the file, so the client holds
			// next to none of it: the heap measured is the server's.
			pr, pw := io.Pipe()
			mw := multipart.NewWriter(pw)
			go func() {
				mw.WriteField("budget_ms", "50")
				fw, _ := mw.CreateFormFile("results", "big.csv")
				f, err := os.Open(path)
				if err == nil {
					_, err = io.Copy(fw, f)
					f.Close()
				}
				if err == nil {
					err = mw.Close()
				}
				pw.CloseWithError(err)
			}()
			res, err := c.Post(srv.URL+"/service", mw.FormDataContentType(), pr)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusSeeOther {
				b.Fatalf("upload: %d", res.StatusCode)
			}
			id = strings.TrimPrefix(res.Header.Get("Location"), "/runs/")
		})
	})
	if id == "" {
		b.Fatal("nothing uploaded")
	}
	for _, q := range []struct{ name, query string }{{"view", ""}, {"budget", "?budget_ms=80"}} {
		b.Run(q.name, func(b *testing.B) {
			peakHeap(b, func() {
				res, err := c.Get(srv.URL + "/runs/" + id + q.query)
				if err != nil {
					b.Fatal(err)
				}
				page, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-testid="upload-limit"`) {
					b.Fatalf("run page: %d", res.StatusCode)
				}
			})
		})
	}
}

// peakHeap runs op b.N times, each after a GC, and reports the most heap
// in use while any ran.
func peakHeap(b *testing.B, op func()) {
	var peak uint64
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				metrics.Read(sample)
				peak = max(peak, sample[0].Value.Uint64())
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
		b.StartTimer()
		op()
		b.StopTimer()
		close(stop)
		wg.Wait()
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
}

// writeMillion writes 1,000,000 of load's records to path: ten windows of
// 20 s at 1,000 to 10,000 arrivals a second (evenly spaced, cut at the
// millionth), of a service that answers at most 6,000 a second in 0.5 ms
// each when it keeps up; past that, requests wait behind each other and
// those that would end a second after their window give up.
func writeMillion(b *testing.B, path string) {
	const n = 1_000_000
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	cw := csv.NewWriter(bw)
	if err := cw.Write(result.CSVHeader()); err != nil {
		b.Fatal(err)
	}
	count := 0
	batch := make([]result.Record, 0, 10_000)
	flush := func() {
		if err := result.AppendCSV(cw, batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	for w := 0; w < 10 && count < n; w++ {
		rate := float64(1000 * (w + 1))
		gap := time.Duration(float64(time.Second) / rate)
		free := time.Duration(0)
		for i := 0; i < int(rate*20) && count < n; i++ {
			at := time.Duration(i) * gap
			end := max(at, free) + time.Second/6000
			r := result.Record{Window: w, Seq: i, Intended: at, Sent: at + 20*time.Microsecond, End: end, Outcome: result.OK, Status: 200,
				QueueWaitMS: -1, ServiceMS: -1}
			if end > 21*time.Second {
				r.End, r.Outcome, r.Status, r.Reason = at+time.Second, result.Gaveup, 0, result.ReasonReadTimeout
			} else {
				free = end
			}
			batch = append(batch, r)
			count++
			if len(batch) == cap(batch) {
				flush()
			}
		}
	}
	flush()
	cw.Flush()
	if err := bw.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
