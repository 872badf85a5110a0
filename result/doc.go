// Package result holds what the load generator (package loadrun) and the
// measurement path (package measure) produce and what everything after
// them reads: one Record per arrival, a window's Row folded from its
// records (Metrics), a run over time's Samples, the lab's counters
// (LabStats), the knob changes made into a window (KnobChange), the events
// a sweep streams (Event) and its Report, and a Driver's window (Window,
// Result). It imports only the standard library, so the store, the charts
// and the simulator (packages store, chart and sim) read results without
// compiling the generator; the flow is loadrun and sim → result → store,
// chart and the web pages.
//
// The caps on one window (MaxRate, MaxSeconds, MaxArrivals, MaxClients,
// DefaultMaxInFlight, MaxMaxInFlight) and the caller's timeout
// (DefaultTimeout, MaxTimeout, CheckTimeout) are here too, because a
// simulated window (package sim) keeps to them as a sent one does.
//
// # Records
//
// Every scheduled arrival gets exactly one Record. Times are offsets from the
// window's start. Outcomes:
//
//	ok        the reply was 200
//	refused   the reply was 503
//	gaveup    no complete reply within the timeout; reason dial_timeout,
//	          write_timeout or read_timeout says in which phase
//	error     anything else; reason conn_refused, reset, eof (closed before a
//	          complete reply), malformed (not HTTP/1.x), status_NNN (another
//	          status), emfile (out of file descriptors), eaddrnotavail (out of
//	          ephemeral ports), canceled (the run was cancelled mid-request)
//	          or other
//	not_sent  due but not sent: reason inflight_cap (loadrun's MaxInFlight requests were
//	          outstanding: by default as many as arrive in one caller timeout,
//	          at least 2,048 and at most 16,384), client_busy (a client with a
//	          fixed pool of loadrun's ClientWorkers workers had every one busy) or
//	          canceled (the run was cancelled before it was due)
//	cancelled a hedged request's copy the client stopped waiting for (it
//	          closed the connection) because another copy of the request
//	          answered ok first (package hedge); only ever a copy's
//	          outcome, never a request's
//
// WriteCSV writes records with a header line and these columns:
//
//	window         window index in the sweep, from 0
//	seq            arrival number within the window, from 0
//	intended_ms    when the schedule said to send, ms after the window start
//	sent_ms        when the generator started connecting (empty for not_sent)
//	end_ms         when the reply was complete or the caller stopped (empty for not_sent)
//	latency_ms     end_ms − intended_ms (open loop); end_ms − sent_ms (closed loop,
//	               where intended = sent)
//	outcome        ok, refused, gaveup, error or not_sent
//	status         HTTP status, empty when there was no reply
//	reason         see above; empty for ok and refused
//	queue_wait_ms  the lab's X-Queue-Wait-Ms header, empty when absent
//	service_ms     the lab's X-Service-Ms header, empty when absent
//	request        the seq of the request's first attempt (= seq for a first attempt)
//	attempt        0 for a first attempt, n for the n-th retry (package retry)
//	class          the request's criticality: critical, default or sheddable
//	sub            the sub-request's index, 0 to k−1, in a window that fans each
//	               request out to k (loadrun's Open.Fanout); 0 otherwise
//	copy           0 for a request, n for a hedging client's n-th copy of it
//	               (package hedge)
//
// A retrying client (package retry) makes a record of every attempt: a
// retry is a record of its own, with its own intended time (when its
// backoff ended), seq numbered after the window's first attempts. Rows
// and samples count logical requests (Logical): a request's outcome is
// its last attempt's and its latency runs from its first attempt's
// intended time to its last attempt's end.
//
// A window that fans out to k makes k records of each arrival, its
// sub-requests, sent together at its intended time: sub-request 0 is
// numbered with the arrivals (seq = the arrival's number), sub-request j
// of arrival i after them (seq n + i(k−1) + j − 1 for n arrivals), each
// naming its request. A hedging client's copy is a record of its own,
// its intended time when it was due, numbered after every sub-request in
// the order copies are sent. Fold folds them: a sub-request (or a request
// that did not fan out) takes its first copy to end ok, or when none
// did its last; a logical request ends with its last sub-request (its
// latency from its intended time to the last answer), ok only when every
// sub-request was, otherwise the worst outcome of its sub-requests
// (gaveup, then error, then refused).
//
// Times are milliseconds with three decimals (microseconds).
//
// # Rows
//
// A window's Row has the lessons' columns, then the generator's honesty
// columns, then extras. JSON field names are these names.
//
//	offered          offered rate, arrivals a second (closed loop: sent ÷ seconds;
//	                 an arrival trace: its arrivals ÷ seconds)
//	sent             requests that left (arrivals − not_sent)
//	ok refused gaveup error   outcome counts of sent requests
//	ok_per_sec       ok ÷ max(window seconds, end of the last ok answer): the
//	                 rate answers were delivered. The usual ok ÷ window seconds
//	                 credits a saturated service with answers delivered up to a
//	                 timeout after the window closed and so overstates its
//	                 ceiling; below saturation the two differ by one service time.
//	p50_ms p99_ms    nearest-rank percentiles of ok latencies, over n
//	done             the lab's done counter after every request ended (served to
//	                 completion, whether or not the caller still listened); -1
//	                 without a lab control API
//	lost             sent − ok − refused − gaveup − error; always 0 unless the
//	                 generator has a bug (a sent record that never got an outcome);
//	                 a hedge's cancelled copy is never a request's outcome
//	queued           the lab's queued_max for the window: the most callers waiting at
//	                 once in the lab's own queue; -1 without control
//	backlogged       the lab's backlogged_max for the window: the most callers found
//	                 waiting in the kernel's accept queue, not yet accepted by the lab
//	                 (with ACCEPT=workers the only queue there is); -1 without control,
//	                 or where the lab cannot read it
//	not_sent         arrivals that were due but not sent (the generator's
//	                 in-flight cap, or a cancelled run; not breaker_open's)
//	client_busy      arrivals that found every one of the client's workers busy
//	                 (loadrun's Sweep.ClientWorkers), so were not sent: the client's own
//	                 limit, as a real client with a fixed pool has; their records
//	                 are not_sent with reason client_busy
//	late             sends that left more than 1 ms (LateAfter) after intended
//	send_lag_p99_ms  nearest-rank p99 of sent − intended over sent requests
//	mean_ms p95_ms max_ms   of ok latencies
//	n                how many ok latencies the percentiles are over (= ok)
//	attempts         attempts sent: every logical request's attempts, sub-requests
//	                 and copies (= sent without retries, fan-out or hedges)
//	attempts_per_sec attempts ÷ window seconds: the load the service was asked for
//	amplification    attempts ÷ sub_requests (= sent without fan-out): how many
//	                 times the client's retries or copies multiplied its load
//	breaker_open     arrivals not sent because the client's circuit breaker was
//	                 open (their records not_sent, reason breaker_open)
//	by_class         per class (critical, default, sheddable), in a window whose
//	                 requests carried classes: arrivals, ok, refused, gaveup,
//	                 error, not_sent, ok_share (ok ÷ arrivals), p99_ms
//	sub_requests     sub-requests sent (requests fanned out to k each send k;
//	                 = sent without fan-out), each counted once whatever its copies
//	sub_p50_ms sub_p99_ms
//	                 nearest-rank percentiles of the ok sub-requests' latencies
//	                 (each from its request's intended time to its first ok
//	                 copy's answer); = p50_ms and p99_ms without fan-out
//	over_sub_p99     the share of ok requests slower than sub_p99_ms: with fan-out
//	                 k and sub-requests independent, about 1 − 0.99^k
//	hedges           copies a hedging client sent (package hedge): counted in
//	                 attempts too; those it cancelled were still served by the lab
//	window arrivals seconds send_lag_max_ms clients lab_service_ms lab_cpu_ms note
//	                 extras: index, scheduled arrivals (= sent + not_sent),
//	                 window length, the worst send lag, closed-loop clients,
//	                 the lab's mean service time and the processor time its
//	                 process used in the window (both ms, -1 without control;
//	                 they show whether the lab itself was slowed, e.g. by
//	                 neighbours on its core), and notes such as a lab that had
//	                 not drained or a cancelled window
//	lab_wait_ms lab_service_scv
//	                 the lab's mean wait in its queue over the requests it
//	                 served in the window (its X-Queue-Wait-Ms), and the
//	                 squared coefficient of variation of their service times
//	                 (variance ÷ mean², the cs² of queueing formulas; near 0
//	                 for a lab with DIST=constant); -1 without control
package result
