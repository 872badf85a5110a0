// Package measure is the one measurement path: a lab preset in; its rows,
// raw records and events out. A learner's run (package runner), a
// lesson's recorded table (package recorder) and cmd/load against a lab in
// a terminal all measure through it, so they measure under the same
// conditions.
//
// # Presets
//
// A Preset is the lab's knobs (labsvc.Config) and the sweep against it:
// rates (open loop) or client counts (closed loop), the window's seconds,
// the seed, the random source and the caller's timeout; and optionally
// an open-loop client's fixed pool of workers (MaxInFlight, JSON
// max_inflight: arrivals finding them all busy count in client_busy) and
// knob changes at given times into every window (At, JSON at:
// ["30s:WAIT_MS=2000"], made through the lab's control API; see
// loadrun's Knob changes), and a run over time (OverTime, JSON
// over_time: every window sampled every SampleEvery, one second, the
// lab read at each sample's end; see loadrun's Samples), a retrying
// client (Retry, JSON retry: package retry's spec, e.g.
// "retries=3,backoff=jitter,budget=0.1") and the shares of arrivals sent
// with X-Criticality critical and sheddable (Critical and Sheddable, JSON
// critical and sheddable), all of them open loop. Validate checks each change against the
// preset's knobs as they stand when it is made (labsvc.Config.CheckChanges, which
// cmd/load uses against a running lab's knobs too). Preset.Sweep is
// the one mapping from a preset to a loadrun.Sweep.
//
// # A measurement
//
// Measure runs a preset as two children of the calling process, each this
// program started again (package childproc):
//
//   - the lab child (labsvc.StartChild, "lab-child"), which pins itself to
//     its first CPUS processors and serves;
//   - the load child ("load-child", RunLoadChild), the generator, which
//     pins every one of its threads, once and for good, to the processors
//     its start line names (affinity.PinTo, walking /proc/self/task until
//     no new thread appears), sets GOMAXPROCS to the runtime's default
//     for those processors (runtime.SetDefaultGOMAXPROCS: the runtime read
//     them before the pinning), and runs the sweep at the lab.
//
// The load child's processors are Config.Generator minus the lab's: a
// server that runs sweeps keeps processors free of its own work for its
// generators (affinity.KeepFree, the last processor on a single server),
// so its pages and the fan-out of a run's rows to a watching class run on
// the others, beside the lab, never where the generator times its sends.
// Without Config.Generator (the recorder, the tests) the load child takes
// every processor the calling process may use but the lab's. Both children
// run at the normal scheduling policy and priority: the generator is kept
// apart by placement, never by priority. Whatever the sharing still costs
// the generator is measured, not hidden: each send is timed from its
// intended time (the row's send_lag_p99_ms and late), and the kernel's
// stamp on each reply as it arrives keeps a reader's wait for a processor
// out of the latencies (see loadrun). When the lab has every processor
// the load child could use (a 1-core host) or the system has no processor
// affinity, the load child is not pinned and its hello says why.
//
// Generate is the generator's side on its own: a sweep against a lab that
// is already serving, with the settings every measurement uses (WindowPause
// between windows, the lab drained before each, loadrun.DefaultDrainWait),
// the windows handed over as they end. The load child runs it, and so does
// cmd/load in a terminal (which pins its own process away from the lab:
// there it is the generator).
//
// # The load child's pipe
//
// Parent and load child speak JSON, one object a line: the parent on the
// child's stdin, the child on its stdout (its stderr is free text, kept
// for its last words). Version 5 (ProtocolVersion; 2 added the knob line,
// 3 the sample line, 4 dropped the hello's priority fields, nice,
// rt_priority and priority, 5 added the start line's generator_cpus):
//
// Parent to child. First the start line, then one next line after each
// window the parent has taken, or a stop line:
//
//	{"kind":"start","version":5,"target":"http://127.0.0.1:41234","control":"http://127.0.0.1:41235",
//	 "lab_cpus":[0],"generator_cpus":[1],"drain_wait_ms":10000,"preset":{...Preset...}}
//	{"kind":"next","window":0}
//	{"kind":"stop"}
//
// stop (or the end of stdin) ends the measurement at once: the window in
// progress is cut short, sent, and the child says done. The child refuses
// a start line of another version (exit status 1, the reason on stderr).
//
// Child to parent. First hello, then for each window: progress lines while
// it runs (every loadrun.ProgressEvery), a knob line for each of the
// preset's knob changes (At) as the lab takes it, in a run over time
// (OverTime) a sample line at the end of each second and a last one when
// its last request has ended, its raw records in lines of at
// most 1,000, in seq order, then its row, after which the child waits for
// next (or stop) before the window after it begins; last, done:
//
//	{"kind":"hello","version":5,"pid":5678,"cpus":[1],"gomaxprocs":1,
//	 "pinning":"generator pinned to processor(s) [1], away from the lab's [0]"}
//	{"kind":"progress","windows":2,"window":0,"rate":40,"seconds":1,"elapsed_ms":250.3,"sent":10,"ended":9}
//	{"kind":"knob","windows":2,"window":0,"rate":40,"seconds":1,"elapsed_ms":500.2,"change":"500ms:WAIT_MS=40"}
//	{"kind":"sample","windows":2,"window":0,"rate":40,"seconds":1,"elapsed_ms":1000,
//	 "sample":{"window":0,"at_s":0,"seconds":1,"ok":38,"refused":0,"gaveup":0,"errors":0,
//	 "client_busy":0,"not_sent":0,"p50_ms":21.1,"p99_ms":24.7,"in_flight":1,"lab":true,
//	 "queued":0,"in_service":1,"limit":3,"dropped":0}}
//	{"kind":"records","window":0,"records":[{"seq":0,"intended_ns":12873,"sent_ns":13101,
//	 "end_ns":20513004,"outcome":"ok","status":200,"queue_wait_ms":0.01,"service_ms":20.2},...]}
//	{"kind":"row","windows":2,"window":0,"rate":40,"seconds":1,"elapsed_ms":1021.7,"sent":41,"ended":41,"row":{...result.Row...}}
//	{"kind":"row",...,"cut":true,"row":{...}}
//	{"kind":"done","windows":2,"window":0,"seconds":1,"error":"..."}
//
// The fields besides kind, records, row, change, sample, cut and error are
// result.WindowProgress; a sample is a result.Sample (elapsed_ms is its
// end); a record's times are nanoseconds from its
// window's start and its fields those of result.Record (outcome by name:
// ok, refused, gaveup, error, not_sent). cut marks a window cut short by a
// stop. done's error says why the sweep ended early (the lab's control API
// failed, or the parent said stop); the child then exits with status 0.
//
// The parent holds the child to it: the first line must be a hello of its
// version; progress, knob, sample and records belong to the window in
// progress; samples come only in a run over time, each beginning where the
// one before it ended (the first at 0); records come in seq order from 0;
// a row's arrivals must equal the records that came for it, and in a run
// over time its counts (ok, refused, gaveup, error, client_busy, not_sent)
// the sums of its samples unless the window was cut short, so every request the generator sent is accounted for
// before its window is handed over. A line that breaks any of this, or is
// not JSON, ends the measurement with a *ProtocolError naming the line;
// windows handed over before it stay handed over. A child that exits
// without its done line (it crashed, or was killed) is reported as a
// *childproc.ExitError with its exit status and last stderr lines, as a lab
// child that dies is; so is one that says nothing for longer than the
// drain wait and 60 s (it is hung: it is killed). The lab child's death stops the load child (the
// window in progress is cut short and handed over, Cut saying why) and is
// reported in preference to what follows from it.
package measure
