// Package loadrun drives load at a service and tells the truth about what
// happened: arrival schedules, open- and closed-loop drivers, one raw record
// per request, window statistics folded incrementally, and sweeps that
// stream events. The library never prints; cmd/load and the web server
// format what it streams.
//
// # Schedules
//
// Schedule(kind, rate, seconds, seed) returns the intended send offsets of
// one window. Poisson draws independent exponential gaps with mean 1/rate
// and accumulates them in seconds while below the window's length; Uniform
// spaces arrivals 1/rate apart from a random phase in the first gap. Each
// time is rounded to the nanosecond. The same arguments always give the
// same schedule.
//
// Two random sources draw them (Sweep.RNG, cmd/load --rng). PCG, the
// default, is math/rand/v2's PCG seeded with (seed, "loadrun"), and a
// sweep's window at rate r uses WindowSeed(seed, r, k) for the k-th
// earlier window at r in the sweep, so a whole sweep replays from one
// seed, a rate repeated in one sweep draws afresh, and two sweeps with the
// same seed send the same arrivals at the first window of a rate wherever
// it stands in their lists (what the lessons' "the same arrivals" rests
// on). Python is CPython's random module (PyRandom): MT19937 seeded as
// random.seed(seed) seeds it, gaps from random.expovariate(rate) =
// -log(1.0 - random()) / rate, the uniform phase from random() × gap, and
// every window re-seeded with the seed itself, as a CPython script that
// calls random.seed(seed) before each rate does; its arrivals are then
// those of the script, to the nanosecond. (Our log is the float64 nearest
// the true value; the C library's log, which CPython calls, differs from
// it by one step in about 0.1% of draws on glibc, far too little to move
// an arrival by a nanosecond: the tests check whole schedules against
// python3's.)
//
// An arrival trace (Sweep.Arrivals, read by ReadArrivals: seconds since
// the window's start, one a line, in increasing order) replaces the
// schedule: one open-loop window with exactly those intended send times.
//
// # Requests
//
// Every request is a fresh TCP connection carrying one hand-written
//
//	GET <path> HTTP/1.1\r\nHost: <host>\r\nUser-Agent: capacitylab-load\r\nConnection: close\r\n\r\n
//
// net/http's Transport is not used on purpose: it pools and may retry,
// hides which phase failed, and its errors cannot be told apart reliably; the
// lab's door counts connections, so one connection per request must be
// exactly what happens. The caller's timeout (DefaultTimeout, 2 s) runs from
// the actual send and covers connect, write and read together.
//
// Sending. An open-loop window sends from the goroutine that runs it
// (Open.Run), in order: it sleeps to each arrival's intended time, then,
// when the target is an IP address (on Linux), takes the send time
// (Record.Sent), creates the socket and issues a non-blocking connect(2),
// and tries at once to write the request without waiting (on loopback
// the handshake is done by the time connect returns, so the request
// leaves with the connection attempt); then it hands the request to a
// goroutine of its own that waits for the connection, writes whatever is
// left and reads the reply. So Sent is when the request really left, and
// a goroutine that is slow to be scheduled delays reading the answer (and
// is counted in its latency), not the send, and does not hold a worker of
// the service waiting for the request's bytes. A target given by host
// name is resolved and dialled with net.Dialer on that goroutine, and
// Sent is then taken there, just before the lookup.
//
// Keeping time. The sending goroutine sleeps in nanosleep(2)
// (preciseSleep, in steps of at most 20 ms so that a cancel is seen), not
// on Go's timers, which wake up to a millisecond late on Linux. It is
// plain Go at the process's normal scheduling priority; a run's load
// child keeps it off the lab's processors by placement (package
// affinity), never by priority. Whatever delays it is measured, not
// hidden: every send is timed from its intended time (Record.Lag, the
// send lag), a row reports the send lag's p99 and the sends later than
// LateAfter (late), and an arrival still due when MaxInFlight requests
// are outstanding is counted not sent. The floor under the send lag is
// how late this machine wakes a sleeping thread at all
// (BenchmarkSleepFloor; the fidelity benchmarks pair each window with a
// floor window of the same schedule).
//
// Replies. The reply is read by a small HTTP/1.x reader of its own, through
// a pooled 8 KiB buffer, allocation-free: the status line ("HTTP/1.x NNN"
// and an optional reason), the headers ("Name: value"; a head longer than
// 8 KiB, a header line without a colon or with a blank in its name, a folded
// line, a bad or conflicting Content-Length or a transfer coding other than
// chunked make the reply malformed), then the body to its end, never more
// than 1 MiB of it: Content-Length bytes, chunked, or until the connection
// closes; 1xx, 204 and 304 replies have none. It keeps the status and the
// first X-Queue-Wait-Ms and X-Service-Ms headers (a value that is not a
// finite number ≥ 0 counts as absent). A reply that stops short is reason
// eof; anything else that is not HTTP/1.x is malformed.
//
// Records, their outcomes and CSV columns, and rows and their columns are
// package result's (see its doc).
//
// Latency is measured from the intended send time in open loop (so the
// generator's own lateness is charged to the service, as a real caller would
// feel it) and from the actual send in closed loop. It ends when the reply's
// last bytes reached the generator's socket: on Linux, for an IP target, the
// socket is opened with SO_TIMESTAMPNS and read with recvmsg(2), and a
// complete reply's Record.End is the kernel's receive stamp of its last
// bytes (wall-clock time, used only if it falls within the request's own
// span), so a generator goroutine that is slow to get a processor (the
// server's other work on the same core, a class's watchers) does not
// lengthen the latencies it reports. Elsewhere, and for replies that did not
// complete, End is when the reader saw the end.
//
// The same stamp decides a give-up: a reply whose last bytes arrived by the
// caller's timeout is ok however late its goroutine read it, and one that
// arrived after it is gaveup (read_timeout). Bytes already in the socket are
// read without Go's poller, which a request joins only when it must wait,
// so a generator that falls behind its replies gets cheaper per request
// and catches up, instead of turning answered requests into give-ups
// (docs/BENCHMARKS.md, "Issue 16: replies read late").
//
// # Retries and classes
//
// An open-loop window may have a retrying client (Sweep.Retry, package
// retry). A request's first attempt is sent at its intended time as any
// arrival is (the breaker, when the client has one, may stop it: not_sent,
// reason breaker_open). When an attempt ends, the goroutine that completed
// it asks the client whether to retry and when (its backoff, at least the
// reply's Retry-After when the client honours it), sleeps to that time,
// asks the breaker, and sends the retry as a new attempt: a record of its
// own, Intended the time it was due (so its send lag is measured as any
// send's), Seq numbered after the window's first attempts in the order
// retries are made, Request its first attempt's Seq, Attempt its number.
// The request ends with its last attempt; rows and samples count it once,
// by its last attempt's outcome, with its latency from its first attempt's
// intended time (result.Logical), and count every attempt in attempts.
// The in-flight cap counts attempts outstanding: a retry due while it is
// full is not made, and its request ends with the attempt before it. The
// client is shared by the window's goroutines under the window's lock;
// its jitter is drawn from a source seeded with the window's seed.
//
// Arrivals may carry classes (Sweep.Critical, Sweep.Sheddable): each
// arrival's class is drawn from the window's seed (WindowClasses) and its
// request, every attempt of it, sent with X-Criticality: critical,
// default or sheddable. Without shares no header is sent.
//
// # Fan-out and hedged requests
//
// An open-loop window may fan each arrival out (Sweep.Fanout, k from 2 to
// MaxFanout): the arrival is a logical request of k sub-requests to the
// same target (or split across several labs, Sweep.Split: sub-request j
// to lab j mod n, the rows' lab columns the labs' merged), all sent at its intended time from the sending goroutine
// one after another (each begun as any arrival is, its own Sent, so the
// later ones of a large k leave a few microseconds each after the first),
// each completed on a goroutine of its own. Every sub-request is a record:
// sub-request 0 numbered with the arrivals, sub-request j of arrival i
// numbered n + i(k−1) + j − 1 after the n arrivals, with Sub = j and
// Request = i. The request ends when its last sub-request ends: its
// latency runs from its intended time to the last answer, and it is ok
// only when every sub-request is, otherwise it takes the worst outcome
// among them (gaveup, then error, then refused: result.FoldRequest). An
// arrival is sent whole or not at all: the in-flight cap (by default one
// timeout's arrivals times k, within MaxMaxInFlight) counts sub-requests
// and copies, and an arrival that would take it past the cap is not sent,
// its k records not_sent.
//
// A hedging client (Sweep.Hedge, package hedge) sends a copy of a
// (sub-)request that has not answered within its delay (a fixed time, or
// a percentile of the latencies of recent copies, none before the
// warmup): at most the spec's Max copies, copy n due n delays after the
// request's send, each while no copy has answered ok and one is still out,
// sent on a Go timer from the request's goroutine (so its send lag, from
// when it was due, includes the timer's lateness, up to a millisecond). A
// copy is a record of its own, Copy n, Intended when it was due, numbered
// after every sub-request in the order copies are sent. The first copy to
// answer ok wins; the others are cancelled at once, their connections
// closed and their records cancelled. The lab serves every request it has
// read even when its caller has gone (package labsvc), so a cancelled
// copy's work is done anyway: a hedge's cost at the lab is every copy
// sent. A copy that fails (refused, gave up, error) leaves the others to
// go on; a request whose copies all failed ends as its last did
// (result.FoldSub). Each sub-request of a fanned-out request is hedged on
// its own.
//
// Rows count logical requests, with the sub-requests sent (sub_requests)
// and their p50 and p99, the share of ok requests slower than the
// sub-requests' p99 (over_sub_p99), every sub-request and copy sent in
// attempts, amplification as attempts ÷ sub-requests, and the copies in
// hedges; samples count a window's requests the same way, every record
// sent in attempts. Neither goes with a retrying client (Validate refuses
// the combination) or a closed loop.
//
// # Accounting
//
// arrivals = sent + not_sent + client_busy + breaker_open, and sent = ok + refused +
// gaveup + error + lost with lost = 0, all counting logical requests (a
// hedge's cancelled copy is never a request's outcome). A window ends only when every sent request has ended, which
// is at most one timeout after its last arrival. Cancelling the context stops
// sending at once: arrivals not yet due become not_sent/canceled and requests
// in flight end as error/canceled, so the books still balance.
//
// # Events
//
// Sweep.Run hands Events to a callback, one call at a time. In JSON:
//
//	{"kind":"progress","windows":4,"window":0,"rate":40,"seconds":20,
//	 "elapsed_ms":1200.5,"sent":47,"ended":46}
//	{"kind":"knob","windows":4,"window":0,"rate":40,"seconds":20,"elapsed_ms":10001.2,
//	 "change":"10s:WAIT_MS=2000"}
//	{"kind":"sample","windows":4,"window":0,"rate":40,"seconds":20,"elapsed_ms":1000,
//	 "sample":{"window":0,"at_s":0,"seconds":1,"ok":38,"refused":0,"gaveup":0,"errors":0,
//	 "client_busy":0,"not_sent":0,"p50_ms":21.1,"p99_ms":24.7,"in_flight":1,"lab":true,
//	 "queued":0,"in_service":1,"limit":3,"dropped":0}}
//	{"kind":"row","windows":4,"window":0,"rate":40,"seconds":20,"elapsed_ms":20012.3,
//	 "sent":800,"ended":800,"row":{...}}
//	{"kind":"done","windows":4,"window":4,"seconds":20,"error":"..."}
//
// (zero-valued fields are left out, except kind and window). Every field
// but kind, row, change and error is the event's WindowProgress, which a run's log
// (package runner) carries too. progress comes every ProgressEvery (250
// ms, four a second) while a window runs, and once when it ends; closed-loop
// windows carry clients instead of rate. knob comes when the lab has taken
// one of the sweep's knob changes, elapsed_ms saying when (see below).
// sample comes only in a run over time (see Samples). row comes once per window, after
// the lab's counters were read. done comes last; window is then how many
// windows finished, and error is set when the sweep failed or was
// cancelled. Progress is no longer handed over once the context is
// cancelled; row and done always are. A slow callback holds up whichever
// of the window's goroutines called it (its progress ticker, sampler or
// knob changer: a later knob change is made late), and the next window
// waits for its row's call to return.
//
// # Samples
//
// A sweep with SampleEvery (a run over time; package measure samples every
// second) samples each window: at every SampleEvery from the window's
// start a goroutine of its own (never the sending one) reads the lab's
// GET /stats when the sweep has a Control, giving the read at most one
// interval (a slower read is abandoned and that sample says lab false),
// then takes the interval's Sample: the requests that ended in it (an
// arrival never sent: when it was due), p50 and p99 of its ok answers,
// the generator's in flight at its end, and the lab's queued, in service,
// policy limit and dropped as read. Each record is counted where the
// window already folds its statistics (under the same lock, as it
// finishes; no second pass, no allocation per request once the
// interval's latency slice has grown); a record whose end was stamped
// just before a boundary but that finished after that interval's sample
// was taken counts in the next, so every arrival is counted exactly once
// and a window's samples add up to its row. When the window's last
// request has ended a last sample covers what is left (seconds: its
// length), with the lab read once more. Samples go out as sample events,
// elapsed_ms the interval's end, in order and before the window's row,
// and stay with the window (WindowReport.Samples). A driven window
// (package sim) is sampled from its records once it ends
// (SampleRecords): in flight counted from the records, the lab's side
// from what the driver read at each boundary (Window.SampleEvery,
// Result.Lab; package sim reads its simulated lab there) and at the end
// (lab false where it read nothing); its samples go out with its knob
// events in time order.
//
// Rows and raw records are also handed over window by window: Sweep.WindowDone
// is called with each window's WindowReport (its row, every record and the
// row event's WindowProgress) as
// soon as the window ends, before its row event, from the sweep's own
// goroutine. The next window waits for it to return, so a caller that saves
// the records there (the runner does) neither loses a finished window's
// records if the sweep never ends nor competes with a measurement while it
// saves them. Run's Report still holds every window at the end. Package
// measure runs every sweep against a lab this way, and carries the windows
// from a load child to the server over a pipe.
//
// # Drivers
//
// A Sweep with a Driver runs each window through it instead of over the
// network: package sim simulates the lab and the callers and hands back
// the window's records and the lab's counters, and Sweep.Run builds rows,
// notes, events and the report from them exactly as for a real run. It
// neither drains, resets nor pauses between windows (each simulated window
// starts from an empty lab), and the sweep's knob changes are the driver's
// to make (see Knob changes).
//
// # The lab's control API
//
// Control reads GET /stats (accepted, refused, done, queued, queued_max,
// backlogged_max, in_service, bad), calls POST /reset, reads GET /config
// and changes knobs with POST /config. Before each
// window a sweep waits Pause after the previous window's row (0 by
// default; package measure pauses so a watching class's page updates fall
// between windows), polls /stats until queued + in_service = 0 (at most
// DrainWait, DefaultDrainWait: 10 s), then resets. A call rides out a lab
// that answers slowly, as one on a busy machine does: each attempt may take
// 12 s, and one that got no answer (a timeout, a dropped connection, a 5xx)
// is made again after 250 ms, then 500 ms, three attempts at most within
// ControlBudget (25 s); a refusal is an answer.
//
// # Knob changes
//
// A sweep's Changes (KnobChange, written "30s:WAIT_MS=2000") change the
// lab's knobs at their times into every window, through POST /config: a
// bad release, a policy switched mid-run, capacity that lands mid-run as
// an autoscaler's would ("10s:WORKERS=8"). Before the first window the
// sweep reads the changed knobs' values (GET /config); in each window a
// goroutine beside the generator waits for each change's time, counted
// from just before the window's own clock starts (microseconds apart),
// posts it, and sends a knob event once the lab has taken it, with
// elapsed_ms when it answered; as the window ends (after its stats are
// read) the knobs are set back, so every window starts from the same lab
// (and a cancelled sweep, too, leaves the lab as it found it).
// A change whose time comes after the window's last request ended is not
// made, and the row's note says so. A change the lab refuses, or a
// control API that fails, ends the sweep after that window, as any
// failure of the control API does. Which knobs may change, and to what,
// is the lab's to say (labsvc.Config.Set: every knob but CPUS and ACCEPT,
// WORKERS only with ACCEPT=door); a change's time must fall inside the
// window (ValidatePlan). Set back, a WORKERS that rose stops its extra
// workers once they have answered what they hold, before the next
// window's drain finds the lab empty.
//
// With a Driver (a simulation) the changes go to the driver with each
// window (Window.Changes), which makes them at their times itself; as
// the window ends, Run sends a knob event for each change the driver made
// (Result.Changed), elapsed_ms its time exactly, before the row, and
// notes those it did not make, as for a real run. Nothing is set back:
// each driven window starts from the driver's own knobs.
package loadrun
