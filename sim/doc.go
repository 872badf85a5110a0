// Package sim is a discrete-event simulation of the lab (package labsvc)
// and its callers (package loadrun), with the same knobs and the same
// output as a real run: rows built by loadrun's own code from raw
// result.Records, and the records themselves. The package imports neither
// loadrun nor measure: it speaks package result's types.
//
// A Model is a result.Driver: a loadrun.Sweep with a Model as its Driver
// simulates each window instead of sending it, and Sweep.Run does
// the rest as for a real run (validation, rows, notes, events, WindowDone,
// the report). The arrivals are the real run's: Sweep.WindowSchedule(i),
// the same schedule from the same seed and random source, or the same
// arrival trace. Nothing in the simulation is random, so the same sweep
// always simulates to the same records, and the package keeps no state
// between calls: any number of simulations may run at once.
//
// # The model
//
// Times are whole nanoseconds from the window's start. Each window starts
// from an empty lab, as a real sweep's does after it drained and reset the
// lab.
//
// Callers. Open loop: a request is sent at each intended time of the
// window's schedule (Sent = Intended: the simulated generator is never
// late), unless MaxInFlight requests are outstanding, when it is not sent
// (not_sent, inflight_cap), as the real generator does; with
// ClientWorkers, when that many are outstanding (client_busy). Closed loop:
// Clients clients each send at 0, then again Think after each request
// ends, while less than the window's length has passed (records are
// numbered in send order; clients sending at one instant go in client
// order). A closed loop whose requests and think time are all zero would
// send without end at one instant, and one that sends more than
// result.MaxArrivals requests in a window is stopped there: both are
// errors saying so. A caller gives up Timeout after its send if no answer has come
// (gaveup, read_timeout, End = Sent + Timeout); the lab does not notice
// and still serves the request. A refused caller reads its 503 Refuse
// (DefaultRefuse, 0.05 ms, when 0) after its send.
//
// A retrying client (result.Window.Retry, a sweep's Retry; open loop
// only) is package retry's own, its jitter drawn from the window's
// RetrySeed, driven in simulated time as the live generator drives it: a
// request's first attempt is due at its schedule time, and not sent
// (not_sent, breaker_open) when the client's Send says the breaker is
// open; the in-flight cap is checked first, as before. Each attempt that
// ends (ok, refused, gave up, an error) is told to the client's Retry,
// with the lab's Retry-After of 1 s for a 503 (admit.RetryAfter); a retry
// it decides on is due at the time it says, and is sent then when the cap
// has room and Send lets it through; otherwise there is no record and the
// request ended with its last attempt. Every attempt sent is a record: a
// retry's Seq follows the schedule's arrivals' in the order retries are
// sent, its Request is its first attempt's Seq, Attempt its number,
// Intended and Sent its due time, and it carries its request's class
// (Window.Classes, one per arrival; Default when nil). A caller that gave
// up abandons its attempt only: the lab still serves it, so retries add
// arrivals to a lab that is still serving the attempts they replace (the
// metastable failure of a retry storm, TestRetryMetastable). At one
// instant the schedule's arrival goes before a retry due then, and
// retries due at one instant go in the order they were decided. Rows
// count logical requests (result.Logical) with their attempts; with a
// breaker, Result.Breaker is its state at each boundary of a run over
// time and at the window's end. A window without Retry simulates exactly
// as it did before retries were modelled.
//
// Fan-out and hedged requests (result.Window.Fanout and Hedge, a sweep's;
// open loop only, neither with Retry) are the live generator's: an
// arrival fanned out to k is k records, sub-request 0 numbered with the
// arrivals and the others after them (loadrun's numbering), all sent at
// its time in order, through the door one after another, or none of them
// when the in-flight cap lacks room for all k. A hedging client is
// package hedge's own: as a (sub-)request is sent it asks the client for
// the delay, and its copy n is due n delays later, sent then (a record of
// its own, numbered after every sub-request in the order sent, Intended
// its due time) while no copy has answered ok, one is still out and the
// cap has room. The first copy answered ok wins and the others still out
// are cancelled at that instant (cancelled, End then): their callers stop
// waiting, but the lab still serves them, as the real lab serves what it
// has read. The client is fed the latencies of copies answered ok and of
// copies cancelled after more than the delay, as the live one is. At one
// instant the lab's events come before a copy due then, so a request
// answered exactly at its delay gets no copy. Rows and samples count
// logical requests and sub-requests as the generator's (result.Fold). The
// simulated callers read their answers at once; the live generator's copies
// leave on Go's timers, up to a millisecond late, so the lab's hedged
// latencies run a little longer than the simulator's.
//
// The door. Its admission policy (POLICY) is the lab's own: the same
// package admit, on the window's clock (nanoseconds from its start), a
// fresh policy each window as the lab's starts again at each reset. It
// refuses a request as the lab's would: with the queue policy when every
// worker is taken and LIMIT > 0 requests already wait; with inflight,
// aimd and gradient when their limit are inside. A request it admits
// that finds a worker free is handed to it at once (queue wait 0);
// otherwise it joins the FIFO queue. Only requests that find every
// worker taken queue and count for queued (queued_max) and LIMIT. The
// door numbers the requests it admits (not the refused) from 1; with
// STALL_EVERY = N > 0 the Nth, 2Nth, … are stalled.
//
// Classes. Each request has a class, as a live caller's X-Criticality
// gives it (critical, default or sheddable; package labsvc), and the door
// asks the policy with it (admit.Door.AdmitClass): with POLICY's
// classes=on sheddable requests are refused first, critical ones have
// room beyond the bound, and the queue is one FIFO lane per class, served
// critical first; without it every class is alike, in one FIFO. The
// counts by class are the lab's (result.LabStats.Classes). The generator
// gives no classes yet, so every simulated request is default; the
// simulator takes a class per arrival in one place (the window's
// arrivalClass), which the package's tests set.
//
// A worker serves its request, tells the policy its latency (from its
// send, which is its arrival), then takes the oldest queued request (with
// classes, the oldest of the most critical class waiting), or becomes
// free; with POLICY=sojourn the policy may drop the request taken
// instead, when it waited too long, and the worker takes the next. A
// dropped request's caller reads its 503 a refusal's time later (Refuse),
// unless it gives up first; the lab's refused counts it either way, as
// the live lab's does. Serving is: spin SPIN_MS of processor time (plus
// CPUPerRequest, 0 unless set), then wait WAIT_MS; a stalled request
// instead waits STALL_MS and spins nothing. The spinning requests share
// the CPUS processors exactly as the lab's do (package labsvc): round
// robin with the lab's quantum, labsvc.SpinQuantum (0.25 ms). A spin takes
// a free processor at once, or joins the back of the line; a spin on a
// processor keeps it for at most a quantum while others wait, then goes to
// the back of the line and the front one takes the processor; a spin
// nobody waits for goes on. Quanta are counted from when a spin took the
// processor, so a spin that joins an empty line waits for the next
// multiple of the quantum in the turns of those computing. Waits run in
// parallel and take exactly their length.
//
// The answer. A request's service ends when its wait (or stall) ends; it
// is counted in done then, and its caller, if still waiting, has a 200 at
// that instant (End = the end of service; X-Queue-Wait-Ms and
// X-Service-Ms as the lab writes them, to the microsecond). With one
// worker, whose spins never wait for a processor, every latency is
// therefore exact: the sum of the service times ahead of it, to the
// nanosecond; with more, the turns are exact too (TestProcessorRoundRobin
// works cases by hand).
//
// Contention, as the lab's (package labsvc, Contention). With LOCK_MS a
// request, its spin done (or at once, with no spin), holds the lab's one
// lock for LOCK_MS before its wait: from when the request before it in
// line lets go of it, or from when it reaches it if the lock is free
// then, first come first served; the time in line and holding it is
// service time, and its wait then takes WAIT_MS, as the lab's does when
// its own work takes no time. So the simulated lab finishes at most
// 1000/LOCK_MS requests a second, as the lab does (TestLockSimulated and
// TestLockAfterTheSpinSimulated work traces by hand). With COHERENCY_US a
// request's spin is COHERENCY_US longer for each other request in service
// (admitted and not done, dropped or queued, as the lab's in_service) as
// it begins, spent in the same turns (TestCoherencySimulated); with
// SPIN_MS=0 it spins for that alone. CPUPerRequest's stretch of the
// quantum is reckoned on SPIN_MS alone, so a spin lengthened by
// COHERENCY_US takes slightly fewer turns than the lab's (by the share
// CPUPerRequest adds to SPIN_MS, 7% at SPIN_MS=1): its length is the
// lab's, its turns a little longer. A stalled request does neither, as
// in the lab. labsvc's TestLockSerialises and TestCoherencyRetrograde
// run closed-loop sweeps on both and log them side by side.
//
// Knob changes. A window's changes (result.Window.Changes, the same
// "30s:WAIT_MS=2000" a real run makes through the lab's POST /config,
// times from the window's start) change the simulated lab's knobs at
// their times, each where the live lab's code applies it (labsvc's
// SetConfig and the workers that read the knobs): a new POLICY or LIMIT
// starts a fresh policy at once (package admit's Door.Set), which counts
// the requests already inside but has learned nothing, and judges the
// next arrival; a lower LIMIT evicts nobody. SPIN_MS, WAIT_MS, STALL_MS,
// LOCK_MS and COHERENCY_US hold for each request whose service begins at
// the change or later (a worker reads them as it takes a request): a
// request already spinning, waiting or stalling keeps the knobs it began
// with, so a wait begun
// before WAIT_MS fell may end after one begun later. STALL_EVERY holds
// for requests admitted from the change on, the door's count going on
// from the window's start (the Nth admitted stalls when N is a multiple
// of the new value). A new WORKERS holds at once, as capacity an
// autoscaler adds or takes away lands: with more, each worker added takes
// the oldest queued request then and there (asking the policy, which may
// drop it) or is free; with fewer, free workers stop at once and busy ones
// as each finishes the request it holds, so none is abandoned; a rise
// before they have stopped keeps them instead (TestWorkersChangeSimulated
// works a trace by hand, and TestWorkersGrowDrainsTheBacklog holds a
// backlog's drain to queueing theory's B ÷ (new capacity − arrival rate)).
// The queue policy's limit follows (admit's Door.SetWorkers). Each window
// starts again from Model.Lab, as a real sweep sets the knobs back after
// each window. CPUS and ACCEPT cannot change while the lab runs, and
// BACKLOG, the kernel's accept queue, is not simulated: such changes are
// refused (Model.CheckChanges, with the lab's own messages), as are values
// the lab refuses. A change
// due after the window's last request ended is not made (Result.Changed
// counts those made); loadrun notes it, as for a real run.
//
// A run over time (result.Window.SampleEvery, a sweep with SampleEvery):
// at each boundary, before anything else due then, the simulated lab is
// read as GET /stats reads the live one (queued, in service, the policy's
// limit, dropped: Result.Lab), and loadrun samples the window from its
// records, the last sample with the lab as it was when the window ended;
// so a simulated run over time charts as a measured one does.
//
// Order at one instant: a run over time's read of the lab, then a knob
// change due then, then the lab's
// events (a worker that finishes at t frees itself, or takes the next
// queued request, before a caller arriving at t reaches the door), then
// callers giving up or reading a refusal, then sends.
//
// The window ends when nothing more is due to be sent and every sent
// request has ended for its caller; that is when a real sweep reads the
// lab's counters, and the row's done, queued (queued_max), lab_service_ms
// (the mean service time of the requests done by then) and lab_cpu_ms (the
// processor time spent spinning by then, CPUPerRequest included) are the
// simulated lab's at that instant. The lab may still be serving requests whose callers gave up;
// a real sweep waits for it to drain before the next window, and the next
// simulated window starts empty.
//
// # What it assumes, and how it differs from the live lab
//
// The simulation is the lab's model, not the machine the lab runs on:
//
//   - No overheads unless asked: the live lab spends processor time of its
//     own on every request (accepting, reading, answering, closing: 0.05
//     to 0.10 ms measured, see docs/BENCHMARKS.md), which lowers its
//     processor ceiling below CPUS ÷ SPIN_MS. Model.CPUPerRequest adds
//     it; MeasuredCPUPerRequest is what this project measured.
//   - Exact sleeps: the live lab's WAIT_MS ends when the operating system
//     wakes the worker, a little late and later on a busy machine; the
//     simulation's ends on time. A busy live worker makes up its late
//     wake-up and its hand-off to the next request within that
//     request's wait, so it starts one every SPIN_MS + WAIT_MS as
//     the simulation's does (see labsvc); a lone request's service is
//     late by its wake-up.
//   - How the processors are shared: as the lab does, round robin with
//     its quantum (the lab takes turns inside the worker computing, see
//     labsvc; its turns are within a clock reading, a few µs, of the
//     quantum, while the simulation's are exact). Round robin is not
//     processor sharing: on one processor with S = 2 ms spins at ρ = 0.5
//     (M/D/1), the simulated mean time in system is 3.83 ms against
//     sharing's S/(1−ρ) = 4 ms and first come's 3 ms (a quantum of 20 µs
//     gives 3.99). On the lessons' presets the difference is small: p50
//     and p99 of bottleneck-moves' 16- and 64-worker sweeps within 2.4% of
//     sharing's at every rate, the 4-worker sweep's within 3.5% up to its
//     ceiling and 9% (p50) and 15% (p99) past it; first come, first served
//     (what the lab did before, when a spin held a processor for up to 10
//     ms) differs by up to 30% below the knee (p99 at 400 a second: 42 ms
//     against 60). So the simulator models the lab's discipline itself
//     rather than sharing.
//   - The live lab's processors also run its own work (accepting, reading,
//     answering, Go's runtime), time-sliced by the kernel with the spins;
//     the simulation's run only spins. CPUPerRequest, when set, is spent
//     with the spin but spread over its turns (each quantum stretched by
//     the same share), so a spin takes as many turns as SPIN_MS alone, as
//     in the lab, whose own work is not a turn of its own. Spent as one
//     more short turn at the end instead, it sent every spin to the back
//     of the line once more, and the simulated p50 of worker-bound presets
//     past their knee came out 1.5 to 10 times the recorded one
//     (docs/BENCHMARKS.md, the fidelity table).
//   - The door only: ACCEPT=workers, where callers wait in the kernel's
//     accept queue of BACKLOG and are dropped past it (labsvc), is not
//     simulated; a Model with ACCEPT or BACKLOG set is refused, saying so.
//   - A perfect generator and network: requests leave at their intended
//     time and answers arrive the instant they are written (send_lag and
//     late are 0); the live generator is late by tens of microseconds and
//     loopback adds a similar round trip.
//   - Nothing else on the machine: no neighbours on the lab's processors,
//     no garbage collection, no timer slack.
//
// Below the knee these differences are small against the service time;
// near and past it, where waiting times grow without bound, small
// differences in the service time move latencies a lot (see the fidelity
// test and docs/BENCHMARKS.md).
//
// # Use and speed
//
// A web handler simulates a run request in process with
//
//	sw := q.Sweep()
//	sw.Driver = sim.Model{Lab: q.Config, Timeout: q.Timeout()}
//	rep, err := sw.Run(ctx, nil)
//
// after the runner's own validation (runner.Limits.Validate); a bad model
// or sweep comes back with labsvc's and loadrun's messages, as for a real
// run, and the sweep's knob changes (q.At, in Sweep.Changes) are made as
// above. A simulated request costs about 80 ns of processor (one worker,
// FIFO, records and loadrun's statistics included); a 30 s window at 100
// a second about 0.3 ms, an 8-window lesson sweep of 64 workers on one
// processor about 6 ms (docs/BENCHMARKS.md has the figures and how they
// were measured). The web package's Simulate (POST /api/simulate) is such
// a handler: every lab block of a lesson offers it.
package sim
