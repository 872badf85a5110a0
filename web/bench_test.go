package web

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"capacitylab/lessons"
	"capacitylab/store"
)

// benchSite builds the handler the way cmd/server does, with logs
// discarded (request logging to a terminal would measure the terminal).
func benchSite(b *testing.B) (http.Handler, *lessons.Course, *store.Store) {
	b.Helper()
	st, err := store.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	c := loadCourse(b)
	h := NewServer(Deps{Course: func() (*lessons.Course, error) { return c, nil }, Store: st, Assets: newAssets(b)})
	return h, c, st
}

// largestLesson returns the slug of the lesson whose page is biggest.
func largestLesson(b *testing.B, h http.Handler, c *lessons.Course) (string, int) {
	best, size := "", 0
	for _, l := range c.Lessons {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/lessons/"+l.Slug, nil))
		if rec.Code != 200 {
			b.Fatalf("%s: %d", l.Slug, rec.Code)
		}
		if rec.Body.Len() > size {
			best, size = l.Slug, rec.Body.Len()
		}
	}
	return best, size
}

// renderLesson renders one lesson page component for a newcomer, the way
// the lesson handler does when its cache is cold.
func renderLesson(b *testing.B, c *lessons.Course, slug string, buf *bytes.Buffer) {
	l, _ := c.Lesson(slug)
	prev, _ := c.Prev(slug)
	next, _ := c.Next(slug)
	var builds []lessonLink
	for _, s := range l.BuildsOn {
		if d, ok := c.Lesson(s); ok {
			builds = append(builds, lessonLink{s, d.Title})
		}
	}
	srv := &server{assets: newAssets(b)}
	r := httptest.NewRequest("GET", "/lessons/"+slug, nil)
	page := lessonPage(srv.page(r, l.Title), l, prev, next, builds, (&store.Export{}).State())
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := page.Render(r.Context(), buf); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(buf.Len()))
	}
}

// BenchmarkLessonPage renders the largest lesson's page (templ, every
// block including the widgets' initial state) without HTTP or caching:
// the cost of a cold newcomer page or of any learner's page.
func BenchmarkLessonPage(b *testing.B) {
	h, c, _ := benchSite(b)
	slug, _ := largestLesson(b, h, c)
	renderLesson(b, c, slug, &bytes.Buffer{})
}

// BenchmarkLessonPageEach renders every lesson's page, one sub-benchmark
// per lesson, to show which blocks cost what.
func BenchmarkLessonPageEach(b *testing.B) {
	c := loadCourse(b)
	for _, l := range c.Lessons {
		b.Run(l.Slug, func(b *testing.B) { renderLesson(b, c, l.Slug, &bytes.Buffer{}) })
	}
}

// BenchmarkLessonPageHandler serves the largest lesson through the whole
// handler (router, middleware, metrics) for a newcomer, whose page comes
// from the page cache.
func BenchmarkLessonPageHandler(b *testing.B) {
	h, c, _ := benchSite(b)
	slug, size := largestLesson(b, h, c)
	req := httptest.NewRequest("GET", "/lessons/"+slug, nil)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkLessonPageLearner is the same page for a learner with answers,
// so each request also reads their state from SQLite and renders the page
// (widgets from the server's model cache). "largest" is the largest page;
// criterion and saturation have queue-curve widgets, whose Compute the
// cache saves (compare BenchmarkLessonPageEach, which renders without it).
func BenchmarkLessonPageLearner(b *testing.B) {
	for _, slug := range []string{"", "criterion", "saturation", "littles-law", "admission-limit"} {
		name := slug
		if name == "" {
			name = "largest"
		}
		b.Run(name, func(b *testing.B) { learnerPage(b, slug) })
	}
}

func learnerPage(b *testing.B, slug string) {
	h, c, st := benchSite(b)
	var size int
	if slug == "" {
		slug, size = largestLesson(b, h, c)
	}
	learner := "0123456789abcdef0123456789abcdef"
	l, ok := c.Lesson(slug)
	if !ok {
		b.Skipf("no lesson %q in the course", slug)
	}
	for _, blk := range l.Blocks() {
		if q, ok := blk.(*lessons.Question); ok {
			if q.Type == "predict" {
				st.Lock(b.Context(), learner, slug, q.ID, q.Options[0].ID)
			} else {
				st.RecordAttempt(b.Context(), learner, slug, q.ID, q.Options[0].ID, q.Options[0].Correct)
			}
		}
	}
	req := httptest.NewRequest("GET", "/lessons/"+slug, nil)
	req.AddCookie(&http.Cookie{Name: LearnerCookie, Value: learner})
	if size == 0 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		size = rec.Body.Len()
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkLessonPageLoopback measures whole requests over loopback TCP:
// keep-alive clients (16 or 4) fetch a lesson page b.N times in all.
// It reports requests per second and the 50th and 99th percentile latency
// (nearest rank over every request). Traffic goes only to 127.0.0.1, and
// -benchtime bounds the count.
func BenchmarkLessonPageLoopback(b *testing.B) {
	b.Run("largest/newcomer/c16", func(b *testing.B) { loopback(b, "", false, 16) })
	b.Run("largest/newcomer/c4", func(b *testing.B) { loopback(b, "", false, 4) })
	b.Run("largest/learner/c16", func(b *testing.B) { loopback(b, "", true, 16) })
	b.Run("largest/learner/c4", func(b *testing.B) { loopback(b, "", true, 4) })
	b.Run("littles-law/newcomer/c16", func(b *testing.B) { loopback(b, "littles-law", false, 16) })
	b.Run("littles-law/learner/c4", func(b *testing.B) { loopback(b, "littles-law", true, 4) })
	b.Run("littles-law/learner/c16", func(b *testing.B) { loopback(b, "littles-law", true, 16) })
}

// loopback drives one lesson page ("" = the largest) over loopback TCP
// from the given number of keep-alive clients.
func loopback(b *testing.B, slug string, withLearner bool, clients int) {
	h, c, st := benchSite(b)
	if slug == "" {
		slug, _ = largestLesson(b, h, c)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	learner := "fedcba9876543210fedcba9876543210"
	if withLearner {
		// A learner who answered every question of the lesson.
		l, _ := c.Lesson(slug)
		for _, blk := range l.Blocks() {
			if q, ok := blk.(*lessons.Question); ok {
				if q.Type == "predict" {
					st.Skip(b.Context(), learner, slug, q.ID)
				} else {
					st.RecordAttempt(b.Context(), learner, slug, q.ID, q.Options[0].ID, q.Options[0].Correct)
				}
			}
		}
	}
	u, _ := url.Parse(srv.URL + "/lessons/" + slug)
	// Plain bodies: gunzipping in this process would take the server's CPU.
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	// Warm up connections.
	for range clients {
		res, err := client.Get(u.String())
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var failed atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				req, _ := http.NewRequest("GET", u.String(), nil)
				if withLearner {
					req.AddCookie(&http.Cookie{Name: LearnerCookie, Value: learner})
				}
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				lat[i] = append(lat[i], time.Since(t0))
				if res.StatusCode != 200 {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests failed", n, b.N)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	rank := func(p float64) time.Duration { // nearest rank
		k := int(p*float64(len(all))+0.999999) - 1
		return all[max(0, min(k, len(all)-1))]
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(rank(0.50).Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(rank(0.99).Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(len(all)), "n")
}

// discardWriter is a ResponseWriter that keeps the headers and the status
// and counts the body's bytes: the handler's own cost, without a
// recorder's buffer growing per request.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(b)
	return len(b), nil
}

// BenchmarkLessonPageServed serves lesson 1 (littles-law) and the largest
// lesson through the whole handler, in one run: a newcomer's page rendered
// (a query string keeps it from the cache: the plan written and gzipped
// per request, as before the page was stored compressed) against the same
// page as stored (gzip, brotli, plain) and revalidated (304); a learner's
// page (every question answered) gzipped per request, plain, and
// revalidated. bytes/op is the body sent, cpu-us/op the process's
// processor time a request.
func BenchmarkLessonPageServed(b *testing.B) {
	h, c, st := benchSite(b)
	largest, _ := largestLesson(b, h, c)
	learner := "0123456789abcdef0123456789abcdef"
	for _, slug := range []string{"littles-law", largest} {
		l, ok := c.Lesson(slug)
		if !ok {
			b.Fatalf("no lesson %q", slug)
		}
		for _, blk := range l.Blocks() {
			if q, ok := blk.(*lessons.Question); ok {
				if q.Type == "predict" {
					st.Lock(b.Context(), learner, slug, q.ID, q.Options[0].ID)
				} else {
					st.RecordAttempt(b.Context(), learner, slug, q.ID, q.Options[0].ID, q.Options[0].Correct)
				}
			}
		}
		cases := []struct {
			name, query, cookie, accept string
			revalidate                  bool
		}{
			{"newcomer/rendered/gzip", "?render=1", "", "gzip", false},
			{"newcomer/stored/gzip", "", "", "gzip", false},
			{"newcomer/stored/br", "", "", "gzip, br", false},
			{"newcomer/stored/plain", "", "", "", false},
			{"newcomer/stored/304", "", "", "gzip", true},
			{"learner/rendered/gzip", "", learner, "gzip", false},
			{"learner/rendered/plain", "", learner, "", false},
			{"learner/rendered/304", "", learner, "gzip", true},
		}
		for _, tc := range cases {
			b.Run(slug+"/"+tc.name, func(b *testing.B) {
				req := httptest.NewRequest("GET", "/lessons/"+slug+tc.query, nil)
				if tc.cookie != "" {
					req.AddCookie(&http.Cookie{Name: LearnerCookie, Value: tc.cookie})
				}
				if tc.accept != "" {
					req.Header.Set("Accept-Encoding", tc.accept)
				}
				want := http.StatusOK
				if tc.revalidate {
					w := &discardWriter{h: http.Header{}}
					h.ServeHTTP(w, req)
					req.Header.Set("If-None-Match", w.h.Get("ETag"))
					want = http.StatusNotModified
				}
				var sent int
				b.ReportAllocs()
				cpu0 := processCPU(b)
				for b.Loop() {
					w := &discardWriter{h: http.Header{}}
					h.ServeHTTP(w, req)
					if w.status != want {
						b.Fatalf("status %d, want %d", w.status, want)
					}
					sent = w.n
				}
				b.ReportMetric(float64(sent), "bytes/op")
				// The process's processor time (garbage collection included),
				// which a busy machine's waiting does not add to as it does wall time.
				b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
			})
		}
	}
}
