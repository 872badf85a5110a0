// Command load is the terminal twin of the server's load runner: it sweeps a
// lab service with open-loop Poisson (or uniform) arrivals, or a closed loop
// of clients, and prints one row per window as it ends. See package loadrun
// for the columns, the records and the accounting rules.
//
// Usage:
//
//	load [--target URL] [--control URL] [--rate 40,48,60,100] [--seconds 20]
//	     [--seed N] [--timeout 2s] [--schedule poisson|uniform] [--rng pcg|python]
//	     [--closed N] [--arrivals FILE] [--max-inflight N] [--at TIME:KNOB=VALUE ...]
//	     [--records FILE] [--json] [--check]
//	load --simulate [--workers N --spin-ms MS --wait-ms MS --limit N --cpus N
//	     --stall-every N --stall-ms MS --policy P] [the same sweep flags]
//
// Flags:
//
//	--target URL      where requests go (env TARGET, default http://127.0.0.1:8000)
//	--control URL     the lab's control API (env CONTROL, default http://127.0.0.1:8001);
//	                  "none" runs without one (done and queued print as -)
//	--rate LIST       offered rates, arrivals a second, one window each, at most
//	                  result.MaxRate (10,000) (default 40,48,60,100)
//	--seconds S       length of each window (default 20)
//	--seed N          seed of the arrival schedules; the same seed replays the same sweep (default 1)
//	--timeout D       how long a caller waits for an answer (default 2s)
//	--schedule KIND   poisson (default) or uniform
//	--rng SOURCE      random source of the schedules: pcg (default) or python, CPython's
//	                  random module (random.seed(N), then expovariate(rate) per gap; every
//	                  window re-seeded with N, as a script re-seeding for each rate)
//	--closed LIST     closed loop instead: one window per client count, e.g. 4 or 1,4,16
//	--arrivals FILE   one open-loop window sending at exactly these times: seconds from the
//	                  window's start, one a line, in increasing order; the window lasts
//	                  --seconds, or by default to the next whole second after the last time
//	--simulate        simulate the lab instead of sending (package sim): nothing is sent,
//	                  the rows and records are the simulator's; the lab's knobs come from
//	                  --workers, --spin-ms, --wait-ms, --limit, --cpus, --stall-every,
//	                  --stall-ms, --policy or WORKERS, SPIN_MS, WAIT_MS, LIMIT, CPUS,
//	                  STALL_EVERY, STALL_MS, POLICY, as cmd/lab reads them (the policy
//	                  is package admit's, the lab's own code); --at changes them at
//	                  their times as the lab would (BACKLOG is not simulated)
//	--max-inflight N  a client with N workers (open loop; 0, the default, for none): an
//	                  arrival that finds all N busy is not sent and counts in client_busy
//	                  (arrivals = sent + not_sent + client_busy)
//	--at TIME:KNOB=VALUE
//	                  change a lab knob at TIME into every window through the control
//	                  API (with --simulate, the simulated lab's), e.g. --at
//	                  30s:WAIT_MS=2000; repeatable; each window starts from the knobs
//	                  the lab had (set back as it ends); a line on stderr says when the
//	                  lab took each change
//	--records FILE    write every request's raw record as CSV to FILE
//	--json            one JSON object per row on stdout instead of the table
//	--check           check the service and print what to expect, then exit
//
// Without --json, the table's columns are aligned and a row is printed as
// each window ends; progress goes to stderr when stderr is a terminal.
//
// The sweep is measured as the server's runs and the lessons' recorded
// tables are (package measure's Generate): the lab drained before each
// window (at most loadrun.DefaultDrainWait), windows measure.WindowPause
// apart, each window's row printed and its raw records written to --records
// as it ends, so an interrupted sweep keeps the windows it finished.
//
// When the control API is on this machine (a loopback address), load reads
// the processors the lab runs on (GET /config) and pins every thread of its
// own process to the others while it runs, so its work is not charged to
// the lab; one line on stderr says what it did (nothing is pinned when the
// lab has every processor, or off Linux). A lab elsewhere is left alone.
//
// "load load-child" is the hidden mode package measure starts as a run's
// load child: it speaks measure's pipe protocol on stdin and stdout.
//
// --check prints four lines: whether the service is up (exit 1 if not); its
// knobs; what 20 sequential requests measure at rest: the service time (the
// median of the lab's X-Service-Ms, against SPIN_MS + WAIT_MS, which it
// should be within 1% of), the processor time a request costs (the lab's
// process CPU over them: the spin plus the lab's own work) and the caller's
// latency; and the two ceilings those imply, workers ÷ service time and
// cpus ÷ processor time, and which binds. It exits 1 if the lab served
// anything else meanwhile.
//
// With --simulate the same table, JSON and records come from the
// simulator, with done and queued from the simulated lab; a line on
// stderr says what was simulated.
//
// Bad input (unparsable rates, seconds ≤ 0, a rate above the cap, an
// unreachable target or control API, an arrivals file that is empty,
// unsorted or has a bad line (named), a knob out of range, a knob flag
// without --simulate, an --at past the window's end, for a knob the lab
// cannot change or with a value it would refuse given its knobs, read
// from GET /config) prints one line and exits with status 2 before
// anything is sent.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(exitStatus(err))
	}
}
