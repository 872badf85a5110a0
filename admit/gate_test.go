package admit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"capacitylab/admit"
)

func gate(t *testing.T, spec string, limit, workers int) (*admit.Gate, *prometheus.Registry) {
	t.Helper()
	g, err := admit.NewGate(admit.Spec(spec), limit, workers)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := g.Register(reg); err != nil {
		t.Fatal(err)
	}
	return g, reg
}

// With a quota of 8, Sheddable requests are let in while fewer than 6
// (all but a quarter) are inside, Normal ones up to 8, and Critical ones
// always, without counting inside; as requests leave, room opens again in
// the same order.
func TestGateClasses(t *testing.T) {
	g, reg := gate(t, "inflight,quota=8", 0, 0)
	ctx := context.Background()
	var in []admit.Ticket
	enter := func(c admit.Class) error {
		tk, err := g.Enter(ctx, c)
		if err == nil && c != admit.Critical {
			in = append(in, tk)
		}
		return err
	}
	for i := range 6 {
		if err := enter(admit.Sheddable); err != nil {
			t.Fatalf("sheddable %d refused with %d inside: %v", i+1, i, err)
		}
	}
	if err := enter(admit.Sheddable); !errors.Is(err, admit.ErrRefused) {
		t.Fatalf("a 7th sheddable: %v, want ErrRefused (6 of 8 inside: the last quarter is kept for normal requests)", err)
	}
	for i := range 2 {
		if err := enter(admit.Normal); err != nil {
			t.Fatalf("normal %d refused with %d inside: %v", i+1, 6+i, err)
		}
	}
	if err := enter(admit.Normal); !errors.Is(err, admit.ErrRefused) {
		t.Fatalf("a 9th request inside: %v, want ErrRefused", err)
	}
	for range 3 {
		tk, err := g.Enter(ctx, admit.Critical)
		if err != nil {
			t.Fatalf("critical refused: %v", err)
		}
		g.Leave(tk, admit.Served)
	}
	if g.Busy() != 8 {
		t.Errorf("Busy %d, want 8: critical requests are not counted inside", g.Busy())
	}
	checkMetrics(t, reg, map[string]float64{
		"admit_inflight": 8, "admit_limit": 8, "admit_refused_total": 2,
		`admit_requests_total{class="sheddable",decision="admitted"}`: 6,
		`admit_requests_total{class="sheddable",decision="refused"}`:  1,
		`admit_requests_total{class="normal",decision="admitted"}`:    2,
		`admit_requests_total{class="normal",decision="refused"}`:     1,
		`admit_requests_total{class="critical",decision="exempt"}`:    3,
	})
	// Three leave: 5 inside, so one sheddable fits again, and then a normal.
	for _, tk := range in[:3] {
		g.Leave(tk, admit.Served)
	}
	in = in[3:]
	if err := enter(admit.Sheddable); err != nil {
		t.Errorf("sheddable with 5 inside: %v", err)
	}
	if err := enter(admit.Sheddable); !errors.Is(err, admit.ErrRefused) {
		t.Errorf("sheddable with 6 inside: %v, want ErrRefused", err)
	}
	if err := enter(admit.Normal); err != nil {
		t.Errorf("normal with 6 inside: %v", err)
	}
	for _, tk := range in {
		g.Leave(tk, admit.Served)
	}
	checkMetrics(t, reg, map[string]float64{"admit_inflight": 0})
}

// With no bound (the queue policy without LIMIT), nobody is refused,
// sheddable or not.
func TestGateNoBound(t *testing.T) {
	g, _ := gate(t, "queue", 0, 0)
	for i := range 50 {
		if _, err := g.Enter(context.Background(), admit.Sheddable); err != nil {
			t.Fatalf("request %d refused without a bound: %v", i+1, err)
		}
	}
}

// With workers, an admitted caller that finds none free waits, FIFO, and
// goes on when one leaves; a caller that goes away while waiting is no
// longer inside.
func TestGateQueue(t *testing.T) {
	g, reg := gate(t, "queue", 2, 1)
	first, err := g.Enter(context.Background(), admit.Normal)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		tk, err := g.Enter(context.Background(), admit.Normal)
		if err == nil {
			g.Leave(tk, admit.Served)
		}
		got <- err
	}()
	gone, cancel := context.WithCancel(context.Background())
	left := make(chan error, 1)
	for g.Waiting() < 1 {
		time.Sleep(time.Millisecond)
	}
	go func() { _, err := g.Enter(gone, admit.Normal); left <- err }()
	for g.Waiting() < 2 {
		time.Sleep(time.Millisecond)
	}
	if _, err := g.Enter(context.Background(), admit.Normal); !errors.Is(err, admit.ErrRefused) {
		t.Fatalf("a third waiting caller with LIMIT 2: %v, want ErrRefused", err)
	}
	cancel()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("the caller that left: %v, want context.Canceled", err)
	}
	if g.Waiting() != 1 {
		t.Fatalf("Waiting %d after one left, want 1", g.Waiting())
	}
	g.Leave(first, admit.Served)
	if err := <-got; err != nil {
		t.Fatalf("the waiting caller: %v", err)
	}
	if g.Busy() != 0 || g.Waiting() != 0 {
		t.Errorf("Busy %d Waiting %d at the end, want 0 0", g.Busy(), g.Waiting())
	}
	checkMetrics(t, reg, map[string]float64{"admit_inflight": 0, "admit_refused_total": 1,
		`admit_requests_total{class="normal",decision="admitted"}`: 2,
		`admit_requests_total{class="normal",decision="refused"}`:  1})
}

// A gate has its own classes: a policy with classes=on, which is for a
// door whose user gives it each request's class, is refused naming it.
func TestGateRefusesClasses(t *testing.T) {
	if _, err := admit.NewGate("inflight,quota=4,classes=on", 0, 0); err == nil || !strings.Contains(err.Error(), "policy inflight,quota=4,classes=on is not allowed for a gate: want it without classes=on") {
		t.Errorf("NewGate with classes=on: %v", err)
	}
	if _, err := admit.NewGate("inflight,quota=4,classes=off", 0, 0); err != nil {
		t.Errorf("NewGate with classes=off: %v", err)
	}
}
