// Package runner is the queue of sweep runs the web server starts for
// learners, and each run's event log.
//
// # Queue
//
// A Runner holds at most Config.QueueCapacity runs (default 8), counting
// the running ones, so however the burst of requests and the start of the
// first run interleave, exactly QueueCapacity are accepted. It runs
// Config.Concurrent at once (default 1: two sweeps on one machine would
// measure each other). A learner may have one run waiting or running
// at a time, and a client address (SubmitFrom) Config.PerAddress (default
// 3: a burst without cookies is a new learner every time, and learners
// behind one address share it); Submit refuses a second with
// *AlreadyQueuedError, one past the address's share with *ShareError, a
// full queue with *QueueFullError (both carrying RetryAfter: when the
// first run in the way is expected to end), and a bad request with
// FieldErrors, one message per field, naming what is wrong and what is
// allowed. Nothing is queued on error.
//
// Each run is one measure.Measure of its request's preset: a lab child
// (Config.Lab: the server re-executes itself with "lab-child") and a load
// child (Config.Load: "load-child") of its own, so every run starts from a
// fresh lab with exactly the knobs asked for, and is measured exactly as
// the lessons' recorded tables are. The load child pins itself to
// Config.Generator (the processors the server keeps free of its own work,
// affinity.KeepFree at its start) minus its lab's, or without it to every
// processor but its lab's, and sets its own GOMAXPROCS; nothing a run does
// changes the runner's process (the web server and every websocket
// watcher). With Config.Concurrent > 1 runs share the machine (each load
// child keeps off its own lab only).
//
// Windows follow each other measure.WindowPause apart: what a watching
// class's pages do with a row (package web sends each watcher the run's
// panel 150 ms after the row) then happens between measurements, not in
// the next window.
//
// A run's expected length (Estimate) is StartOverhead plus, per window, its
// seconds and WindowOverhead. A queued run's estimated start is now plus the
// running runs' remaining expected time plus the expected lengths of the
// runs ahead of it, divided among the Concurrent slots.
//
// # Sandbox caps
//
// Limits (defaults DefaultMax*): at most 8 windows (rates or client
// counts), at least MinWindowSeconds (0.5 s) and at most 30 s a window,
// at most 2,000 arrivals a second offered in a window (within the
// generator's own cap, result.MaxRate, 10,000), at most 120 s of
// windows in a run (windows × seconds), at most 60 s of processor time
// asked of the lab in a run (Request.CPUSeconds: each window's rate ×
// seconds × SPIN_MS, summed; a run asking far more than its processors
// give leaves a backlog that holds the lab after its windows), at most 256
// closed-loop clients, a caller timeout of at most 10 s, and CPUS at most
// the host's cores minus one (one on a single-core host), so the load
// generator keeps a core. The lab's other knobs are checked by
// labsvc.Config.Validate, and rng (the schedule's random source, "pcg" or
// "python") by loadrun.ParseSource. FieldErrors keys are the JSON names of
// Request: workers, spin_ms, wait_ms, limit, cpus, stall_every, stall_ms,
// backlog, accept, rates, clients, seconds, mode, rng, timeout_ms,
// max_inflight (an open-loop client's fixed pool of workers: 0 for none,
// or 1 to the closed-loop clients' cap, 256), at (at most MaxChanges,
// 8, knob changes such as "30s:WAIT_MS=2000", each inside the window, for
// a knob the lab can change while it runs, with a value it allows given
// the knobs before it) and over_time (a run over time, a sample every
// second: its windows last at least a second).
//
// # Statuses
//
// queued → running → done | failed | cancelled | interrupted; a queued run
// may also go straight to cancelled or interrupted. failed carries a
// reason a learner can act on: the lab (or the load generator) did not
// start, the lab child died mid-window (with its last words) or the load
// child did, the lab had not drained an earlier window's backlog before the
// next one, the run's events, rows or records could not be stored (the
// disk is full: the run stops there), or, across processes, the run was
// ended elsewhere while its runner ran it (Runs queued elsewhere). The reason is written for the
// learner: the error behind it (a Go error, with pids and addresses) goes
// to the server's log only; of a lab child that died, the reason quotes
// its exit status and its own last words, which are about the knobs.
// A run is done only once its rows, records and status are stored: if
// storing the done status fails, the run ends failed instead (Events). interrupted means the server
// stopped (Close); whatever was measured is kept. A learner may cancel
// their own queued or running run; the rows so far are kept.
//
// With Config.Store set, every run is saved: created (queued) before
// Submit returns, its status and times at every change, and each window's
// row and raw request records as the window ends (measure's window event,
// before the next window begins, so saving them never overlaps a
// measurement and a crash loses at most the window in progress).
//
// # Events
//
// Every run has a log of events, numbered from 1 in the order they
// happened. In JSON (zero-valued fields are left out, except seq, kind, at
// and window):
//
//	{"seq":1,"kind":"queued","at":"2026-11-30T11:00:00Z","position":2,
//	 "estimated_start":"2026-11-30T11:00:42Z","windows":2,"window":0,"seconds":2}
//	{"seq":2,"kind":"started","at":...,"estimated_end":...,"windows":2,"window":0,"seconds":2}
//	{"seq":3,"kind":"progress","at":...,"windows":2,"window":0,"rate":40,"seconds":2,
//	 "elapsed_ms":250.4,"sent":10,"ended":9}
//	{"seq":7,"kind":"knob","at":...,"windows":2,"window":0,"rate":40,"seconds":2,
//	 "elapsed_ms":1000.4,"change":"1s:WAIT_MS=40"}
//	{"seq":9,"kind":"sample","at":...,"windows":2,"window":0,"rate":40,"seconds":2,
//	 "elapsed_ms":1000,"sample":{"window":0,"at_s":0,"seconds":1,"ok":38,"refused":0,
//	 "gaveup":0,"errors":0,"client_busy":0,"not_sent":0,"p50_ms":21.1,"p99_ms":24.7,
//	 "in_flight":1,"lab":true,"queued":0,"in_service":1,"limit":3,"dropped":0}}
//	{"seq":12,"kind":"row","at":...,"windows":2,"window":0,"rate":40,"seconds":2,
//	 "elapsed_ms":2010.3,"row":{...result.Row...}}
//	{"seq":25,"kind":"done","at":...,"windows":2,"window":2}
//	{"seq":9,"kind":"failed","at":...,"windows":2,"window":1,"reason":"The lab service stopped during window 2 of 2, ..."}
//
// queued comes when the run joins the queue and again whenever its position
// or estimated start changes; started when its two children are up;
// progress four times a second while a window runs (every report of the
// load child, loadrun.ProgressEvery apart, and one as the window ends
// unless it comes less than half of ProgressEvery after the one before;
// its elapsed_ms says when the counts were read); knob as each of the
// request's knob changes (at) is made in a window, elapsed_ms saying when
// the lab took it, so a chart can mark it; in a run over time (over_time)
// sample at the end of each second of a window and once more when its
// last request has ended, carrying the result.Sample (elapsed_ms is its
// end; a window's samples add up to its row), never skipped and stored
// with the others, so a watcher who comes late or after the run has them
// all; row once per window,
// carrying the whole result.Row (the window's final counts); and last
// exactly one terminal event: done, failed, cancelled or interrupted
// (window is then how many windows finished, reason says why in words for
// the learner). The log itself has no gaps: seq counts every logged event.
//
// Subscribe(id, since) returns every logged event with seq > since (all of
// them, progress included), then a Subscription that receives every later
// event in order: when Ready fires, Take returns the events waiting and
// whether more may come. Each is received exactly once, with one
// exception: a progress event still waiting when a newer progress is
// logged is replaced by it, so a watcher that fell behind gets the newest
// progress, not every one, and sees seq jump over the replaced ones. Only
// progress is ever skipped; a row never waits behind more than one
// progress. Appending never waits for a watcher: at most
// Config.SubscriberBuffer events other than that one progress may wait,
// and a subscription with more is dropped (its waiting events discarded,
// Take reports no more, Dropped true); it may subscribe again from the
// last seq it saw, and then gets every logged event after it. The runner
// keeps the logs of queued, running and the last Config.Retain finished
// runs in memory; older runs are read from the store.
//
// A Relay is the same log for a run another process holds, filled by a
// reader of the store (package web's follower): Add keeps each stored
// event's seq, time and JSON, Subscribe and Watchers work as the Runner's,
// so one reader per run fans out to every watcher of a server.
//
// With Config.Store set, an event reaches watchers only once it is
// stored with its seq and JSON, so the store holds every seq a watcher
// can have seen, even after a crash: a stream resumed from the store
// numbers each event as it was numbered live (package web). Each run's
// log has a writer that stores the events waiting (at most
// Config.EventBatch; every one by default) in one write (Saver.WriteRun:
// one transaction, one wake-up for other servers' watchers), then hands
// them out in order; events logged meanwhile wait for the next write. A
// window's raw records and row go in the write of its row event, and the
// run's final state in the write of its terminal event, so the status
// and the log's end are stored together or not at all. A write the
// database cannot take for now (it is unreachable) is tried again for up
// to two minutes, delaying the events, not losing them; one that fails
// for good (a full disk, or the run ended elsewhere: below) ends the log
// at once with a failed event that says the run's data could not be
// stored, in place of the events that could not be, and stops the run.
// That event's seq follows the last stored one, and the runner keeps
// trying to store it with the status failed (every 2 s until it is, or
// the runner closes), so the final status a watcher saw is the one the
// store keeps once it has room again.
//
// Each event carries its JSON encoding (Event.JSON), made once when it is
// logged, so a server fanning one event out to many watchers encodes it
// once. The hand-out to subscribers wakes their readers 32 at a time,
// letting the woken ones run in between (runtime.Gosched), so a thousand
// websocket writers made runnable at once do not queue ahead of the rest
// of the server. The load generator is not among them: it runs in the
// run's load child.
//
// # Runs queued elsewhere
//
// Across processes (server --role web and runner, package fleet) runs are
// queued in Postgres, not here. A runner process claims one and hands it
// to RunClaimed, which runs it on this same execution path (children,
// rows, records, events, statuses), its events numbered after the last
// stored one (Claimed.LastSeq), every write fenced by its claim
// (Claimed.Owner, store.WriteRun): once the run has ended elsewhere (a
// reaper took its runner for lost), the runner's next write is refused,
// its log ends failed and the run stops, so the stored log keeps the one
// terminal event the reaper wrote; its context ending with
// ErrCancelledByOwner cancels it, any other end interrupts it, and Close
// interrupts it as a run of the Runner's own. StoreEvent and QueuedEvent
// make the events other processes append to a stored log (a queued run's
// new place, a cancel before it started, "runner lost").
//
// # Metrics
//
// With Config.Registerer set:
//
//	capacitylab_runs_queued                 gauge: runs waiting
//	capacitylab_runs_running                gauge: runs running
//	capacitylab_runs_total{outcome}         counter: runs ended: done, failed, cancelled, interrupted
//	capacitylab_run_watchers                gauge: live event subscriptions (websocket watchers)
//	capacitylab_run_watchers_dropped_total  counter: subscriptions dropped for falling behind
//	capacitylab_run_queue_wait_seconds      histogram: from queued to started
//	capacitylab_lab_child_deaths_total      counter: lab children that died during a run
//	capacitylab_load_child_deaths_total     counter: load children that died during a run
//
// A child that dies during a run is also logged, as a warning "lab child
// died" or "load child died" with the run, the window, its pid, its exit
// status or signal (exit) and its last lines on stderr (last_words). Each
// run's start is logged with where its two children run (run started:
// lab_pid, lab_cpus, load_pid, load_cpus, load_gomaxprocs, pinning).
package runner
