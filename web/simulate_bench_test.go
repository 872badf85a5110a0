package web

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// What Simulate costs the server, end to end through the handler: a 30 s
// window at 100 a second on the lessons' default lab (one worker, 2 ms
// spin + 18 ms wait), simulated, charted beside the model and rendered as
// the block's panel (?panel=1), no lab block named (so no store reads).
// The goal is under 5 ms.
func BenchmarkSimulateHandler30s(b *testing.B) {
	benchSimulate(b, url.Values{"workers": {"1"}, "spin_ms": {"2"}, "wait_ms": {"18"}, "cpus": {"1"}, "rates": {"100"}, "seconds": {"30"}, "seed": {"1"}})
}

// A whole 8-window lesson sweep the same way: bottleneck-moves' 64
// workers on one processor across its ceiling, 100 to 700 a second, 5 s
// windows. The goal is under 50 ms.
func BenchmarkSimulateHandlerSweep8(b *testing.B) {
	benchSimulate(b, url.Values{"workers": {"64"}, "spin_ms": {"2"}, "wait_ms": {"18"}, "cpus": {"1"}, "rates": {"100,200,300,400,450,500,600,700"}, "seconds": {"5"}, "seed": {"5"}})
}

func benchSimulate(b *testing.B, form url.Values) {
	h, _, _ := benchSite(b)
	body := form.Encode()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/api/simulate?panel=1", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Accept", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `data-testid="sim-rows"`) {
			b.Fatalf("POST /api/simulate: %d %.300s", rec.Code, rec.Body.String())
		}
	}
}
