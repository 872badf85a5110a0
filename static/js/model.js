// model.js: the capacity formulas for the widget pages, an ES module with no
// dependencies and no build step. It mirrors package model (model/*.go) line
// for line: same formulas, same rounding, same sentences. Both are checked
// against model/testdata/vectors.json (go test ./model/, node --test static/js/).
// The quota, AIMD, retry and late-scaling models are in modellimits.js,
// and the variability, fan-out and USL models in modeltail.js: widgets.js
// loads each only on a page that has one of its kinds (each one's compute
// covers its own kinds and this module's).
// Infinity and NaN stay numbers here; JSON.stringify writes them as null, as
// the Go side does.

/** Quantities of Little's law, as parameter names and solve choices. */
export const SOLVES = ["inflight", "arrivals", "latency_ms"];

/** Utilisation grid of the queue curve: i / CURVE_STEPS for i = 0 … CURVE_LAST. */
export const CURVE_STEPS = 100;
export const CURVE_LAST = 95;

// shown rounds v the way formatNumber shows it: [rounded, decimals].
function shown(v) {
  const a = Math.abs(v);
  let d = 2;
  if (a >= 100) {
    d = 0;
  } else if (a < 1) {
    for (let t = a; t > 0 && t < 1 && d < 12; t *= 10) d++;
  }
  let p = 1;
  for (let i = 0; i < d; i++) p *= 10;
  let r = Math.floor(a * p + 0.5) / p;
  if (v < 0) r = -r;
  return [r, d];
}

/**
 * formatNumber writes a quantity for a learner: whole numbers from 100 up,
 * at most two decimals from 1 to 100, three significant digits below 1,
 * trailing zeros dropped; "∞" for Infinity, "undefined" for NaN.
 */
export function formatNumber(v) {
  if (Number.isNaN(v)) return "undefined";
  if (v === Infinity) return "∞";
  if (v === -Infinity) return "-∞";
  const [r, d] = shown(v);
  let s = r.toFixed(d);
  if (s.includes(".")) s = s.replace(/0+$/, "").replace(/\.$/, "");
  if (s === "-0") s = "0";
  return s;
}

export function about(v) {
  const [r] = shown(v);
  return Math.abs(r - v) > 1e-9 * Math.max(1, Math.abs(v)) ? "about " : "";
}

export function plural(shownNum, one, many) {
  return shownNum === "1" ? one : many;
}

/**
 * littlesLaw implies one of arrivals (per second), latency_ms or inflight
 * from the other two: L = λ·W/1000. Returns the fields of Go's LittlesLaw.
 */
export function littlesLaw({ arrivals, latency_ms: latencyMS, inflight }, solve = "inflight") {
  const r = { solve, arrivals, latency_ms: latencyMS, inflight, defined: true, sentence: "" };
  const F = formatNumber;
  if (solve === "arrivals") {
    if (latencyMS === 0) {
      r.arrivals = NaN;
      r.defined = false;
      r.message =
        inflight === 0
          ? "With a time in system of 0 ms and nothing in flight, any arrival rate fits: set a time above 0 ms."
          : "With a time in system of 0 ms, no arrival rate keeps " + F(inflight) + " requests in flight: set a time above 0 ms.";
    } else {
      const a = (inflight * 1000) / latencyMS;
      r.arrivals = a;
      const l = F(inflight);
      r.sentence =
        l +
        " " +
        plural(l, "request", "requests") +
        " in flight that each stay " +
        F(latencyMS) +
        " ms sustain " +
        about(a) +
        F(a) +
        " " +
        plural(F(a), "request", "requests") +
        " a second.";
    }
  } else if (solve === "latency_ms") {
    if (arrivals === 0) {
      r.latency_ms = NaN;
      r.defined = false;
      r.message =
        inflight === 0
          ? "With no arrivals and nothing in flight, any time in system fits: set an arrival rate above 0."
          : "With no arrivals, " + F(inflight) + " requests can never be in flight: set an arrival rate above 0.";
    } else {
      const w = (inflight * 1000) / arrivals;
      r.latency_ms = w;
      const l = F(inflight);
      const a = F(arrivals);
      r.sentence =
        l +
        " " +
        plural(l, "request", "requests") +
        " in flight at " +
        a +
        " " +
        plural(a, "request", "requests") +
        " a second means each stays " +
        about(w) +
        F(w) +
        " ms.";
    }
  } else {
    const l = (arrivals * latencyMS) / 1000;
    r.inflight = l;
    const a = F(arrivals);
    r.sentence =
      a +
      " " +
      plural(a, "request", "requests") +
      " a second that each stay " +
      F(latencyMS) +
      " ms means " +
      about(l) +
      F(l) +
      " " +
      plural(F(l), "request is", "requests are") +
      " inside at any moment.";
  }
  if (!r.defined) r.sentence = r.message;
  return r;
}

/** roundLimit: round down, so the last request admitted is within budget, and at least 1. */
export function roundLimit(exact) {
  return Math.max(1, Math.floor(exact + 1e-9));
}

/**
 * admissionLimit: limit = workers × (budget − service) ÷ service, its steps,
 * the rounded limit and the worst time in system it allows.
 */
export function admissionLimit({ workers, budget_ms: budgetMS, service_ms: serviceMS }) {
  const F = formatNumber;
  const r = {
    workers,
    budget_ms: budgetMS,
    service_ms: serviceMS,
    feasible: false,
    exact: NaN,
    rounded: NaN,
    worst_ms: NaN,
    over_ms: NaN,
    steps: [],
    sentence: "",
  };
  const spare = budgetMS - serviceMS;
  r.steps.push("budget − service = " + F(budgetMS) + " − " + F(serviceMS) + " = " + F(spare) + " ms a request can spend waiting");
  if (spare <= 0) {
    r.message =
      "A " +
      F(budgetMS) +
      " ms budget leaves no room to wait before a " +
      F(serviceMS) +
      " ms service: any request that waits at all is late, so no queue fits. Lengthen the budget or shorten the service.";
    r.steps.push("nothing is left to wait in, so no queue fits");
    r.sentence = r.message;
    return r;
  }
  r.feasible = true;
  const per = spare / serviceMS;
  const exact = (workers * spare) / serviceMS;
  const rounded = roundLimit(exact);
  const wait = (rounded * serviceMS) / workers;
  const worst = wait + serviceMS;
  // Over budget counts only beyond floating-point noise (1e-9 of the budget).
  let over = worst - budgetMS;
  if (over <= 1e-9 * budgetMS) over = 0;
  Object.assign(r, { exact, rounded, worst_ms: worst, over_ms: over });
  const w = F(workers);
  const rs = F(rounded);
  const check = over > 0 ? F(over) + " ms over budget" : "within budget";
  r.steps.push(
    F(spare) + " ÷ " + F(serviceMS) + " = " + F(per) + " service times fit in that wait",
    "× " + w + " " + plural(w, "worker", "workers") + " = " + F(exact) + " requests can wait ahead of a new one",
    "round down, so the last one admitted is within budget (at least 1): limit " + rs,
    "check: with " +
      rs +
      " waiting, the last one admitted waits " +
      rs +
      " × " +
      F(serviceMS) +
      " ÷ " +
      w +
      " = " +
      F(wait) +
      " ms and finishes at " +
      F(worst) +
      " ms, " +
      check,
  );
  r.sentence =
    "With " +
    w +
    " " +
    plural(w, "worker", "workers") +
    ", a " +
    F(budgetMS) +
    " ms budget and " +
    F(serviceMS) +
    " ms of service, queue at most " +
    rs +
    " " +
    plural(rs, "request", "requests") +
    " (the formula gives " +
    F(exact) +
    ").";
  return r;
}

/**
 * twoCeilings: worker ceiling workers × 1000 ÷ (spin + wait), processor
 * ceiling cpus × 1000 ÷ spin (per second), which binds, and the speedup cap
 * cpus × (spin + wait) ÷ spin. Infinite ceilings are Infinity.
 */
export function twoCeilings({ workers, cpus, spin_ms: spinMS, wait_ms: waitMS }) {
  const F = formatNumber;
  const total = spinMS + waitMS;
  let wc = Infinity,
    one = Infinity,
    share = NaN,
    pc = Infinity,
    capx = Infinity;
  if (total > 0) {
    wc = (workers * 1000) / total;
    one = 1000 / total;
    share = spinMS / total;
  }
  if (spinMS > 0) {
    pc = (cpus * 1000) / spinMS;
    capx = (cpus * total) / spinMS;
  }
  const r = {
    workers,
    cpus,
    spin_ms: spinMS,
    wait_ms: waitMS,
    worker_ceiling: wc,
    processor_ceiling: pc,
    binds: "",
    ceiling: Math.min(wc, pc),
    one_worker: one,
    spin_share: share,
    speedup_cap: capx,
    sentence: "",
  };
  const w = F(workers);
  const c = F(cpus);
  const workersText = w + " " + plural(w, "worker", "workers") + " holding each request " + F(total) + " ms";
  const cpusText = c + " " + plural(c, "CPU", "CPUs") + " spending " + F(spinMS) + " ms on each request";
  const workersServe = workersText + " " + plural(w, "serves", "serve");
  const cpusServe = cpusText + " " + plural(c, "serves", "serve");
  if (wc === Infinity && pc === Infinity) {
    r.binds = "none";
    r.message = "With no spin and no wait a request takes no time, so nothing limits the rate in this model; real requests always take some time.";
    r.sentence = r.message;
    return r;
  }
  if (pc === Infinity) {
    r.binds = "workers";
    r.message = "With no spin a request puts no load on a processor, so there is no processor ceiling.";
    r.sentence = "The worker ceiling binds: " + workersServe + " at most " + F(wc) + " requests a second; with no spin there is no processor ceiling.";
    return r;
  }
  if (Math.abs(wc - pc) <= 1e-9 * Math.max(wc, pc)) {
    r.binds = "both";
    r.sentence = "Both ceilings meet at " + F(wc) + " requests a second: " + workersText + " and " + cpusText + ".";
  } else if (wc < pc) {
    r.binds = "workers";
    r.sentence = "The worker ceiling binds: " + workersServe + " at most " + F(wc) + " requests a second, below the processor ceiling of " + F(pc) + ".";
  } else {
    r.binds = "processor";
    r.sentence = "The processor ceiling binds: " + cpusServe + " at most " + F(pc) + " requests a second, below the worker ceiling of " + F(wc) + ".";
  }
  r.sentence += " Adding workers raises the rate at most " + F(capx) + " times one worker's " + F(one) + " a second.";
  return r;
}

// erlangC: probability of waiting in M/M/c at offered load a (Erlangs), via
// the Erlang B recursion.
function erlangC(c, a) {
  let b = 1;
  for (let k = 1; k <= c; k++) b = (a * b) / (k + a * b);
  const rho = a / c;
  return b / (1 - rho * (1 - b));
}

/**
 * mmcMeanWait is the M/M/c mean wait in queue, ms, for c servers of mean
 * service s ms at utilisation rho < 1: Erlang C ÷ θ, θ = c·(1 − ρ) ÷ S.
 */
export function mmcMeanWait(c, s, rho) {
  const theta = (c * (1 - rho)) / s;
  return erlangC(c, rho * c) / theta;
}

function meanResponse(c, s, rho) {
  return mmcMeanWait(c, s, rho) + s;
}

// tail: P(T > t) for the FCFS M/M/c response time T (ms).
function tail(cw, mu, theta, t) {
  const es = Math.exp(-mu * t);
  const d = theta - mu;
  let h;
  if (Math.abs(d * t) < 1) {
    let g = t;
    if (d !== 0) g = -Math.expm1(-d * t) / d;
    h = es * (1 + mu * g);
  } else {
    h = (theta * es - mu * Math.exp(-theta * t)) / d;
  }
  return (1 - cw) * es + cw * h;
}

function percentile(cw, mu, theta, p) {
  let lo = 0;
  let hi = 1 / mu;
  for (let i = 0; i < 200 && tail(cw, mu, theta, hi) > p; i++) {
    lo = hi;
    hi = hi * 2;
  }
  for (let i = 0; i < 100 && hi - lo > 1e-13 * hi; i++) {
    const mid = (lo + hi) / 2;
    if (tail(cw, mu, theta, mid) > p) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}

function point(c, s, rho) {
  const capacity = (c * 1000) / s;
  const p = {
    arrivals: rho * capacity,
    utilisation: rho,
    prob_wait: NaN,
    mean_in_system: NaN,
    mean_queue: NaN,
    mean_wait_ms: NaN,
    mean_response_ms: NaN,
    p50_response_ms: NaN,
    p99_response_ms: NaN,
  };
  if (!(rho < 1)) return p;
  const a = rho * c;
  const cw = erlangC(c, a);
  const mu = 1 / s;
  const theta = (c * (1 - rho)) / s;
  const lambda = a / s;
  const wait = cw / theta;
  p.prob_wait = cw;
  p.mean_wait_ms = wait;
  p.mean_response_ms = wait + s;
  p.mean_queue = lambda * wait;
  p.mean_in_system = lambda * (wait + s);
  p.p50_response_ms = percentile(cw, mu, theta, 0.5);
  p.p99_response_ms = percentile(cw, mu, theta, 0.01);
  return p;
}

// separate: c separate M/M/1 queues, each offered a random 1/c of the load,
// at utilisation rho; a request's figures are one queue's, the counts inside
// are summed over the c queues.
function separate(c, s, rho) {
  const p = point(1, s, rho);
  p.arrivals *= c;
  p.mean_in_system *= c;
  p.mean_queue *= c;
  return p;
}

function knee(c, s) {
  const power = (rho) => rho / meanResponse(c, s, rho);
  const gr = (Math.sqrt(5) - 1) / 2;
  let a = 0;
  let b = 0.999;
  let x1 = b - gr * (b - a);
  let x2 = a + gr * (b - a);
  let f1 = power(x1);
  let f2 = power(x2);
  for (let i = 0; i < 100; i++) {
    if (f1 < f2) {
      a = x1;
      x1 = x2;
      f1 = f2;
      x2 = a + gr * (b - a);
      f2 = power(x2);
    } else {
      b = x2;
      x2 = x1;
      f2 = f1;
      x1 = b - gr * (b - a);
      f1 = power(x1);
    }
  }
  return (a + b) / 2;
}

/**
 * queueCurve: the M/M/c queue (c = servers, whole) at offered load arrivals
 * per second with mean service service_ms; the knee, the points at
 * utilisation 0.7 and 0.9 and the curve from 0 to 0.95. Utilisation ≥ 1
 * gives stable: false, NaN figures and a message.
 */
export function queueCurve({ servers, service_ms: serviceMS, arrivals }) {
  const F = formatNumber;
  const c = Math.trunc(servers);
  const capacity = (servers * 1000) / serviceMS;
  const rho = (arrivals * serviceMS) / (1000 * servers);
  const at = point(c, serviceMS, rho);
  at.arrivals = arrivals;
  const r = {
    servers,
    service_ms: serviceMS,
    arrivals,
    capacity,
    stable: rho < 1,
    at,
    knee: point(c, serviceMS, knee(c, serviceMS)),
    at_70: point(c, serviceMS, 0.7),
    at_90: point(c, serviceMS, 0.9),
    curve: [],
    separate: separate(c, serviceMS, rho),
    separate_curve: [],
    sentence: "",
  };
  r.separate.arrivals = arrivals;
  for (let i = 0; i <= CURVE_LAST; i++) {
    r.curve.push(point(c, serviceMS, i / CURVE_STEPS));
    r.separate_curve.push(separate(c, serviceMS, i / CURVE_STEPS));
  }
  const cs = F(servers);
  const s = F(serviceMS);
  const lam = F(arrivals);
  const servs = cs + " " + plural(cs, "server", "servers");
  const perSecond = lam + " " + plural(lam, "request", "requests") + " a second";
  if (!r.stable) {
    r.message =
      "At " +
      perSecond +
      " the offered load is " +
      F(rho * 100) +
      "% of what " +
      servs +
      " of " +
      s +
      " ms can serve (" +
      F(capacity) +
      " a second): the queue grows without limit, so there is no steady state to report.";
    r.sentence = r.message;
    return r;
  }
  const l = F(at.mean_in_system);
  r.sentence =
    "At " +
    perSecond +
    ", " +
    servs +
    " taking " +
    s +
    " ms each " +
    plural(cs, "is", "are") +
    " " +
    F(rho * 100) +
    "% busy: on average " +
    l +
    " " +
    plural(l, "request is", "requests are") +
    " inside, each waits " +
    F(at.mean_wait_ms) +
    " ms and spends " +
    F(at.mean_response_ms) +
    " ms in all; 1 in 100 takes longer than " +
    F(at.p99_response_ms) +
    " ms.";
  if (servers > 1) {
    r.sentence +=
      " Given a queue each and a random share of the arrivals, the same " +
      servs +
      " would be as busy, but a request would wait " +
      F(r.separate.mean_wait_ms) +
      " ms on average and 1 in 100 would take longer than " +
      F(r.separate.p99_response_ms) +
      " ms.";
  }
  return r;
}

const finite = (x) => typeof x === "number" && Number.isFinite(x);

/**
 * compute returns the same shape as Go's model.Result for a kind, from a
 * full set of values (the page always has every value; defaults and range
 * checks are the server's job).
 */
export function compute(kind, values, solve = "") {
  const res = { kind, values: { ...values }, sentence: "", quantities: {} };
  const put = (name, x) => {
    if (finite(x)) res.quantities[name] = x;
  };
  let r;
  switch (kind) {
    case "littles-law":
      res.solve = solve || "inflight";
      r = littlesLaw(values, res.solve);
      res.littles_law = r;
      for (const n of ["arrivals", "latency_ms", "inflight"]) put(n, r[n]);
      break;
    case "admission-limit":
      r = admissionLimit(values);
      res.admission_limit = r;
      put("workers", r.workers);
      put("budget_ms", r.budget_ms);
      put("service_ms", r.service_ms);
      put("limit", r.exact);
      put("rounded_limit", r.rounded);
      put("worst_ms", r.worst_ms);
      break;
    case "two-ceilings":
      r = twoCeilings(values);
      res.two_ceilings = r;
      for (const n of ["workers", "cpus", "spin_ms", "wait_ms", "worker_ceiling", "processor_ceiling", "ceiling", "speedup_cap"]) put(n, r[n]);
      break;
    case "queue-curve":
      r = queueCurve(values);
      res.queue_curve = r;
      for (const n of ["servers", "service_ms", "arrivals", "capacity"]) put(n, r[n]);
      for (const n of ["utilisation", "prob_wait", "mean_in_system", "mean_queue", "mean_wait_ms", "mean_response_ms", "p50_response_ms", "p99_response_ms"])
        put(n, r.at[n]);
      put("knee_arrivals", r.knee.arrivals);
      for (const n of ["prob_wait", "mean_wait_ms", "mean_response_ms", "p99_response_ms"]) put("separate_" + n, r.separate[n]);
      break;
    default:
      throw new Error("unknown widget kind " + JSON.stringify(kind));
  }
  res.sentence = r.sentence;
  return res;
}

/**
 * goalReached checks quantities (a result's quantities) against targets
 * [{param, value, tol, find}]: each holds when |got − value| ≤ tol + 1e-9 ×
 * max(1, |value|). Returns {reached, misses: [{param, want, tol, got, find, message}]};
 * the message of a target to find (find: true) names neither its value nor
 * the way to it.
 */
export function goalReached(quantities, targets) {
  const F = formatNumber;
  const st = { reached: true, misses: [] };
  for (const t of targets) {
    const got = quantities[t.param];
    const ok = finite(got);
    if (ok && Math.abs(got - t.value) <= t.tol + 1e-9 * Math.max(1, Math.abs(t.value))) continue;
    st.reached = false;
    const m = { param: t.param, want: t.value, tol: t.tol, got: ok ? got : NaN };
    if (t.find) {
      // A value the learner is to find: the message gives it no more away.
      m.find = true;
      m.message = ok
        ? t.param + " is " + F(got) + "; not yet the value the goal asks you to find."
        : t.param + " has no value here; the goal asks you to find one.";
    } else {
      m.message = ok
        ? t.param + " is " + F(got) + "; the goal wants " + F(t.value) + " ± " + F(t.tol) + "."
        : t.param + " has no value here; the goal wants " + F(t.value) + " ± " + F(t.tol) + ".";
    }
    st.misses.push(m);
  }
  return st;
}
