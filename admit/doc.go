// Package admit is the admission policies, one implementation used by the
// lab's door (package labsvc), by its simulation (package sim) and by the
// proxy that stands in front of any HTTP service (cmd/proxy).
//
// A policy decides who is let in. Its user keeps its own queue and
// workers and tells a Door of each request's moments: Admit when it
// arrives (admit or refuse), Start when a worker takes it (serve, or drop
// it after all), Done when it ends (its latency and Outcome). Every
// refusal, at arrival or from the queue, is the lab door's: 503 with
// Retry-After: 1 and the body "queue full" (Refuse, RetryAfter,
// RefusalBody), and it never reaches a worker.
//
// A Gate is a Door for an HTTP service whose handlers run concurrently:
// it holds the door's lock and clock and, with workers, the queue of
// callers waiting for one; a handler calls Enter and Leave. The proxy and
// the course site (package web) each stand behind one. A Gate's request
// is of one of three classes (Class): Critical, never refused and not
// counted inside; Normal, refused at the policy's bound; Sheddable,
// refused first, once all but a quarter of the bound is inside
// (Door.AdmitSheddable). With Gate.BoundWait it also refuses by the
// processors' line (wait.go): how long the process's goroutines wait,
// ready, for a processor (the Go runtime's /sched/latencies histogram,
// its 90th percentile over the last 50 ms or more). Past a service's
// processor ceiling its line forms before requests are read, in the
// sockets and among the goroutines ready to run, where no count of
// requests inside sees it; that wait does. Sheddable requests are
// refused past the bound, with a probability growing from 0 to 1 between
// it and twice it (so that the line shortens without emptying), Normal
// ones past four times it.
//
// "Inside" means admitted and not done: waiting for a worker or in
// service. At the lab that is queued + in_service; at a proxy with no
// workers of its own, the requests in flight to the upstream.
//
// # The policies
//
// A policy is written as the POLICY knob spells it (Spec): its name, then
// any of its parameters as name=value, separated by commas with no spaces
// ("aimd,backoff=0.5,interval_ms=200"), so that it needs no quotes in a
// shell. Times are in milliseconds. Help lists the defaults.
//
// queue (the default): a caller that finds every worker taken waits in a
// FIFO queue, unless LIMIT callers already wait, when it is refused
// (LIMIT 0: never). Its one parameter is the LIMIT knob, not part of
// POLICY, so every preset written before policies existed means what it
// did. It assumes the service's own workers are its capacity: it bounds
// the queue behind them, not the requests in service (with many workers
// on few processors it goes blind: they all fit "in service").
//
// inflight,quota=N: a fixed quota. A caller is refused when N requests
// are inside, whatever they are doing. N has no default. It assumes
// whoever sets N knows the capacity: by Little's law a service that
// answers X a second within R holds N = X × R inside, and a quota of N
// holds the callers to N ÷ R a second whatever R becomes (after a bad
// release that doubles R, half).
//
//	quota        1 to 100000, required  requests inside at once
//
// aimd: an adaptive quota, additive increase and multiplicative decrease
// (as TCP's congestion window, and Netflix's concurrency-limits AIMDLimit
// and the capacity demo's proxy do). The limit is a number with a
// fraction; a caller is refused while its whole part are inside. It grows
// by increase once an interval, at the first answer in time after the
// interval has passed, if at least half of the limit was inside at some
// moment in it (a limit nobody uses proves nothing, and growing with no
// answers coming back would feed a stalled service). An overload signal
// cuts it to backoff of itself, not below min, and starts a new interval:
// an answer Overloaded (503, 429, another 5xx, no connection), TimedOut
// (the proxy's timeout, or the caller gave up), or Served later than
// latency_ms from admission. Signals from requests admitted before the
// last cut are ignored: they were let in under the old limit and say
// nothing of the new one (one cut per congestion event, as TCP cuts once
// per window of losses). It assumes overload shows as such a signal: at
// the lab's own door the only one is latency (the lab serves everything
// it admits, and does not see its callers give up), so latency_ms should
// be what callers will wait; its default is the load generator's default
// timeout. The limit saw-tooths around the capacity: it must exceed it to
// learn where it is.
//
//	start        1 to 100000, 10      the limit at the start and after a reset
//	min          1 to 100000, 1       the least a cut leaves
//	max          1 to 100000, 1000    the most it grows to (min ≤ start ≤ max)
//	increase     0.01 to 1000, 1      added once an interval
//	backoff      0.5 to 0.99, 0.75    the fraction of the limit a cut leaves
//	interval_ms  1 to 600000, 100     how often the limit may grow
//	latency_ms   0 to 600000, 2000    an answer slower than this is overload; 0: none
//
// gradient: an adaptive quota that follows latency, in the style of
// Netflix's concurrency-limits Gradient2 (Envoy's adaptive concurrency
// filter does the same with a minimum latency it measures at low
// concurrency every so often instead of an average). Latencies of
// answers (Served, and TimedOut at how long they waited; an Overloaded
// answer is no sample: a quick refusal says nothing of the service's
// speed) are gathered in windows of at least interval_ms and at least
// samples answers. At each window's end its mean latency, short, is
// compared with a baseline, long, that stands for the latency without
// load: the mean of the first ten windows, then an exponential average
// over long windows (factor 2 ÷ (long + 1)), which falls by 5% at once
// whenever it is more than twice short (after a long overload ends). If
// at least half of the limit was inside at some moment of the window,
//
//	gradient = clamp(tolerance × long ÷ short, 0.5, 1)
//	estimate = limit × gradient + headroom
//	limit    = clamp(limit × (1 − smoothing) + estimate × smoothing, min, max)
//
// so while latency stays within tolerance of the baseline the limit grows
// by headroom × smoothing a window, and as latency rises above it the
// limit shrinks, by at most half of the smoothed step a window. It
// assumes the service's latency without load changes slowly against long
// windows: a lasting change of speed (a bad release) is first taken for
// queueing, and the baseline catches up over about long ÷ 2 windows,
// while the limit settles where the latency is tolerance times the
// baseline, with headroom's worth of queue.
//
//	start        1 to 100000, 20      the limit at the start and after a reset
//	min          1 to 100000, 1       the least it shrinks to
//	max          1 to 100000, 1000    the most it grows to (min ≤ start ≤ max)
//	smoothing    0.01 to 1, 0.2       how much of each estimate the limit takes
//	tolerance    1 to 10, 1.5         how many times the baseline a window's latency may be
//	headroom     0 to 1000, 4         requests added to each estimate
//	interval_ms  1 to 600000, 100     the shortest window
//	samples      1 to 100000, 10      the fewest answers a window needs
//	long         1 to 100000, 600     windows the baseline averages over
//
// sojourn: a bound on each request's time in the queue, named for that
// time, its sojourn. Every caller is admitted; a worker that takes a
// request from the queue asks the policy first, and the policy drops the
// request (refuses it then) if its own wait passed a bound, and the
// worker takes the next. The bound depends on whether the queue stands.
// The policy keeps the least wait of the requests taken in the current
// interval (a request handed to a free worker at once waited 0). At the
// first one taken after the interval ends, the queue is standing if that
// least wait was above target_ms (it never emptied: a standing queue, not
// a burst), and a new interval begins. While it stands, the bound is
// twice target_ms; otherwise there is none. So while a queue stands the
// callers served wait up to twice target, and the rest hear 503 instead
// of waiting out their timeouts.
//
// This is the adaptive time-in-queue rule of Facebook's RPC servers
// (folly's and wangle's class named Codel, described in Ben Maurer's
// "Fail at Scale", ACM Queue 2015), not CoDel itself. CoDel (Nichols and
// Jacobson, "Controlling Queue Delay", ACM Queue 2012) detects a standing
// queue the same way, by the least sojourn over an interval staying above
// target, but then drops at a rising rate (the next drop interval ÷ √n
// after the nth) until a sojourn falls back under target: how many it
// drops depends on how long the queue has stood, not on what each
// dropped packet waited. This policy keeps no drop rate: it drops each
// request whose own wait passed the bound, however many those are, which
// suits requests better than packets (a request that waited too long is
// the one to refuse). The old name, codel, is refused with a message
// naming this one.
//
// It assumes waiting is the symptom to bound: it does nothing about
// requests in service (many workers on few processors serve slowly
// without a queue), and with one queue and few workers it samples only
// as often as a worker takes a request.
//
// With timeout_ms, the callers' timeout, a request is dropped too,
// whether or not the queue stands, when its wait plus the service time
// the policy has measured lately exceeds the timeout: its caller will
// have given up before the answer comes. The service time is the smoothed
// latency of served requests from admission less their smoothed wait
// (weight 1/8 a sample, as TCP smooths round trips), so it follows a
// release that slows the service within a few dozen answers. This is for
// a service whose callers all wait about the same and which cannot see
// them give up (the lab serves what it admits): the standing-queue test
// lets a long wait through when the queue emptied in the last interval
// (a burst, not a standing queue), and a caller who has given up then
// holds a worker for a whole service time that others could have used.
// When the timeout less the service time is under twice target, as in
// the lab's bad release (245 − 200 = 45 ms of waiting against twice 24),
// this deadline is the tighter bound and does the dropping. It assumes
// the callers' timeout is known and shared; set it a little under the
// timeout, for the network's share of the callers' latency.
//
//	target_ms    1 to 600000, 5       the wait a standing queue may keep; while it stands, drop a wait over twice this
//	interval_ms  1 to 600000, 100     how long the least wait must stay above target for the queue to stand
//	timeout_ms   0 to 600000, 0       drop a request whose wait plus the service time exceeds it; 0: none
//
// The queue stays first in, first out under overload, not Facebook's
// adaptive LIFO, for three reasons. The drop already removes the stale
// requests that LIFO would leave at the back to time out: what LIFO buys,
// fresh requests served while the queue stands, sojourn buys with a quick
// 503 to the stale ones, which their callers can act on at once rather
// than after their whole timeout. The lab's callers share one timeout, so
// serving the newest first gains nothing a bounded wait does not. And the
// lab teaches waiting as FIFO (queue_wait is the time behind those
// ahead), so one discipline in every policy keeps the lessons' sums true.
//
// # Shedding by class
//
// Any policy may end with classes=on ("queue,classes=on",
// "aimd,backoff=0.5,classes=on"; the default is off, and Describe names it
// only when on). A request is then of one of the three classes (Class),
// which the door's user tells it (Door.AdmitClass; the lab reads the
// X-Criticality header, package labsvc), and the classes are treated
// apart, with B the policy's bound on requests inside (Limit):
//
//	order      the user's queue is served Critical first, then Normal,
//	           then Sheddable, first come first served within a class
//	Sheddable  refused first: also while B − ⌊B/4⌋ are inside (as a
//	           Gate's, AdmitSheddable), so a quarter of the bound is kept
//	           for the others
//	Normal     as the policy decides, as without classes
//	Critical   as the policy decides, but one it refuses is admitted all
//	           the same while fewer than 2 × B are inside: room beyond the
//	           bound that the other classes cannot take
//
// Every class counts inside, and the policy is asked of every request
// (but a Sheddable one refused at its lower bound) and learns from it as
// without classes; Start (sojourn's drop) is the same for every class.
// With no bound (the queue policy without LIMIT, sojourn) nobody is
// refused at arrival and only the order remains. Without classes=on the
// class is only counted by the user: every request is Admit, in one FIFO.
//
// So at twice a service's capacity, with a fifth of the traffic critical
// and the queue full of the others, a critical request still finds room
// and is served next: critical requests are served nearly all, and the
// refusals fall on Sheddable requests first, then Normal ones, where one
// FIFO limit refuses about half of every class alike. It assumes the
// callers mark as critical less than the capacity: critical requests are
// served first but not without limit, and past 2 × B they are refused too.
// (The Critical class of a Gate, above, is a service's own health checks
// and long-lived connections: never refused and not counted. A Gate
// treats its classes its own way always, and NewGate refuses classes=on.)
//
// # What a policy does not do
//
// The policies count requests, not connections or bytes, and know nothing
// of who the callers are: no fairness between callers and no retries; the
// only priority is the three classes (a Gate's, and classes=on's), which
// the user assigns. The adaptive ones learn only from what the Door is told; with
// LIMIT, WORKERS and the service's own queue they compose as the user
// arranges (the lab: policy first, then its FIFO queue and workers).
//
// A long-lived answer (a websocket, an event stream) is inside only until
// it begins: its user ends it then with Done and LongLived, as the proxy
// does. Its life is the caller's choice, not the service's work, so no
// policy takes it as a latency sample or an overload signal, and a quota
// does not count the connections such answers hold open.
//
// # Clocks and concurrency
//
// A Door never reads the clock: every method takes now, a duration since
// an origin of the caller's choosing, so the simulator runs the policies
// on simulated time and tests step them by hand. A Door is not safe for
// concurrent use; the lab calls it under its door's lock, the proxy under
// its own. Its arithmetic, Admit, Start and Done with the metrics
// registered, costs under 115 ns a request, with no allocation
// (BenchmarkDoor; docs/BENCHMARKS.md). Register exports it on a
// Prometheus registry (admit_limit, admit_inflight, admit_queue_seconds,
// admit_refused_total, admit_dropped_total, admit_policy_info), which is
// safe to read while the door is in use; Gate.Register adds
// admit_requests_total by class and decision and, with BoundWait,
// admit_processor_wait_seconds (the line as last measured).
package admit
