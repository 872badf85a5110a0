// Package labsvc is the lab service the lessons measure, and the supervisor
// that runs it as a sandboxed child process.
//
// # Knobs
//
// Config holds thirteen knobs, read by ParseSettings from flags with environment
// fallbacks (a flag wins), then defaults:
//
//	env          flag           default  range         meaning
//	WORKERS      --workers      1        1..1024       requests served at once
//	SPIN_MS      --spin-ms      2        0..1000       processor time per request
//	WAIT_MS      --wait-ms      18       0..10000      waiting (sleep) per request
//	LIMIT        --limit        0        0..100000     admission queue depth, 0 = unbounded
//	CPUS         --cpus         1        1..64         processors the lab may use
//	STALL_EVERY  --stall-every  0        0..1000000    every Nth request stalls, 0 = never
//	STALL_MS     --stall-ms     0        0..10000      what a stalled request takes instead
//	BACKLOG      --backlog      0        0..65535      listen backlog, 0 = the system's maximum
//	ACCEPT       --accept       door     door|workers  who accepts connections
//	POLICY       --policy       queue    see below     the door's admission policy (,classes=on: by class)
//	DIST         --dist         constant see below     how each request's service demand varies about its mean
//	LOCK_MS      --lock-ms      0        0..1000       time each request holds the lab's one lock, 0 = none
//	COHERENCY_US --coherency-us 0        0..100000     processor time per request per other request in service
//	ADDR         --addr         127.0.0.1:8000         requests (cmd/lab only)
//	CONTROL_ADDR --control      127.0.0.1:8001         control API (cmd/lab only)
//
// (CONTROL_ADDR, not CONTROL: cmd/load reads CONTROL as the lab's control
// URL, and the two are often run from one shell.)
//
// WORKERS, SPIN_MS, WAIT_MS, LIMIT, STALL_EVERY, STALL_MS, BACKLOG,
// POLICY, DIST, LOCK_MS and COHERENCY_US may change while the lab runs
// (POST /config, ChangeableKnobs),
// WORKERS only with ACCEPT=door (see Changing WORKERS); CPUS and ACCEPT
// may not.
//
// A bad value (not a whole number, out of range, or a flag given empty such
// as --workers=; an empty environment variable counts as unset) is reported
// as input.FieldErrors, one "VAR: value is not allowed: want lo to hi" per
// knob, all on one line; cmd/lab prints it and exits with status 2. ACCEPT is door or
// workers, and with ACCEPT=workers LIMIT must be 0 (there is no queue of
// the lab's own to limit). POLICY is a policy of package admit as it
// spells it: queue (the default, whose bound is LIMIT), or inflight,
// aimd, gradient or sojourn with their parameters after commas
// ("inflight,quota=5", "aimd,backoff=0.5"), any of them with classes=on
// to shed by class ("queue,classes=on", see Classes below); a bad name or
// parameter is reported as POLICY's value with what is allowed. With any
// policy but queue LIMIT must be 0 (the policy's bounds are its
// parameters), and with ACCEPT=workers POLICY must be queue without
// classes: the workers take callers straight from the kernel's accept
// queue, so there is no door to admit, refuse or order them at (BACKLOG
// bounds that queue instead). An unknown flag or
// a stray argument is an ErrUsage error listing the flags there are (also
// status 2).
//
// # Requests
//
// A request is a fresh TCP connection carrying one HTTP/1.x request (any
// method and path; a body is allowed with Content-Length, at most
// MaxBodyBytes, and is discarded; chunked bodies are refused as garbage).
//
// The door accepts each connection and reads its request (and its body)
// on a goroutine of its own, at most MaxReading at once, within
// ReadTimeout of accepting it, so that a caller slow to send its request
// holds up nobody: neither the door nor a worker. The request arrives
// when it has been read: in the meantime it is in no count but reading.
// The door then asks its admission policy (POLICY, package admit) whether
// to let it in, telling it the request's class (X-Criticality, below). The
// queue policy refuses it when every worker is taken and LIMIT > 0
// connections already wait in the queue; inflight, aimd and gradient when
// their limit of connections are inside (queued or in service); sojourn
// refuses nobody at the door; with classes=on each class has its own
// bound (below). If a worker is free, the door hands the connection to it
// at once, the way a kernel hands an accepted connection to a thread
// blocked in accept: it is in service from that moment, even if the
// worker has not yet had the processor to start on it. A refused caller
// gets the door's refusal, its request read:
//
//	HTTP/1.1 503 Service Unavailable
//	Connection: close
//	Retry-After: 1
//	Content-Length: 11
//
//	queue full
//
// then half-closes and drains the connection (at most LingerTimeout) before
// closing it, so the caller reads the 503 instead of a connection reset. A
// refused connection never reaches a worker. Otherwise the connection joins
// the FIFO queue (with classes=on, its class's), where it waits only
// because every worker is taken. With
// POLICY=sojourn a worker taking a connection from the queue asks the policy
// first, which may drop it for having waited too long: it is refused as
// at the door (and counted in refused and dropped), and the worker takes
// the next. The policy learns from every request the lab serves: its
// latency, from its arrival (its request read) to the answer. What each
// policy does and assumes, and
// its parameters, are in package admit; a POST /reset makes the policy
// forget what it learned, so that every window of a sweep starts from the
// same policy.
//
// With ACCEPT=workers there is no door: each worker, whenever it is free,
// accepts the next connection from the listening socket itself, the way a
// pre-forked or thread-per-connection server does, reads its request (a
// caller slow to send it holds the worker, up to ReadTimeout) and serves
// it. Callers
// beyond the free workers wait in the kernel's accept queue, which holds
// at most about BACKLOG (Linux admits one more; past that it drops the
// caller's handshake, and the caller's kernel tries again after a second).
// The lab's own counters never see them: queued stays 0 and X-Queue-Wait-Ms
// reads 0, however long they waited. backlogged, read from the listening
// socket (TCP_INFO), is the only place they show. BACKLOG applies in both
// modes (the door too accepts from that queue, but at once); 0 keeps the
// system's maximum, net.core.somaxconn.
//
// A worker spends SPIN_MS of processor time, then waits until SPIN_MS +
// WAIT_MS after the start of its service plus the spin's waits for its
// turns on the processor (see below; a stalled request instead waits STALL_MS and
// spends no processor; LOCK_MS and COHERENCY_US add a lock held between
// the spin and the wait, and spin, see Contention), and answers
//
//	HTTP/1.1 200 OK
//	Connection: close
//	X-Queue-Wait-Ms: 0.042
//	X-Service-Ms: 20.117
//	Content-Length: 3
//
//	ok
//
// and closes. It is done with the caller once the answer is written: before
// writing it, the worker takes the oldest queued connection itself or, if
// none waits, becomes free for the door to hand it the next one, so a caller
// that reads its answer and connects again at once finds a free worker.
// X-Queue-Wait-Ms is the time from the request's arrival (read by the
// door) to a worker being assigned the connection (0 when the door handed
// it to a free worker; with ACCEPT=workers always 0); X-Service-Ms is the
// time from then to the answer, including any wait for the processor
// before the worker got to it and, for a connection a worker took from the
// queue, the worker's writing and closing of the answer before (with
// ACCEPT=workers, from the worker's accept, its reading of the request
// included). Both are decimal milliseconds with three decimals. The time
// the door took to read the request is in neither: for a caller that sends
// its request with its connection, as the load generator does, it is tens
// of microseconds; for a slow one, its own slowness.
//
// # Classes
//
// A request says how critical it is in its X-Criticality header
// (CriticalityHeader):
//
//	X-Criticality  class (package admit)  with POLICY ...,classes=on
//	critical       admit.Critical         served first; refused only when twice the policy's bound are inside
//	default        admit.Normal           as the policy decides, as without classes
//	sheddable      admit.Sheddable        served last; refused first, once all but a quarter of the bound are inside
//
// The value is read in any case, spaces around it ignored; no header, or
// a value the lab does not know, is default (the lab refuses with 400
// only what it cannot read as an HTTP/1.x request, and a class it does
// not know does not stop it reading one); if the header is given more
// than once, the last counts. Without classes=on the door treats every
// class alike, in one FIFO queue, exactly as before classes; the stats
// and metrics count each class either way. With it the queue is served
// critical first, then default, then sheddable, first come first served
// within a class (package admit's Shedding by class has the rules and
// what they assume). With ACCEPT=workers the kernel's accept queue is the
// queue, which nothing can order or shed by class: the header is only
// counted, and classes=on is refused.
//
// SPIN_MS is processor time, not wall time: the worker computes while locked
// to its OS thread and reads the thread's CPU clock
// (CLOCK_THREAD_CPUTIME_ID), so a spin costs SPIN_MS of processor however
// many workers compete for it. The spins share CPUS processors in turns,
// as a kernel time-slices threads (round robin): at most CPUS compute at
// once, each for at most SpinQuantum (0.25 ms) of processor while others
// wait, then at the back of the line; a spin nobody waits for goes on. So
// k spins on one processor each progress at about 1/k of it (processor
// sharing, to within a quantum): four 5 ms spins started together all end
// near 20 ms, not at 5, 10, 15 and 20 (TestSpinsShareTheProcessor), and a
// 2 ms spin is overtaken by every spin that comes after it while it runs.
// A turn passes inside the goroutine of the worker computing (a runner),
// so it costs no more than reading the clock: at saturation the lab's own
// processor time per request is the same, within the noise, as when every
// spin ran to its end in one turn (BenchmarkSpinTurns). While spins
// compute, another of the lab's threads waits in Go's network poller (a
// worker that starts on a free processor wakes one), so a request that
// arrives meanwhile is read at once and joins the line. With CPUS=1 and SPIN_MS=2 the processor ceiling is 1000/2 = 500 requests a
// second whatever WORKERS is, and the service time each caller sees grows
// with the competition instead. The lab's own work per request (accepting,
// reading, answering and closing a TCP connection, mostly in the kernel)
// adds about 0.07 to 0.2 ms of processor, so the plateau measured on one
// processor is nearer 450 to 480 a second; process_cpu_ms in the stats
// shows it, and `load --check` measures it at rest (see
// docs/BENCHMARKS.md).
//
// A varying service time (DIST, package dist): each request's spin and
// wait are SPIN_MS and WAIT_MS times a factor of mean 1 drawn for it
// (exponential, lognormal with a given SCV, or bimodal: a share of
// requests some times as long as the rest), so its mean stays SPIN_MS +
// WAIT_MS. The door draws the factors in the order it admits requests
// (with ACCEPT=workers, the workers in the order they accept them) from
// a source seeded with DIST's seed, again at every POST /reset and every
// change of DIST, so each window of a sweep draws the same factors in the
// same order; a stalled request draws one too, unused. The stats'
// service_ms reports the measured mean and scv. With DIST=constant (the
// default) every factor is 1 and the lab is as it always was.
//
// A periodic stall (a garbage-collection pause, a cache flush): with
// STALL_EVERY=N > 0 the door numbers the connections it admits (handed or
// queued, not refused or bad) from 1 in the order it admits them (with
// ACCEPT=workers, the workers number the connections they accept and
// read), and the Nth,
// 2Nth, … take STALL_MS of sleep instead of their spin and wait. The
// count starts again at every POST /reset, so each window of a sweep
// stalls the same requests; a change of STALL_EVERY applies to the
// connections the door admits after it.
//
// WAIT_MS is waited to a deadline: SPIN_MS + WAIT_MS after the start of the
// request's service, plus the time the spin waited in the line for its turns
// while the lab's other spins computed (the processor sharing, which lasts
// as long as it lasts). So the lab's own work (for a busy worker writing
// and closing the last answer; with ACCEPT=workers, reading the request),
// what a spin computes
// beyond SPIN_MS, and what other threads (other processes, the Go runtime)
// take of the processor while it computes fall within WAIT_MS instead of
// adding to it. A worker that goes straight from one request to the next (it
// took the next from the queue) reckons the next one's deadline from when
// the last was due to end (or the next arrived, if later) rather than when
// it did, though from at most the next one's WAIT_MS before it took it (all
// that wait can make up): the late wake-up from the last wait and the
// hand-off between the two are made up within the next request's wait. So a
// busy worker starts a request every SPIN_MS + WAIT_MS on average, as set
// (TestBusyWorkerCycle), a lab set 99.6% busy is that busy, and a busy
// worker's service times average SPIN_MS + WAIT_MS; one that follows a stall
// of the machine is shorter by as much, up to its WAIT_MS. Only a stall
// longer than a wait makes a busy worker slower. With WAIT_MS=0 there is no
// wait to make anything up in: the lab's own work adds to the spin. With
// ACCEPT=workers the lab does not know when a caller arrived in the kernel's
// queue, so nothing is made up from one request to the next: a busy worker's
// cycle is longer than set by its hand-off (writing, closing, accepting) and
// its wake-up, about a tenth of a millisecond. On Linux the worker waits on
// a timerfd through Go's poller, which wakes it within microseconds of the
// deadline; a Go timer would wake it up to a millisecond late, because the
// poller sleeps in whole milliseconds. So at rest a request's service time
// is SPIN_MS + WAIT_MS plus the lab's wake-up, a few tens of microseconds
// (the goal is within 1%; BenchmarkServiceTimeAtRest).
//
// The lab does not notice callers that gave up: once a request has been read
// it is served and counted in done even if nobody reads the answer. A caller
// that sends nothing or too little within ReadTimeout of its accept, closes
// before sending a complete request, or sends something that is not an
// HTTP/1.x request (answered 400) is counted in accepted and in bad and
// bad_by (timeout, gone, garbage), and never admitted: it held the door's
// reader, not a worker (with ACCEPT=workers, the worker that accepted it).
//
// # Contention
//
// Two knobs make the lab's workers get in each other's way, as the
// threads of a real service do, so that adding callers (and workers to
// serve them) stops adding throughput and then takes it away: the two
// costs of Gunther's Universal Scalability Law. Without them the lab
// shares its processors among the spins for free, and its throughput
// never falls as callers are added. Both are off (0) by default, and
// Config.String leaves them out while they are.
//
// LOCK_MS is the serial part. Every request, after its spin and before
// its wait, holds the lab's one lock for LOCK_MS, waiting (it takes no
// processor), one request at a time, in the order they reach it (FIFO).
// A request that finds the lock taken waits in line for it. The lab
// keeps the lock's timeline rather than a mutex: a request takes the lock
// when the one before it in line is due to let go of it, not when that
// one's worker wakes, so the holds follow one another without a gap and a
// late wake-up does not lengthen the next hold. So the lab finishes at
// most 1000/LOCK_MS requests a second however many workers it has, and
// that many while the lock is always wanted (TestLockSerialises: LOCK_MS=5,
// 16 workers and 16 closed-loop callers, at most 200 a second). The time
// waiting for the lock and holding it is service time (X-Service-Ms and
// service_ms include it; busy_ms too) and, like the spin's turns, lasts as
// long as it lasts: WAIT_MS's deadline (above) moves by as much, so the
// wait ends WAIT_MS after the request let go of the lock, less what the
// lab's own work took before it.
//
// COHERENCY_US is the coherency part: keeping shared data coherent costs
// more the more parties share it. A request spends COHERENCY_US of
// processor time on top of SPIN_MS for each other request in service
// (in_service, counted as GET /stats counts it) as its spin starts: n in
// service, itself included, is COHERENCY_US × (n − 1) µs more spin, spent
// by the same spinner in the same turns on the CPUS processors (and
// counted in spin_cpu_ms). With the processors the bottleneck, each
// request then costs more processor the more callers there are, and the
// throughput past its peak falls as about 1/n (TestCoherencyRetrograde:
// WORKERS=64 SPIN_MS=1 WAIT_MS=9 CPUS=1 COHERENCY_US=100, closed loops of
// 1 to 64 callers). It counts into the spin's length as SPIN_MS does, so
// WAIT_MS's deadline is later by as much. With SPIN_MS=0 a request spins
// for its coherency alone.
//
// A stalled request (STALL_EVERY, above) neither takes the lock nor spends the
// coherency time: its STALL_MS replaces its whole service. A change of
// either knob holds for requests whose service begins after it, as a
// change of SPIN_MS or WAIT_MS does.
//
// # Control API
//
// JSON over HTTP on the control listener, served apart from the queue. It
// answers within milliseconds however overloaded the lab is: the spins
// hold at most CPUS processors and the lab runs with one Go P more (see
// Supervisor), so the control API never waits in Go's run queue behind a
// spinning worker:
//
//	GET  /healthz   "ok"
//	GET  /config    the knobs in force and the processors the lab runs on:
//	                {"workers":1,"spin_ms":2,"wait_ms":18,"limit":0,"cpus":1,
//	                 "stall_every":0,"stall_ms":0,"backlog":0,"accept":"door",
//	                 "policy":"queue","dist":"constant","lock_ms":0,"coherency_us":0,
//	                 "processors":[0]}
//	POST /config    change some of workers, spin_ms, wait_ms, limit, stall_every, stall_ms,
//	                backlog, policy, dist, lock_ms, coherency_us, e.g. {"limit": 10}, {"workers": 8} or
//	                {"policy": "aimd", "limit": 0}; 200 with the new config (as GET), or 400 with
//	                {"error": "...one line...", "errors": {"SPIN_MS": "abc is not allowed: want 0 to 1000"}}
//	                (cpus and accept cannot change while the lab runs, nor workers with
//	                ACCEPT=workers: see Changing WORKERS)
//	GET  /stats     the current window (Stats)
//	POST /reset     close the window, returning it (Stats), and begin a new one
//	GET  /metrics   Prometheus text format, cumulative since start (lab_*,
//	                lab_class_{accepted,refused,dropped,done}_total{class} by
//	                X-Criticality, the policy's admit_* as package admit
//	                describes them, and the Go runtime and process collectors)
//
// Changing WORKERS. With ACCEPT=door, WORKERS changes at once, as an
// autoscaler's new capacity lands: more workers start and each takes the
// oldest queued connection then and there (asking the policy first, as a
// worker taking from the queue always does: sojourn may drop it), or is
// free for the door to hand the next caller; with fewer, free workers stop
// at once and busy ones finish the request they hold, answer it, and
// stop, so no request is abandoned (in_service may exceed workers until
// they have). A rise before they have stopped keeps them instead of
// starting new ones. The queue policy's bound follows (policy_limit is
// the new WORKERS + LIMIT); what an adaptive policy learned is kept (it
// does not count workers). GET /config, GET /stats (workers) and the
// lab_workers gauge report the count in force, and a POST /reset keeps
// it, as it keeps every knob (a sweep sets its changed knobs back itself,
// package loadrun). With ACCEPT=workers WORKERS stays as the lab started:
// a free worker waits in the kernel's accept queue itself and cannot be
// stopped there without taking one more caller, so a change is refused
// (400, naming WORKERS and what is allowed). CPUS never changes while the
// lab runs: the process is pinned to its first CPUS processors and its
// GOMAXPROCS set when it starts (ApplySandbox), and a load generator
// keeps off the processors it read then (GET /config's processors);
// taking more would put the lab on the generator's processors mid-run.
//
// The changes (POST /config, POST /reset) are for programs on this
// machine, not for web pages, which could otherwise retune a learner's lab
// on its default port from any site: one from a page of another site (an
// Origin naming another host, or Sec-Fetch-Site: cross-site) is refused
// with 403, one without Content-Type: application/json with 415, and the
// body of POST /config must be one JSON object whose values are JSON whole
// numbers (policy's and dist's JSON strings), each knob once, and nothing after it (a
// string such as "5", a fraction, a knob twice, a second object or
// trailing text: 400; a body over 64 KiB: 413). Every refusal is
// {"error": "..."} and changes nothing.
//
// Every control request, reads too, must name the lab by an IP address,
// localhost (or a name under .localhost) or the host of --control
// (Server.AllowControlHost) in its Host header; any other name gets 403.
// A page at a name its owner then points at this machine (DNS rebinding)
// would otherwise be of the control API's own origin, which the
// cross-site checks let through.
//
// Stats (GET /stats) has these fields, counted since the last reset:
//
//	since         when the window began (RFC 3339)
//	workers       WORKERS in force now
//	accepted      connections taken in: admitted, handed or queued (including carried), or bad
//	refused       connections answered 503: refused by the door, or dropped
//	dropped       connections admitted, then dropped from the queue (sojourn)
//	policy_limit  the policy's bound on connections inside now, 0 = none
//	done          requests served to completion, whether or not the caller listened
//	queued        connections waiting now for a worker (every worker taken)
//	queued_max    most waiting at once
//	in_service    connections assigned to a worker now (started on or not); more
//	              than workers while workers beyond a lowered WORKERS finish theirs
//	reading       connections accepted whose request is being read now: in no other count yet
//	bad           accepted connections that never sent a complete request
//	bad_by        {"timeout","gone","garbage"} breakdown of bad
//	carried       connections queued or in service when the window began
//	busy_ms       worker-time spent holding connections (ms): serving, and with ACCEPT=workers reading
//	classes       {"critical","default","sheddable"}, each {"accepted","refused","dropped","done","inside"}:
//	              the counts above by X-Criticality; inside is queued + in service now
//	spin_cpu_ms   processor time the spins measured (ms)
//	process_cpu_ms processor time (user+system) of the whole lab process (ms)
//	queue_wait_ms Summary of queue waits of served requests
//	service_ms    Summary of service times of served requests
//	backlogged    connections waiting now in the kernel's accept queue, accepted by nobody yet
//	backlogged_max most an accept found waiting there in the window (read just before it accepts)
//	backlog       the most the kernel's accept queue holds (BACKLOG as applied)
//
// A Summary is {"n","mean","p50","p99","max","scv"} in milliseconds
// (scv, variance ÷ mean², has no unit), over the n retained samples (at
// most MaxSamples), percentiles nearest-rank. At every
// instant accepted = done + queued + in_service + bad + dropped
// (Stats.Unaccounted is 0), and for each class accepted = done + dropped +
// inside, the classes' accepted adding up to accepted less bad (a caller
// that sent no complete request has no class); connections still queued
// or in service at a reset are carried into the new window's accepted
// (and their class's) so this holds within every window. The kernel's queue is outside accepted: those callers
// have not been accepted yet. The three backlog fields are -1 where the
// system does not say (off Linux).
//
// # Supervisor
//
// StartChild runs a lab as a child process: the parent opens both listeners
// on 127.0.0.1 with kernel-chosen ports and passes them as file descriptors 3
// (requests) and 4 (control), so there is no port race and no request is lost
// before the child is up. The child (any program calling RunChild, such as
// "lab lab-child" or the server's own binary with that subcommand) applies
// ApplySandbox, prints one line beginning "lab: child ready" on stdout and
// serves. It runs in its own
// process group with Pdeathsig SIGKILL, is killed when the context ends, and
// is always waited for; an unexpected exit is reported by Child.Err (a
// *childproc.ExitError) with the child's last stderr lines.
//
// ApplySandbox pins every thread of the lab to its first CPUS processors,
// sets GOMAXPROCS to CPUS + 1 (GoMaxProcs: CPUS for the spins, one more so
// that the door, the workers' reads and writes and the control API never
// wait behind a spin in Go's run queue; the kernel shares the CPUS
// processors among them) and sets MemoryLimit; every thread keeps the
// normal scheduling policy and priority. The ready line says what was
// done.
//
// # Keeping the generator off the lab
//
// A lab child pins itself to the first CPUS processors it may use;
// LabCPUs(cfg) says which processors a child started now with cfg takes,
// and GET /config reports the processors a running lab uses. Keeping the
// load generator off them is the generator's business (package affinity:
// a run's load child, package measure, and cmd/load pin themselves away;
// a server that runs sweeps keeps its generators' processors free of its
// own work, affinity.KeepFree, and its lab children take theirs from what
// it keeps). On
// systems without processor affinity LabCPUs returns an error saying so,
// ApplySandbox records it in the sandbox line, and CPUS bounds only the
// spins and GOMAXPROCS.
//
// A program can be its own lab child: call ChildMain(envVar) first in main
// (or in TestMain, so tests start real children without building a binary)
// and start children with SelfCommand(envVar). cmd/lab and cmd/server
// instead take a hidden "lab-child" subcommand: ChildCommand{Path:
// os.Executable(), Args: []string{"lab-child"}}.
package labsvc
