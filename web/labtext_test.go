package web

import (
	"strings"
	"testing"

	"capacitylab/classroom"
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
	// The published experiment's preset: a stall and CPython's arrivals.
	stall := &lessons.Lab{ID: "s", Workers: 1, WaitMS: 10, CPUs: 1, Rates: []float64{60, 80, 90}, Seconds: 30, Seed: 21,
		StallEvery: 200, StallMS: 500, RNG: "python"}
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
		{"workers env", labEnv(&lessons.Lab{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, Backlog: 8, Accept: lessons.AcceptWorkers}),
			[]string{"WORKERS=1 SPIN_MS=2 WAIT_MS=18 LIMIT=0 CPUS=1 BACKLOG=8 ACCEPT=workers go run ./cmd/lab"}, nil},
		// Workers that accept for themselves, and their backlog, are in the preset's words.
		{"workers words", labPresetWords(&lessons.Lab{Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, Backlog: 8, Accept: lessons.AcceptWorkers}),
			[]string{"no admission limit, the workers accepting callers themselves (the rest wait in the kernel's accept queue, up to BACKLOG=8)"}, nil},
		{"door words", labPresetWords(open), []string{"no admission limit."}, []string{"accept", "backlog"}},
		// An open preset is described by its rates.
		{"open summary", labSummary(open), []string{"2 windows of 10 s at 40, 50 requests a second", "open loop"}, []string{"clients"}},
		// One rate repeated is said once, with why it repeats.
		{"repeated rate summary", labSummary(&lessons.Lab{Workers: 1, SpinMS: 0, WaitMS: 20, CPUs: 1, Rates: []float64{45, 45, 45}, Seconds: 30, Seed: 1}),
			[]string{"3 windows of 30 s at 45 requests a second, each with arrivals of its own, open loop"}, []string{"45, 45"}},
		// Without a stall the lab's command names no stall knobs.
		{"lab command", labEnv(open), []string{"WORKERS=1 SPIN_MS=2 WAIT_MS=18 LIMIT=0 CPUS=1 go run ./cmd/lab"}, []string{"STALL"}},
		// A stall is in the lab's command, CPython's arrivals in the load's and the words.
		{"stall lab command", labEnv(stall), []string{"WORKERS=1 SPIN_MS=0 WAIT_MS=10 LIMIT=0 CPUS=1 STALL_EVERY=200 STALL_MS=500 go run ./cmd/lab"}, nil},
		{"python command", labLoad(stall), []string{"--rate 60,80,90 --seconds 30 --seed 21 --rng python"}, nil},
		{"python summary", labSummary(stall), []string{"CPython's random.seed(21) for each window"}, []string{"seed 21)"}},
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

// TestWithKnobs checks that a host's knobs, the stall's included, replace
// the preset's values and leave the others alone.
func TestWithKnobs(t *testing.T) {
	q := labPreset(&lessons.Lab{ID: "l", Workers: 1, SpinMS: 2, WaitMS: 18, CPUs: 1, Rates: []float64{10}, Seconds: 5, Seed: 3})
	every, ms, workers := 100, 250, 4
	got := withKnobs(q, &classroom.Knobs{StallEvery: &every, StallMS: &ms, Workers: &workers})
	if got.StallEvery != 100 || got.StallMS != 250 || got.Workers != 4 || got.WaitMS != 18 || got.Seed != 3 {
		t.Errorf("withKnobs = %+v, want the stall 100/250 and 4 workers over the preset", got)
	}
}
