// Package model holds the capacity formulas behind the lessons' model
// widgets, once: Little's law, the admission limit, the two ceilings, the
// M/M/c queue curve, an in-flight quota through a bad release, an AIMD
// limit against a capacity step, retries against a failing service,
// capacity that lands late, the wait under variability (Pollaczek–Khinchine
// and Kingman), the slowest of a fan-out and the Universal Scalability Law
// (with FitUSL, its fit to measured points), with goal checking, and the
// lab's models beside a run (with M/M/c/K behind a client of fixed
// workers). The web server calls Compute for pages and for GET
// /api/models/{kind}; static/js/model.js (with modellimits.js and
// modeltail.js) is the same formulas for the page to run as the controls
// move, and both are held to the shared vectors in testdata/vectors.json.
//
// Every model is a hypothetical, not a forecast: it says what follows from
// its assumptions. The assumptions and omissions below are the generic ones;
// a lesson's model block lists its own (lessons.Model.Assumes, Ignores) and
// may add to these.
//
// # Units
//
// Rates are requests per second; times are milliseconds; counts are plain.
// Parameters, labels, units, ranges and defaults are in Specs (spec.go);
// Validate and ResolveSolve check input, and Compute fills missing values
// with defaults.
//
// # Little's law (littles-law)
//
//	L = λ·W / 1000      (λ per second, W in ms, L requests)
//
// solve names the implied quantity: inflight (default), arrivals
// (λ = 1000·L / W) or latency_ms (W = 1000·L / λ). Dividing by a zero W or λ
// leaves the implied value undefined: Defined is false, the value is null in
// JSON and Message says why (0 ms with 0 in flight: any rate fits; 0 ms with
// some in flight: no rate does). Assumes: a long-run average over a stable
// system, where what arrives also leaves. Ignores: distribution and order
// (it says nothing about percentiles), what happens inside.
//
// # Admission limit (admission-limit)
//
//	limit = workers × (budget − service) ÷ service
//
// A request admitted behind `limit` others waits limit × service ÷ workers,
// then is served; the formula is the largest queue whose last request still
// finishes within the budget. Rounding rule (RoundLimit): round down, so the
// last request admitted finishes within the budget (1 worker, 230 ms, 21 ms:
// 9.952 → 9, the last one finishes at 210 ms; rounding up to 10 would finish
// it at 231 ms, over), and at least 1, because LIMIT=0 means "no limit" to
// the lab (labsvc.Config); only then can WorstMS pass the budget, and OverMS
// says by how much. The lessons round the same way. A budget ≤ service
// leaves nothing to wait in: Feasible is false, the limit is null and
// Message says so. Assumes: every service takes exactly the mean, workers
// take the queue in order. Ignores: variation in service time (real p99s
// are longer), time spent before the queue, retries.
//
// # Two ceilings (two-ceilings)
//
//	worker ceiling    = workers × 1000 ÷ (spin + wait)   per second
//	processor ceiling = cpus × 1000 ÷ spin                per second
//	speedup cap       = cpus × (spin + wait) ÷ spin       times one worker
//
// Each request holds a worker for spin + wait ms and a processor for spin
// ms; throughput can pass neither ceiling, and the lower binds ("both" when
// they are equal within 1e-9). The serial share spin ÷ (spin + wait) caps
// what adding workers buys: with one CPU, 2 ms of 20 → at most 10 times one
// worker. spin = 0 gives no processor ceiling (+Inf in Go, null in JSON, with
// a message); spin = wait = 0 gives no ceiling at all. Assumes: the lab's
// request shape (spin, then wait), perfect sharing of processors. Ignores:
// scheduling and context-switch overhead, the load generator's own use of
// the machine, queueing delay below the ceiling.
//
// # Queue curve (queue-curve)
//
// M/M/c (M/M/1 when c = 1): Poisson arrivals λ, exponential service with
// mean S ms, c servers, first come first served, unlimited queue.
//
//	a = λ·S / 1000 (offered Erlangs), ρ = a / c, capacity = c × 1000 ÷ S
//	C = Erlang C(c, a), by the Erlang B recursion B_k = a·B_{k−1} ÷ (k + a·B_{k−1}),
//	    then C = B_c ÷ (1 − ρ(1 − B_c))  (finite for c up to 256)
//	θ = c·(1 − ρ) ÷ S per ms,  Wq = C ÷ θ,  W = Wq + S,  Lq = λ·Wq,  L = λ·W
//
// Percentiles are exact for FCFS M/M/c, not approximations: the response
// time is service alone with probability 1 − C, else an Exp(θ) wait plus
// service, so
//
//	P(T > t) = (1 − C)·e^{−t/S} + C·(θ·e^{−t/S} − (1/S)·e^{−θt}) ÷ (θ − 1/S)
//
// (with the θ = 1/S limit, (1 + t/S)·e^{−t/S}, taken through expm1 when
// θ ≈ 1/S). p50 and p99 solve P(T > t) = 0.5 and 0.01 by bisection. For
// M/M/1 this is e^{−(μ−λ)t}, so p99 = ln(100) ÷ (μ − λ).
//
// Separate is the same servers each with a queue of its own, every arrival
// sent to one of them at random: each is an M/M/1 queue offered λ ÷ c at the
// same ρ (a random split of a Poisson stream is Poisson), so a request waits
// with probability ρ, Wq = ρ·S ÷ (1 − ρ), and P(T > t) = e^{−t(1−ρ)/S}
// (p99 = S·ln(100) ÷ (1 − ρ)); its counts inside are summed over the c
// queues. With c = 1 it equals the shared queue; SeparateCurve is it over
// the same grid as the curve, and the quantities separate_prob_wait,
// separate_mean_wait_ms, separate_mean_response_ms and
// separate_p99_response_ms are it at the learner's load. The two differ only
// in where requests wait: in one line any free server takes the next
// request; split, a request can wait behind a busy server while another
// server idles.
//
// ρ ≥ 1 has no steady state: Stable is false, every figure but load and
// utilisation is null, Message says so, and the plot draws no point. The
// curve has 96 points at ρ = 0, 0.01, … 0.95 (CurveSteps, CurveLast); At70
// and At90 mark where ρ passes 0.7 and 0.9; the knee is where throughput ÷
// mean response (Kleinrock's power) peaks, found by golden-section search:
// ρ = 0.5 for M/M/1, higher with more servers. Assumes: exponential service
// and Poisson arrivals, identical servers, nobody gives up. Ignores:
// timeouts and retries, admission limits, service time that varies less
// (the lab's spin is fixed, so the lab queues less than this predicts).
//
// # An in-flight quota through a bad release (quota)
//
// A client sends X requests a second to an origin of c workers whose
// response time is R ms; a release makes it R' ms. A quota on the requests
// inside is sized before the release by Little's law:
//
//	N = X × R ÷ 1000                      requests in flight
//	capacity = c × 1000 ÷ R before, c × 1000 ÷ R' after   per second
//	with the quota:  min(X, N × 1000 ÷ R, c × 1000 ÷ R) before,
//	                 min(X, N × 1000 ÷ R', c × 1000 ÷ R') after
//	refused after = X − (with the quota, after)
//	latency with the quota = R' while all are let in, else N × 1000 ÷ (with the quota, after)
//	without it: served min(X, c × 1000 ÷ R'); the queue grows by g = X − c × 1000 ÷ R'
//	late after = (timeout − R') × (c × 1000 ÷ R') ÷ (1000 × g)  seconds
//
// solve names the implied one of quota (default), arrivals and latency_ms,
// exactly as Little's law (SolveLittlesLaw, with inflight as quota). The
// latency with the quota is Little's law again: N inside served at the rate
// above stay N ÷ rate, which is R' when N ≤ c and N × R' ÷ c when the quota
// lets more in than there are workers (quota_late when that passes the
// timeout). Without the quota, a caller arriving s seconds after the
// release finds about g × s requests queued, each turn of c taking R', so it
// waits g × s ÷ (c ÷ R') seconds; late after is when that wait plus R'
// passes the timeout (0 when R' alone does; no value without a timeout or
// when the queue does not grow and R' is within it). From then on the
// origin works for callers who have gone. The demo (5 a second, 1 s,
// 7 workers, 2 s after, 2.5 s timeout) gives N = 5, 3.5 a second of
// capacity after, 2.5 a second through the quota and late after 7/6 s; a
// tenth of the time (50, 100 ms, 200 ms, 250 ms) gives 5, 35, 25 and
// 7/60 s. Outputs: capacity_before, capacity_after, quota_rate,
// with_quota_before, with_quota_after, refused_after, quota_latency_ms,
// without_quota_after, queue_growth, late_after_s.
//
// The chart (web) is ok answers a second against time, 60 s with the
// release at 20 s (the recorded experiments' timeline), with and without
// the quota, over the origin's capacity, and a second panel with the
// origin's queue. Against time rather than against N, because the lesson
// is the release: the same N = X × R that passes all of X before it holds
// the client to N ÷ R' after it and keeps the origin's queue empty, while
// the line without it runs at capacity until the queue outlasts the
// timeout and then drops to nothing with the origin still busy; a curve
// against N would show the first half only. Assumes: a fluid model (steady
// rates, every request exactly R or R'), the quota sized from R before the
// release and not changed, callers who give up at the timeout and do not
// retry, an origin that works every request it queued (it does not see its
// callers leave) with a queue without limit. Ignores: randomness of the
// arrivals (with Poisson arrivals a full quota turns away more: the
// simulator measured 22 of 25 a second, as Erlang's B formula predicts),
// the client's own workers (10 workers each held up to the timeout cap
// what the client can send), a finite queue at the origin (the demo's 100
// refuse the rest), the moment of the release itself (requests inside at
// the release finish at the old time).
//
// # An AIMD limit against a capacity step (aimd)
//
// A deterministic, discrete-time model of an AIMD limit L (as package
// admit's aimd): at the start of each interval k, at t = k × interval,
//
//	C(t) = C1 before the step, C2 from it on (the requests the service can hold within the deadline)
//	L ≤ C(t):  L ← L + a
//	L > C(t):  L ← max(floor, L × b)
//
// unrounded (package admit keeps its limit with a fraction too and lets in
// its whole part; rounding each cut down would make a = 1 teeth of whole
// numbers only, and a cut of a small limit lose more than b says). L starts
// at C1 at 0 s (a limit that had found the capacity before the step) and the series holds one L and C an interval (time_s,
// limit, capacity; at most 6,000: 600 s in steps of 100 ms). Outputs:
//
//	min_after, max_after   the least and most L from the step on
//	tail_from_s            step + (duration − step) ÷ 2: the last half of the time after the step
//	mean_limit             mean L over that last half
//	delivered_pct          100 × mean(min(L, C)) ÷ C2 over it: what the limit lets in within capacity
//	settle_s               from the step to the first interval whose L is at or under C2 just
//	                       after a cut made against C2
//
// Settled means the saw-tooth has found the new capacity: after the step
// down L is cut until it first falls to C2 or under; after a step up it
// climbs until it first passes C2 and is cut under it. From then on (C
// constant) every tooth runs from a cut to at most C2 + a, so this is the
// first tooth that lies within the new capacity's saw-tooth. No value when
// that does not happen before the end; a step at or after the end leaves
// every figure after it without a value (Stepped false, with a message).
// floored is set when L is at the floor at some interval from the step on:
// a collapse, not a search (the goal asks for none). The mean over
// the last half is what the saw-tooth settles to: about C2 × (1 + b) ÷ 2
// for small a, so a gentler cut (b nearer 1) lets in more of the capacity
// and takes longer to settle. With the defaults (C 17.5 → 8.75 in flight
// at 5 s of 15: the scaled demo's 7 workers plus the queue a 250 ms
// deadline holds, at 100 then 200 ms of work; a = 1 each 100 ms, b = 0.75)
// it settles in 0.3 s and lets in 91.4% of C2; b = 0.5 79.2% (0.1 s), b =
// 0.9 98.2% (0.7 s). Real signals are late and noisy, so these are upper
// bounds: the demo's proxy measured far less.
//
// Assumes: the capacity as a number of requests in flight known
// exactly and the same every interval, an overload signal in the same
// interval L passes it, requests up to C in time and the rest late.
// Ignores: randomness (real signals come late and noisy, so real limits
// overshoot further), a limit that is not used (admit grows only a limit
// that is at least half used), the max, and signals from requests let in
// before the last cut (admit ignores them; here each interval stands
// alone).
//
// # Retries against a failing service (retry-amplification)
//
// A client retries a failed attempt up to r times (0 to 10); each attempt
// fails independently with chance p (0 to 1), so a request sends its k-th
// retry with chance p^k and, on average,
//
//	attempts without a budget = 1 + p + p² + … + p^r = (1 − p^(r+1)) ÷ (1 − p)   (r + 1 at p = 1)
//	with a retry budget b > 0:  attempts = min(that, 1 + b)
//	load_pct = 100 × u × attempts
//
// summed term by term, so p = 1 and p near 1 need no case of their own.
// The budget b (0 to 1, 0: none) is package retry's: retries at most a
// share b of the first attempts, so at most b a request on average. u (0
// to 2) is the first attempts' load as a share of the service's
// capacity; the service is over its capacity (Over) when load_pct passes
// 100. With p = 0.5, r = 3 and u = 0.8: 1.875 attempts, 150% of capacity;
// a budget of 0.1 holds them to 1.1 attempts, 88%. The curve is the
// attempts against p = 0, 0.01, … 1 (RetryCurveSteps) for the same r,
// without the budget and with it. Outputs: attempts, attempts_no_budget,
// load_pct. Assumes: attempts fail independently with the same chance,
// a retry is the same work as a first attempt, a budget spread evenly
// over time. Ignores: that an overloaded service fails more attempts
// (the feedback that turns a blip into an outage: p here is given, not
// caused by the load), backoff and when the retries are sent, a breaker,
// the budget's burst.
//
// # Capacity that lands late (late-scaling)
//
// Demand λ a second against a capacity μ1 from t = 0; a capacity μ2
// lands L seconds on. A fluid queue, first come first served, holds what
// is not served:
//
//	backlog at the landing   B = max(0, λ − μ1) × L
//	drain time               B ÷ (μ2 − λ) after the landing (never, if μ2 ≤ λ and B > 0, or μ2 < λ)
//	wait at the landing      B ÷ μ2
//	worst wait               B ÷ λ, for the request arriving at μ1 × L ÷ λ
//
// A request arriving at t waits until the work ahead of it is done.
// Before the landing μ1 works the queue: arriving at t it finds (λ − μ1)
// × t ahead and waits (λ − μ1) × t ÷ μ1 while μ1 can clear that by the
// landing, that is until t* = μ1 × L ÷ λ, whose request waits B ÷ λ and
// is served just as μ2 lands. Every later request waits less while μ2 >
// λ: the wait falls by (μ2 − λ) ÷ μ2 a second of arrival, through B ÷ μ2
// at the landing, to 0 when the backlog is gone. So the longest wait is
// B ÷ λ, not the landing's B ÷ μ2 (with 120 a second against 100, 150
// after a lag of 60 s: B = 1,200, drained 40 s after the landing, 8 s at
// the landing, 10 s for the request arriving at 50 s). With μ2 = λ the
// waits stop at B ÷ λ and stay; with μ2 < λ they grow without end (no
// worst wait). A timeout T marks the arrivals that wait past it: from T
// × μ1 ÷ (λ − μ1) (the rising side) to drained − T × μ2 ÷ (μ2 − λ) (the
// falling side), late_s long; 0 when no wait passes T, no value with no
// timeout or when the late arrivals never end. Outputs: backlog, drain_s,
// landing_wait_ms, worst_wait_ms, late_s. Assumes: steady rates (a
// fluid), capacity that steps at the landing, one queue first come first
// served with no limit, a service that works every request it queued.
// Ignores: randomness (a real queue waits some even below capacity),
// callers who give up or retry (the backlog holds their requests too),
// service time itself, capacity that ramps up as it lands.
//
// # Variability and the wait (variability-wait)
//
// c servers (1 to 64) of mean service time S at utilisation ρ (0 to
// 0.99), with the gaps between arrivals and the service times varying as
// their squared coefficients of variation (variance ÷ mean²) say: ca² and
// cs² (0 to 25; 0 constant, 1 Poisson arrivals or exponential service).
//
//	Wq(M/M/c) = C ÷ θ, from Erlang C as the queue curve's (mmc.meanWait)
//	Wq ≈ (ca² + cs²) ÷ 2 × Wq(M/M/c)       Kingman; Allen and Cunneen for c > 1
//	Wq = ρ·S·(1 + cs²) ÷ (2(1 − ρ))         c = 1, ca² = 1: Pollaczek–Khinchine, exact
//	W = Wq + S,  λ = ρ·c·1000 ÷ S
//	constant service: ca² ÷ 2 × Wq(M/M/c);  ratio (ca² + cs²) ÷ ca²
//
// The one formula covers every case: with c = 1 and ca² = 1 it is the
// Pollaczek–Khinchine mean wait of M/G/1, exact for any service-time
// distribution with that cs²; with ca² = cs² = 1 it is M/M/c's, exact;
// with ca² = cs² = 0 (D/D/c) nobody waits, exactly. Otherwise it is
// Kingman's heavy-traffic approximation, and the widget says so: against
// simulation (TestVariabilityAgainstSimulation) it was 6% under for M/D/4
// at 0.7, 7% over for E2/M/1 (Erlang-2 gaps, ca² = 0.5) at 0.7, and
// within 3% for a bimodal service at 0.8. Method names the case and Exact
// says whether it is exact. The ratio to the constant-service wait does
// not depend on ρ: a tenth of requests ten times slower (cs² = 2.02)
// about triples the wait at any load. It is +Inf (null) when only the
// service varies (ca² = 0 < cs²) and NaN (null) when nothing does. The
// curves are the mean wait against ρ = 0, 0.01, … 0.95 (CurveSteps,
// CurveLast) for cs² = 0, 1, 2 and the learner's, with the learner's ca².
// Outputs: arrivals, mean_wait_ms, mean_response_ms, mmc_wait_ms,
// constant_wait_ms, wait_ratio. Assumes: a steady state, first come first
// served, identical servers, gaps and service times each independent of
// the others. Ignores: correlated arrivals (bursts that last longer than a
// gap), the tail of the wait (only its mean: a variable service's p99
// grows far more than its mean), timeouts and retries, a limit on the
// queue.
//
// # The slowest of many (fanout-tail)
//
// A request fans out to k sub-requests at once (1 to 1000) and is done
// when the last answers, so it is slow when any is; each is slow with
// chance p (0 to 1), independently ("The Tail at Scale", Dean and
// Barroso, 2013):
//
//	slow_share = 1 − (1 − p)^k                    computed as −expm1(k·log1p(−p))
//	the requests' P-th percentile is each backend's P^(1/k)-th
//	median_backend_percentile = 0.5^(1/k),  backend_percentile = P^(1/k)   (P: 0.01 to 0.9999)
//	half_slow_fanout = the least whole k with slow_share ≥ 0.5 (none when p = 0)
//
// The percentiles hold because the slowest of k independent draws is at
// most t exactly when every one is: F_max(t) = F(t)^k. With k = 100 and p
// = 0.01, 63.4% of requests are slow, the median request is each backend's
// p99.31 and its p99 each backend's p99.99. Percentiles are written with
// two significant digits of what lies above them, so none under 1 reads
// p100. The curve is the slow share against k from 1 to 100, or to the
// next whole hundred past the learner's k (FanoutCurveEnd), in
// FanoutCurveSteps steps. Outputs: slow_share, median_backend_percentile,
// backend_percentile, half_slow_fanout. Assumes: sub-requests sent at
// once, slow independently and with the same chance, a request that needs
// every answer. Ignores: slowness with a common cause (a shared host, a
// garbage collection, a hot key) that makes sub-requests slow together,
// hedged or tied requests, answers that do without the slowest.
//
// # The Universal Scalability Law (usl)
//
// N clients or workers (the curve runs 1 to N max, at most 256), each
// doing λ a second alone, with contention σ and coherency κ (0 to 1 each;
// Gunther, "Guerrilla Capacity Planning", 2007):
//
//	X(N) = λN ÷ (1 + σ(N − 1) + κN(N − 1))
//	N* = √((1 − σ) ÷ κ), at least 1; no peak when κ = 0
//	x_at_max = X(N max),  speedup_at_max = X(N max) ÷ λ
//
// σ is the share of the work done one at a time (a lock); with κ = 0 the
// law is Amdahl's and X rises for ever towards λ ÷ σ: peak_n is +Inf and
// peak_x NaN (null in JSON), and the sentence says there is no peak. κ is
// what each pair of clients costs each other (keeping caches or replicas
// coherent); it makes X fall past N*, and Retrograde says N max is there.
// Outputs: peak_n, peak_x, x_at_max, speedup_at_max. Assumes: identical
// clients in a closed loop, the two costs constant as N grows. Ignores:
// what the costs are made of (the law fits, it does not explain), a
// ceiling other than these (the processors, the network), queueing at
// low N.
//
// FitUSL fits λ, σ and κ to measured (N, X) points. N ÷ X = (1 + σ(N − 1)
// + κN(N − 1)) ÷ λ is linear in 1 ÷ λ, σ ÷ λ and κ ÷ λ; it is solved by
// least squares with each point weighted by X ÷ N, so its residual is a
// relative error, through a QR factorisation (the normal equations would
// square a condition of N²). σ and κ are held at 0 or above: when the free
// fit gives a negative one the best fit with it at 0 is taken. λ is fitted
// with them, not read from the point at N = 1 (which need not be there).
// The fit reports the RMS relative error of X. From exact points it gives
// back λ, σ and κ to rounding; from points with ±3% noise over a sweep of
// 1 to 64 clients, σ within 0.01, κ within 20% and the peak within 10%.
//
// # Numbers, sentences and goals
//
// Result.Quantities holds every finite input and output by name (for
// littles-law and quota the implied one replaces its input); goals are checked
// against it. Output names: littles-law arrivals, latency_ms, inflight;
// admission-limit limit, rounded_limit, worst_ms; two-ceilings
// worker_ceiling, processor_ceiling, ceiling, speedup_cap; queue-curve
// capacity, utilisation, prob_wait, mean_in_system, mean_queue,
// mean_wait_ms, mean_response_ms, p50_response_ms, p99_response_ms,
// knee_arrivals; quota, aimd, retry-amplification, late-scaling,
// variability-wait, fanout-tail and usl as in their sections. GoalReached says a Target holds when
// |got − value| ≤ tol + 1e-9 × max(1, |value|); a missing quantity does not
// hold. model.Target mirrors lessons.Target (model cannot import lessons).
//
// Non-finite values are Num, which writes null in JSON. Sentences and steps
// print numbers with Format: whole from 100 up, at most 2 decimals from 1,
// 3 significant digits below 1, trailing zeros dropped, halves rounded up;
// "about" is added when the shown number is not the exact one.
//
// # Test vectors
//
// testdata/vectors.json is read by TestVectors and by
// static/js/model.test.mjs:
//
//	{"format": "...", "tolerance": {"relative": r, "absolute": a},
//	 "vectors": [{"name", "why", "kind", "solve", "values",
//	              "expect": {...}, "targets": [...], "expect_goal": {...}}]}
//
// Each vector computes (kind, values, solve) and matches the JSON result
// against expect: objects as subsets, numbers within a + r·|want|, strings,
// booleans and null exactly, arrays element by element; an object against an
// array checks "$len" and numeric indexes. With targets, goalReached on the
// result's quantities must match expect_goal. The queue, variability,
// fan-out and USL figures come from testdata/oracle.py (50-digit mpmath by
// a different route), not from this code.
//
// # The lab's models
//
// Lab (lab.go) applies the models to the lab's knobs, for the charts beside
// a run: Lab.At is the two ceilings' throughput and the M/M/c latency at one
// offered rate, Lab.Curve the latency across rates, and Lab.Queue says which
// queue that is (the CPUs with the spin when the processors bind, each
// request then also waiting WAIT_MS; else the workers with spin + wait).
// Drawing is package chart's; the charts themselves are built in web.
//
// # A client of N workers (Lab.ClientWorkers)
//
// A client with a fixed pool of N workers (loadrun.Open.ClientWorkers, a
// run's --max-inflight) sends a Poisson arrival of rate λ only when one of
// its workers is free, and that worker stays busy until the answer. In
// front of Lab.Queue's queue (c servers of mean service S, then extraMS = D
// outside it) this is a closed network of N customers: the idle workers (a
// single server of rate λ), the c servers, and a delay of D (an infinite
// server). Its steady state is product form: with a = λ·S and b = λ·D in
// erlangs,
//
//	p(n, m) ∝ g(n) · b^m ÷ m!,   g(n) = a^n ÷ ∏_{i≤n} min(i, c),   n + m ≤ N
//
// for n at the servers and m in the delay, whatever the delay's
// distribution. With D = 0 (the workers bind) it is M/M/c/K with K = N, and
// an Erlang loss system M/M/N/N, Erlang B, when N ≤ c (the lab never
// queues). An arrival finds all N busy with chance P_K = Σ_{n+m=N} p(n, m),
// so
//
//	ok/s = λ·(1 − P_K),   client_busy/s = λ·P_K
//
// (computed in logarithms, so any N and load stay finite). A sent request
// finds n at the servers with chance q(n) ∝ g(n)·Σ_{m≤N−1−n} b^m ÷ m!
// (the states with a worker free, by PASTA). First come, first served, it
// waits for j = n − c + 1 departures of c busy servers when n ≥ c, then is
// served, so counting the events of a Poisson process of rate c ÷ S (each,
// once it is served, its own with chance 1 ÷ c):
//
//	P(T > t | j) = Σ_i Poisson(c·t ÷ S; i) · r^{(i−j)+},   r = (c − 1) ÷ c
//
// a sum of positive terms (the Erlang(j + 1) tail for c = 1), mixed over
// q and summed until what is left is below 1e-16 of it. p50 and p99 invert
// it by bisection as for M/M/c and add D. There is a steady state at every
// rate: Lab.Curve is CurveSteps + 1 points evenly from 0 to the rate asked
// for. With N large and ρ < 1 it is M/M/c again (the tests hold it to
// QueueCurve, to Erlang B and to M/M/1/K in closed form).
//
// When the processors bind, the model holds the client's workers through
// the CPUs and the WAIT_MS after them: the delay station above, solved
// exactly rather than by a fixed point. Lab.ClientCeiling is the client's
// own ceiling, N × 1000 ÷ (spin + wait), what N workers could send if no
// request ever waited; ok/s never passes it nor the two ceilings. Assumes:
// Poisson arrivals, exponential service at the servers (the CPUs shared
// first come, first served), a worker freed the moment its answer comes.
// Ignores: the caller's timeout (a worker whose caller gives up is freed
// then, which the model does not see), the admission limit and refusals
// (a refused request frees its worker at once), the lab's own worker limit
// when the processors bind. The lab's service time is fixed, not
// exponential: blocking in a loss system (N ≤ c) is insensitive to that
// (Erlang B), and so is the product form with the processors shared, but
// with N > c and the workers binding the lab is M/D/c/K and turns fewer
// away than the model, and latency always differs: with no wait the lab
// answers in exactly S where the model says p50 S·ln 2, p99 S·ln 100
// (sim's TestClientWorkersAgainstTheModel measures the gaps).
package model
