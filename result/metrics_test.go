package result_test

import (
	"bytes"
	"encoding/csv"
	"reflect"
	"slices"
	"testing"
	"time"

	"capacitylab/result"
)

func TestNearestRank(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	cases := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		// Nothing to rank: zero, and the row says n=0.
		{"empty", nil, 99, 0},
		// One sample is every percentile.
		{"single", []time.Duration{7}, 50, 7},
		// 1..100 ms: the 99th percentile is the 99th value, not an interpolation.
		{"p99 of 100", hundred, 99, 99 * time.Millisecond},
		// 1..100 ms: the median by nearest rank is the 50th value.
		{"p50 of 100", hundred, 50, 50 * time.Millisecond},
		// Ten samples: rank ⌈9.9⌉ = 10, the maximum.
		{"p99 of 10", hundred[:10], 99, 10 * time.Millisecond},
		// p100 is the maximum.
		{"p100", hundred, 100, 100 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := result.NearestRank(c.sorted, c.p); got != c.want {
				t.Errorf("NearestRank(p=%v) = %v, want %v", c.p, got, c.want)
			}
		})
	}
}

func TestMetricsRow(t *testing.T) {
	var m result.Metrics
	// 100 ok answers with latencies 1..100 ms, sent on time, the last
	// answer 2 s after the window start.
	for i := 1; i <= 100; i++ {
		intended := time.Duration(i) * 10 * time.Millisecond
		end := intended + time.Duration(i)*time.Millisecond
		if i == 100 {
			intended = 2*time.Second - 100*time.Millisecond
			end = 2 * time.Second
		}
		m.Add(result.Record{Seq: i, Intended: intended, Sent: intended + 100*time.Microsecond, End: end, Outcome: result.OK, Status: 200})
	}
	// One each of the other outcomes, one of them 5 ms late.
	m.Add(result.Record{Intended: 0, Sent: 5 * time.Millisecond, End: 2 * time.Second, Outcome: result.Gaveup, Reason: result.ReasonReadTimeout})
	m.Add(result.Record{Intended: 0, Sent: 0, End: time.Millisecond, Outcome: result.Refused, Status: 503})
	m.Add(result.Record{Intended: 0, Sent: 0, End: time.Millisecond, Outcome: result.Error, Reason: result.ReasonReset})
	m.Add(result.Record{Intended: 0, Outcome: result.NotSent, Reason: result.ReasonInFlightCap})
	// A sent record that never got an outcome: a generator bug, shown as lost.
	m.Add(result.Record{Intended: 0, Sent: 0})

	r := m.Row(100, time.Second)
	want := result.Row{
		Offered: 100, Arrivals: 105, Sent: 104, OK: 100, Refused: 1, Gaveup: 1, Error: 1, NotSent: 1, Lost: 1,
		OKPerSec: 50, // 100 ok ÷ max(1 s window, 2 s last answer)
		P50MS:    50, P95MS: 95, P99MS: 99, MaxMS: 100, MeanMS: 50.5, N: 100,
		Late: 1, SendLagP99MS: 0.1, SendLagMaxMS: 5,
		Done: -1, Queued: -1, Backlogged: -1, Seconds: 1, LabServiceMS: -1, LabCPUMS: -1, LabWaitMS: -1, LabServiceSCV: -1,
		Attempts: 104, AttemptsPerSec: 104, Amplification: 1, // no retries: one attempt a request sent
		// Without fan-out each request is its one sub-request; one ok
		// answer in a hundred is slower than their p99.
		SubRequests: 104, SubP50MS: 50, SubP99MS: 99, OverSubP99: 0.01,
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("row\n got %+v\nwant %+v", r, want)
	}
	if m.Arrivals() != 105 {
		t.Errorf("Arrivals = %d, want 105", m.Arrivals())
	}
}

// Below saturation every answer arrives within the window plus a service
// time, so ok_per_sec is ok ÷ window.
func TestOKPerSecUsesWindowWhenAnswersAreInside(t *testing.T) {
	var m result.Metrics
	for i := range 40 {
		at := time.Duration(i) * 25 * time.Millisecond
		m.Add(result.Record{Intended: at, Sent: at, End: at + 20*time.Millisecond, Outcome: result.OK})
	}
	if got := m.Row(40, time.Second).OKPerSec; got != 40 {
		t.Errorf("ok_per_sec = %v, want 40", got)
	}
}

func TestWriteCSV(t *testing.T) {
	recs := []result.Record{
		{Window: 1, Seq: 0, Intended: 1500 * time.Microsecond, Sent: 1600 * time.Microsecond, End: 22 * time.Millisecond, Outcome: result.OK, Status: 200, QueueWaitMS: 0.25, ServiceMS: 20.1},
		{Window: 1, Seq: 1, Intended: 3 * time.Millisecond, Sent: 3 * time.Millisecond, End: 2003 * time.Millisecond, Outcome: result.Gaveup, Reason: result.ReasonReadTimeout, QueueWaitMS: -1, ServiceMS: -1},
		{Window: 1, Seq: 2, Intended: 4 * time.Millisecond, Sent: 4 * time.Millisecond, End: 4 * time.Millisecond, Outcome: result.NotSent, Reason: result.ReasonInFlightCap, QueueWaitMS: -1, ServiceMS: -1},
	}
	var buf bytes.Buffer
	if err := result.WriteCSV(&buf, recs); err != nil {
		t.Fatal(err)
	}
	got, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		result.CSVHeader(),
		{"1", "0", "1.500", "1.600", "22.000", "20.500", "ok", "200", "", "0.25", "20.1", "0", "0", "default", "0", "0"},
		{"1", "1", "3.000", "3.000", "2003.000", "2000.000", "gaveup", "", "read_timeout", "", "", "1", "0", "default", "0", "0"},
		{"1", "2", "4.000", "", "", "", "not_sent", "", "inflight_cap", "", "", "2", "0", "default", "0", "0"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), buf.String())
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("line %d\n got %q\nwant %q", i, got[i], want[i])
		}
	}
}

// Fold of a window that fanned out into 3 and hedged: each sub-request
// takes its first ok copy (the later one cancelled) or, none ok, its last;
// the request ends with its last sub-request, ok only when all are, else
// the worst outcome (a gave-up over a refusal); attempts count every
// record sent, hedges every copy.
func TestFoldFanoutAndHedges(t *testing.T) {
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	rec := func(seq, request, sub, cp int, intended, end int, o result.Outcome) result.Record {
		return result.Record{Seq: seq, Request: request, Sub: sub, Copy: cp, Intended: ms(intended), Sent: ms(intended), End: ms(end), Outcome: o}
	}
	records := []result.Record{
		// Request 0: sub 0 ok at 5 ms; sub 1's original slow, its copy
		// (sent at 20 ms) ok at 25 ms, the original cancelled then; sub 2
		// ok at 8 ms. Ok, ending at 25 ms, 4 records sent, 1 copy.
		rec(0, 0, 0, 0, 0, 5, result.OK),
		rec(2, 0, 1, 0, 0, 25, result.Cancelled),
		rec(3, 0, 2, 0, 0, 8, result.OK),
		rec(6, 0, 1, 1, 20, 25, result.OK),
		// Request 1: sub 0 refused at 101 ms, sub 1 gave up at 300 ms,
		// sub 2 ok: gave up, at 300 ms.
		rec(1, 1, 0, 0, 100, 101, result.Refused),
		rec(4, 1, 1, 0, 100, 300, result.Gaveup),
		rec(5, 1, 2, 0, 100, 110, result.OK),
	}
	records[4].Request = 0 // a first record's Request is not read
	logical, subs := result.Fold(records)
	if len(logical) != 2 || len(subs) != 6 {
		t.Fatalf("%d logical, %d sub-requests: want 2 and 6", len(logical), len(subs))
	}
	l0, l1 := logical[0], logical[1]
	if l0.Seq != 0 || l0.Outcome != result.OK || l0.Latency() != ms(25) || l0.Attempt != 3 || l0.Copy != 1 {
		t.Errorf("request 0: %+v; want ok, latency 25 ms, Attempt 3 (4 sent), Copy 1", l0)
	}
	if l1.Seq != 1 || l1.Outcome != result.Gaveup || l1.Latency() != ms(200) || l1.Attempt != 2 || l1.Copy != 0 {
		t.Errorf("request 1: %+v; want gaveup, latency 200 ms, Attempt 2 (3 sent), Copy 0", l1)
	}
	if s := subs[1]; s.Sub != 1 || s.Outcome != result.OK || s.End != ms(25) || s.LogicalSeq() != 0 || s.Copy != 1 {
		t.Errorf("request 0's sub-request 1: %+v; want ok at 25 ms by its copy, of request 0", s)
	}
	var m result.Metrics
	for _, l := range logical {
		m.Add(l)
	}
	for _, s := range subs {
		m.AddSub(s)
	}
	row := m.Row(2, time.Second)
	if row.Sent != 2 || row.OK != 1 || row.Gaveup != 1 || row.SubRequests != 6 || row.Attempts != 7 || row.Hedges != 1 || row.Amplification != 1.167 || row.Lost != 0 {
		t.Errorf("row: %+v; want 2 sent, 1 ok, 1 gaveup, 6 sub-requests, 7 attempts, 1 hedge, amplification 7/6", row)
	}
	if row.SubP99MS != 25 || row.SubP50MS != 8 || row.P99MS != 25 {
		t.Errorf("sub p50 %v p99 %v, p99 %v: want 8, 25 and 25", row.SubP50MS, row.SubP99MS, row.P99MS)
	}
	// Nothing fanned out, retried or hedged: the records as they are.
	plain := []result.Record{rec(0, 0, 0, 0, 0, 5, result.OK)}
	if l, s := result.Fold(plain); &l[0] != &plain[0] || s != nil {
		t.Error("Fold of plain records: want them as they are, and no sub-requests")
	}
}
