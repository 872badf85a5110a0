package web

import (
	"strings"
	"testing"

	"capacitylab/labsvc"
	"capacitylab/lessons"
)

// TestLabTextClosedLoop checks the words and the command a lesson page
// shows for a lab preset: a closed-loop preset has clients and no rate
// (cmd/load rejects --rate with --closed), an open-loop one has its rates.
func TestLabTextClosedLoop(t *testing.T) {
	c, err := lessons.Load(lessons.Content())
	if err != nil {
		t.Fatalf("embedded content: %v", err)
	}
	closed, l, ok := c.Lab("loops-closed")
	if !ok || closed.Closed == 0 {
		t.Fatal("the open-closed lesson has no closed-loop preset loops-closed")
	}
	open := &lessons.Lab{ID: "o", Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, Rates: []float64{40, 50}, Seconds: 10, Seed: 4, TimeoutMS: 500}
	q := &lessons.Question{ID: "q", Type: "predict", SettledBy: "loops-closed"}
	tests := []struct {
		name    string
		got     string
		want    []string
		notWant []string
	}{
		// The closed preset's command gives clients and no rate or seed.
		{"closed command", labLoad(closed), []string{"go run ./cmd/load --closed 10 --seconds 10"}, []string{"--rate", "--seed"}},
		// The closed preset is described by its clients.
		{"closed summary", labSummary(closed), []string{"10 clients", "closed loop"}, []string{"requests a second"}},
		// A prediction settled by it names the clients, not an empty rate list.
		{"closed settled by", settledBy(l, q), []string{"(10 clients)"}, []string{"a second"}},
		// An open preset keeps its rates, seed and timeout.
		{"open command", labLoad(open), []string{"go run ./cmd/load --rate 40,50 --seconds 10 --seed 4 --timeout 500ms"}, []string{"--closed"}},
		// The lab's environment line has the knobs, and BACKLOG and ACCEPT
		// only when a preset sets them.
		{"door env", labEnv(open), []string{"WORKERS=1 SPIN_MS=2 WAIT_MS=18 LIMIT=0 CPUS=1 go run ./cmd/lab"}, []string{"BACKLOG", "ACCEPT"}},
		{"workers env", labEnv(&lessons.Lab{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, Backlog: 8, Accept: labsvc.AcceptWorkers}),
			[]string{"WORKERS=1 SPIN_MS=2 WAIT_MS=18 LIMIT=0 CPUS=1 BACKLOG=8 ACCEPT=workers go run ./cmd/lab"}, nil},
		// An open preset is described by its rates.
		{"open summary", labSummary(open), []string{"2 windows of 10 s at 40, 50 requests a second", "open loop"}, []string{"clients"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.want {
				if !strings.Contains(tt.got, w) {
					t.Errorf("%q lacks %q", tt.got, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(tt.got, w) {
					t.Errorf("%q contains %q", tt.got, w)
				}
			}
		})
	}
}
