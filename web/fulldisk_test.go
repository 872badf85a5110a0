package web

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"capacitylab/store"
)

// On a full disk the site keeps serving pages, a change it cannot store
// is answered 503 saying the disk is full (nothing is acknowledged that
// was not stored), and /healthz says writes are failing. The full disk
// here is store.FullWhen, which fails writes exactly as SQLite does on a
// full disk (cmd/server's TestFullDiskTmpfs fills a real tmpfs when it
// can mount one).
func TestFullStoreAnswers503(t *testing.T) {
	path := filepath.Join(t.TempDir(), "full.db")
	var full atomic.Bool
	site := newSiteAt(t, path, func(d *Deps) {
		st, err := store.Open(path, store.FullWhen(full.Load))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		d.Store = st
	})
	full.Store(true) // the disk fills
	if res := site.get(nil, "/lessons/sample"); res.StatusCode != http.StatusOK {
		t.Errorf("a lesson page on a full disk: %d", res.StatusCode)
	}
	res := site.postJSON(nil, "/lessons/sample/predict/sample-predict", url.Values{"action": {"lock"}, "option": {"c"}})
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(res.body, "disk is full") || res.Header.Get("Retry-After") == "" {
		t.Errorf("a prediction on a full disk: %d, Retry-After %q\n%s\nwant 503 saying the disk is full, with Retry-After", res.StatusCode, res.Header.Get("Retry-After"), res.body)
	}
	// The same as a plain form: the error page says so.
	res = site.post(nil, "/lessons/sample/predict/sample-predict", url.Values{"action": {"lock"}, "option": {"c"}})
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(res.body, "disk is full") {
		t.Errorf("a prediction form on a full disk: %d\n%.400s", res.StatusCode, res.body)
	}
	res = site.get(nil, "/healthz")
	if res.StatusCode != http.StatusServiceUnavailable || !strings.HasPrefix(res.body, "degraded: store writes failing") {
		t.Errorf("/healthz on a full disk: %d %q, want 503 saying writes are failing", res.StatusCode, res.body)
	}
	if !strings.Contains(site.logs.String(), "the disk is full") {
		t.Errorf("the refused write is not logged:\n%s", site.logs.String())
	}
}
