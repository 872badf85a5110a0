// Command load is the terminal twin of the server's load runner: it sweeps a
// lab service (or any HTTP service, with --control none) with open-loop
// Poisson (or uniform) arrivals, or a closed loop of clients, or searches
// for its knee, stepping the rate up until it stops by itself (--knee),
// and prints one row per window as it ends. See package loadrun for the
// columns, the records and the accounting rules.
//
// Usage:
//
//	load [--target URL] [--control URL] [--rate 40,48,60,100] [--seconds 20]
//	     [--seed N] [--timeout 2s] [--schedule poisson|uniform] [--rng pcg|python]
//	     [--closed N] [--arrivals FILE] [--max-inflight N] [--at TIME:KNOB=VALUE ...]
//	     [--retry SPEC] [--critical SHARE] [--sheddable SHARE] [--fanout K] [--hedge SPEC]
//	     [--records FILE] [--report NAME] [--json] [--check]
//	     [--metrics URL --gauge NAME ... --counter NAME ...] [--queue-header NAME]
//	load --knee FROM:TO [--step 1.25] [--max-p99 D] [--max-errors 0.01]
//	     [--budget 10m] [--recovery=false] [the same flags but --rate, --closed, --arrivals]
//	load --simulate [--workers N --spin-ms MS --wait-ms MS --limit N --cpus N
//	     --stall-every N --stall-ms MS --policy P --dist D --lock-ms MS --coherency-us US]
//	     [the same sweep flags]
//
// Flags:
//
//	--target URL      where requests go (env TARGET, default http://127.0.0.1:8000); with
//	                  --fanout, several labs' URLs joined by commas (at most 16, and
//	                  at most the fan-out) split each request's sub-requests: the j-th
//	                  goes to the (j mod n)-th lab
//	--control URL     the lab's control API (env CONTROL, default http://127.0.0.1:8001);
//	                  "none" runs without one (done and queued print as -); with several
//	                  targets, one for each, joined by commas in the same order: the
//	                  lab columns are the labs' merged (summed, the service and wait
//	                  means and SCV over all their requests). Start each lab with a
//	                  DIST seed of its own: labs drawing the same factors in the same
//	                  order make a request's sub-requests slow together
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
//	                  --stall-ms, --policy, --dist, --lock-ms, --coherency-us or WORKERS,
//	                  SPIN_MS, WAIT_MS, LIMIT, CPUS, STALL_EVERY, STALL_MS, POLICY,
//	                  DIST, LOCK_MS, COHERENCY_US, as cmd/lab reads them (the policy
//	                  is package admit's, the lab's own code); --at changes them at
//	                  their times as the lab would (BACKLOG is not simulated)
//	--max-inflight N  a client with N workers (open loop; 0, the default, for none): an
//	                  arrival that finds all N busy is not sent and counts in client_busy
//	                  (arrivals = sent + not_sent + client_busy)
//	--retry SPEC      a retrying client (open loop; package retry's spec): parameters
//	                  name=value joined by commas, e.g. retries=3,backoff=jitter,budget=0.1;
//	                  retries (0 to 10), on (timeout+refused+error), backoff (none, fixed,
//	                  exp, jitter), base_ms, cap_ms, retry_after (on, off), budget (0 to 1),
//	                  burst, breaker (0 to 1), breaker_min, window_ms, open_ms, probes;
//	                  empty (the default) for a client that never retries. With --knee
//	                  every window of the search has the same client
//	--critical S      the share of arrivals (0 to 1, default 0) sent with X-Criticality:
//	                  critical (open loop); which ones is drawn from the window's seed
//	--sheddable S     the share sent with X-Criticality: sheddable; --critical +
//	                  --sheddable at most 1, the rest sent without a class
//	--fanout K        each arrival a request of K sub-requests (1, the default, to 100;
//	                  open loop) sent to the target at once, done when the last answers:
//	                  its latency to the last answer, ok only if all are (otherwise the
//	                  worst outcome: gaveup, error, refused); rows count requests and
//	                  add sub_requests, sub_p50_ms, sub_p99_ms and over_sub_p99 (--json);
//	                  rate × K at most the rate cap
//	--hedge SPEC      hedged requests (open loop; package hedge's spec): a copy of a
//	                  (sub-)request that has not answered within a delay, the first ok
//	                  answer taken, the other cancelled (the lab still serves it);
//	                  delay_ms (1 to 60000) or percentile (50 to 99.9, of the latencies
//	                  of the last window answers, none before warmup of them), window
//	                  (10 to 100000), warmup, max (copies, 1 to 5); copies count in
//	                  attempts, amplification and hedges. Neither --fanout nor --hedge
//	                  goes with --retry
//	--at TIME:KNOB=VALUE
//	                  change a lab knob at TIME into every window through the control
//	                  API (with --simulate, the simulated lab's), e.g. --at
//	                  30s:WAIT_MS=2000 (a bad release) or --at 10s:WORKERS=8 (capacity
//	                  that lands mid-run); the knobs that may change are
//	                  labsvc.ChangeableKnobs (WORKERS with ACCEPT=door; not CPUS or
//	                  ACCEPT); repeatable; each window starts from the knobs the lab
//	                  had (set back as it ends); a line on stderr says when the lab
//	                  took each change
//	--knee FROM:TO    find the knee (see "The knee search" below): windows at FROM,
//	                  FROM × --step, ... up to TO, rates a second (0 < FROM < TO ≤
//	                  result.MaxRate); not with --rate, --closed or --arrivals
//	--step F          with --knee: each rate the last one's times F, to two decimals
//	                  (more than 1, at most 4; default 1.25)
//	--max-p99 D       with --knee: stop right after a window whose p99 passes D (0, the
//	                  default, for no bound)
//	--max-errors S    with --knee: stop right after a window whose share of requests sent
//	                  that were not ok (refused + gaveup + error over sent) passes S
//	                  (more than 0, at most 1; default 0.01)
//	--budget D        with --knee: the most time the search may take, its recovery window
//	                  included (default 10m); a window counts --seconds + --timeout +
//	                  the pause between windows
//	--recovery        with --knee: one recovery window at FROM after the search stops
//	                  (default true; --recovery=false for none)
//	--metrics URL     the service's Prometheus text endpoint: the metrics --gauge and
//	                  --counter name are read once at the start (one missing is bad
//	                  input), then in each window from its first progress (a quarter
//	                  second in) once a second and as it ends, in a goroutine of their
//	                  own, not on the send path; printed on a line under each row
//	                  ("metrics: ..."), as "metrics" in each --json row, and in --report
//	--gauge NAME      with --metrics: a gauge, NAME (its series summed) or
//	                  NAME{label="value",...} (the series carrying those labels): its mean
//	                  and most over the window's readings; repeatable
//	--counter NAME    with --metrics: a counter, named as --gauge: its increase a second
//	                  over the window (process_cpu_seconds_total: processors in use);
//	                  repeatable
//	--queue-header NAME
//	                  the reply header (milliseconds, a number) read into each record's
//	                  queue_wait_ms instead of the lab's X-Queue-Wait-Ms
//	--report NAME     write the records to NAME.csv (as --records), the report's data
//	                  to NAME.json (evidence.ReportData: how load ran, every row, the
//	                  metrics beside each window, why a knee search stopped) and the
//	                  report made from the two to NAME.html: one self-contained page
//	                  (package evidence: the knee, the ceiling, the charts, the rows,
//	                  in flight beside Little's product, the method's checklist, and
//	                  the admission limit for --max-p99 as the latency budget)
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
// The knee search (--knee FROM:TO) runs one window at a time through the
// same path as a sweep (package measure's Generate, a sweep of one rate):
// each window has the schedule a plain sweep has at its rate (its seed is
// drawn from --seed and the rate), records and rows are numbered across
// the whole search, and windows are measure.WindowPause apart. After each
// window it stops:
//
//   - one window past the first saturated window (evidence.Saturated: it
//     answered ok fewer than 95% of its own arrivals a second, the rule the
//     course's analysis uses too): that window, a step higher, confirms
//     goodput stopped rising (under 5% more) or says it did not;
//   - right after a window whose p99 passes --max-p99, or whose share of
//     requests sent that were not ok passes --max-errors;
//   - when the next window (and the recovery window) would not fit --budget;
//   - at TO.
//
// Then, unless --recovery=false, one window at FROM (its row noted
// "recovery: ..."; it repeats the first window's schedule) shows whether
// the service recovers once the load stops. A summary follows the rows:
// why it stopped, the first saturation point and why, the ceiling (the
// most ok answers a second of any window of the search), p50, p95 and p99
// with n before the knee and at the ceiling, the errors of every window,
// the recovery window, the windows run; with --json one last object
// {"summary": {...}}.
//
// Ctrl-C (SIGINT) or SIGTERM ends the window in progress at once: it is
// kept as every window is (its row noted "cancelled before the window
// ended", its records with the arrivals after the interrupt not_sent,
// nothing lost), no recovery window runs, the summary of what was
// measured and the report are written, and load exits with status 1.
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
// unreachable target or control API, a --knee that is not FROM:TO with
// 0 < FROM < TO ≤ the cap, --step not in (1, 4], --max-errors not in
// (0, 1], a --budget without room for a window (and the recovery), a knee
// search's flag without --knee or --knee with --rate, --closed or
// --arrivals, --gauge or --counter without --metrics or a name that is not
// one, a metric /metrics does not show, a --queue-header that is not a
// header name, a --report that cannot be written, an arrivals file that is empty,
// unsorted or has a bad line (named), a --retry spec that does not parse
// (the parameter named, with what it allows), --retry, --critical,
// --sheddable, --fanout or --hedge with --closed, shares outside 0 to 1
// or together above 1, a --fanout outside 1 to 100, a --hedge spec that
// does not parse (the parameter named), --retry with --fanout or --hedge,
// a knob out of range, a knob flag
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
