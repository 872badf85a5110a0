// modellimits.js: the models of overload and its limits for the widget
// pages: the in-flight quota, the AIMD limit, retries against a failing
// service and capacity that lands late, mirroring model/quota.go,
// model/aimd.go, model/retryamp.go and model/scaling.go line for line
// (same formulas, rounding and sentences; held to
// model/testdata/vectors.json). Apart from model.js so that a page without
// these widgets does not load them: widgets.js imports this module only
// when the page has one. Its compute covers every kind, these four and
// model.js's.

import { about, compute as computeBase, formatNumber, littlesLaw, plural } from "./model.js";

/**
 * quota: an in-flight quota through a bad release (Go's QuotaRelease). N =
 * X × R ÷ 1000 (solve "quota", or arrivals or latency_ms, as Little's law);
 * capacity c ÷ R before and c ÷ R' after; with the quota min(X, N ÷ R',
 * c ÷ R') after the release; without it the origin's queue grows at X − c ÷
 * R' and a caller's timeout passes (timeout − R') × (c ÷ R') ÷ growth
 * seconds after the release.
 */
export function quota({ arrivals, latency_ms: latencyMS, quota: quotaN, release_ms: releaseMS, workers, timeout_ms: timeoutMS }, solve = "quota") {
  const F = formatNumber;
  const ll = littlesLaw({ arrivals, latency_ms: latencyMS, inflight: quotaN }, solve === "quota" || solve === "" ? "inflight" : solve);
  const x = ll.arrivals;
  const r = ll.latency_ms;
  const n = ll.inflight;
  const q = {
    arrivals: x,
    latency_ms: r,
    quota: n,
    release_ms: releaseMS,
    workers,
    timeout_ms: timeoutMS,
    defined: ll.defined,
    capacity_before: NaN,
    capacity_after: (workers * 1000) / releaseMS,
    quota_rate: NaN,
    with_quota_before: NaN,
    with_quota_after: NaN,
    refused_after: NaN,
    quota_latency_ms: NaN,
    quota_late: false,
    without_quota_after: NaN,
    queue_growth: NaN,
    late_after_s: NaN,
    steps: [],
    sentence: "",
  };
  if (!ll.defined) {
    q.message = ll.message;
    q.sentence = ll.message;
    q.steps = [ll.message];
    return q;
  }
  const capBefore = (workers * 1000) / r;
  const capAfter = (workers * 1000) / releaseMS;
  q.capacity_before = capBefore;
  const rate = (n * 1000) / releaseMS;
  const before = Math.min(x, Math.min((n * 1000) / r, capBefore));
  const after = Math.min(x, Math.min(rate, capAfter));
  Object.assign(q, { quota_rate: rate, with_quota_before: before, with_quota_after: after, refused_after: Math.max(0, x - after) });
  let latency = releaseMS;
  if (after < x && after > 0) latency = (n * 1000) / after;
  q.quota_latency_ms = latency;
  q.quota_late = timeoutMS > 0 && latency > timeoutMS * (1 + 1e-12);
  const served = Math.min(x, capAfter);
  let growth = Math.max(0, x - capAfter);
  if (growth <= 1e-12 * x) growth = 0;
  q.without_quota_after = served;
  q.queue_growth = growth;
  let late = NaN;
  if (timeoutMS <= 0) {
    // no timeout: nobody gives up
  } else if (releaseMS >= timeoutMS) late = 0;
  else if (growth > 0) late = ((timeoutMS - releaseMS) * capAfter) / (1000 * growth);
  q.late_after_s = late;

  q.steps = [
    "N = X × R = " + F(x) + " a second × " + F(r / 1000) + " s = " + about(n) + F(n) + " in flight",
    "the origin serves at most c ÷ R = " +
      F(workers) +
      " ÷ " +
      F(r / 1000) +
      " s = " +
      about(capBefore) +
      F(capBefore) +
      " a second before the release, c ÷ R' = " +
      F(workers) +
      " ÷ " +
      F(releaseMS / 1000) +
      " s = " +
      about(capAfter) +
      F(capAfter) +
      " after",
    "with the quota, after: min(X, N ÷ R', c ÷ R') = min(" + F(x) + ", " + F(rate) + ", " + F(capAfter) + ") = " + about(after) + F(after) + " a second",
  ];
  if (growth > 0) {
    q.steps.push(
      "without it: X − c ÷ R' = " + F(x) + " − " + F(capAfter) + " = " + about(growth) + F(growth) + " more a second join the origin's queue than leave it",
    );
  } else {
    q.steps.push("without it: X ≤ c ÷ R', so the origin keeps up and its queue does not grow");
  }
  if (!Number.isNaN(late)) {
    if (late === 0) {
      q.steps.push("R' = " + F(releaseMS) + " ms is at or past the " + F(timeoutMS) + " ms timeout: every caller gives up at once");
    } else {
      q.steps.push(
        "a caller waits (timeout − R') × (c ÷ R') ÷ growth = (" +
          F(timeoutMS) +
          " − " +
          F(releaseMS) +
          ") ms × " +
          F(capAfter) +
          " ÷ " +
          F(growth) +
          " = " +
          about(late) +
          F(late) +
          " s after the release before the queue alone outlasts its timeout",
      );
    }
  }

  const ns = F(n);
  let s =
    "A quota of N = X × R = " +
    about(n) +
    ns +
    " " +
    plural(ns, "request", "requests") +
    " in flight. After the release the origin's " +
    F(workers) +
    " " +
    plural(F(workers), "worker serves", "workers serve") +
    " at most " +
    about(capAfter) +
    F(capAfter) +
    " a second (" +
    about(capBefore) +
    F(capBefore) +
    " before); the quota holds the client to " +
    about(after) +
    F(after) +
    " a second";
  if (after < x) s += " and turns " + about(x - after) + F(x - after) + " a second away";
  if (q.quota_late) s += ", but each answer takes " + about(latency) + F(latency) + " ms, past the " + F(timeoutMS) + " ms timeout.";
  else s += ", each answered in " + about(latency) + F(latency) + " ms.";
  if (growth > 0 && !Number.isNaN(late) && late === 0) {
    s +=
      " Without it, the origin's queue grows by " +
      about(growth) +
      F(growth) +
      " a second and every caller gives up: " +
      F(releaseMS) +
      " ms of work alone passes the timeout.";
  } else if (growth > 0 && !Number.isNaN(late)) {
    s +=
      " Without it, the origin's queue grows by " +
      about(growth) +
      F(growth) +
      " a second, and from " +
      about(late) +
      F(late) +
      " s after the release every caller gives up before its answer while the origin stays busy.";
  } else if (growth > 0) {
    s += " Without it, the origin's queue grows by " + about(growth) + F(growth) + " a second and each answer comes later than the one before.";
  } else if (!Number.isNaN(late)) {
    s += " Without it, the origin keeps up, but " + F(releaseMS) + " ms of work alone passes the " + F(timeoutMS) + " ms timeout.";
  } else {
    s += " Without it, the origin keeps up as well: " + F(x) + " a second is within what it serves.";
  }
  q.sentence = s;
  return q;
}

/**
 * aimd: an AIMD limit against a capacity step (Go's AIMDLimit). Every
 * interval, L ≤ C(t) grows L by increase, else cuts it to max(floor, L ×
 * backoff), unrounded; C is capacity_before until step_s, then
 * capacity_after.
 */
export function aimd({ capacity_before: c1, capacity_after: c2, step_s: stepS, increase, backoff, interval_ms: intervalMS, floor, duration_s: durationS }) {
  const F = formatNumber;
  const r = {
    capacity_before: c1,
    capacity_after: c2,
    step_s: stepS,
    increase,
    backoff,
    interval_ms: intervalMS,
    floor,
    duration_s: durationS,
    time_s: [],
    limit: [],
    capacity: [],
    stepped: false,
    min_after: NaN,
    max_after: NaN,
    tail_from_s: NaN,
    mean_limit: NaN,
    delivered_pct: NaN,
    settle_s: NaN,
    floored: false,
    sentence: "",
  };
  let n = Math.floor((durationS * 1000) / intervalMS + 1e-9);
  if (n < 1) n = 1;
  const eps = 1e-9;
  let l = c1; // the limit had found the capacity before the step
  for (let k = 0; k < n; k++) {
    const t = (k * intervalMS) / 1000;
    const c = t >= stepS - eps ? c2 : c1;
    r.time_s.push(t);
    r.limit.push(l);
    r.capacity.push(c);
    if (l <= c + eps * Math.max(1, c)) l += increase;
    else l = Math.max(floor, l * backoff);
  }
  if (stepS >= durationS - eps) {
    r.message = "The step at " + F(stepS) + " s is at or after the end of the " + F(durationS) + " s shown: move it earlier or show longer.";
    r.sentence = r.message;
    return r;
  }
  r.stepped = true;
  const tail = stepS + (durationS - stepS) / 2;
  r.tail_from_s = tail;
  let lo = Infinity;
  let hi = -Infinity;
  let sum = 0;
  let got = 0;
  let count = 0;
  for (let k = 0; k < n; k++) {
    const t = r.time_s[k];
    const lk = r.limit[k];
    const ck = r.capacity[k];
    if (t < stepS - eps) continue;
    lo = Math.min(lo, lk);
    hi = Math.max(hi, lk);
    if (lk <= floor + eps * Math.max(1, floor)) r.floored = true;
    if (Number.isNaN(r.settle_s) && k > 0 && r.time_s[k - 1] >= stepS - eps && lk < r.limit[k - 1] && lk <= c2 + eps * Math.max(1, c2)) {
      r.settle_s = t - stepS;
    }
    if (t >= tail - eps) {
      sum += lk;
      got += Math.min(lk, ck);
      count++;
    }
  }
  r.min_after = lo;
  r.max_after = hi;
  if (count > 0) {
    r.mean_limit = sum / count;
    r.delivered_pct = (100 * got) / count / c2;
  }
  let s = "The capacity steps from " + F(c1) + " to " + F(c2) + " at " + F(stepS) + " s. ";
  if (Number.isNaN(r.settle_s)) s += "The limit has not settled under the new capacity by " + F(durationS) + " s";
  else s += "The limit settles " + about(r.settle_s) + F(r.settle_s) + " s after the step";
  s += "; from the step on it runs between " + about(lo) + F(lo) + " and " + about(hi) + F(hi) + ".";
  if (count > 0) {
    s +=
      " Over the last half after the step its mean is " +
      about(r.mean_limit) +
      F(r.mean_limit) +
      ", and it lets in " +
      about(r.delivered_pct) +
      F(r.delivered_pct) +
      "% of the new capacity.";
  }
  if (r.floored) s += " It falls to its floor of " + F(floor) + " on the way: a collapse, not a search.";
  r.sentence = s;
  return r;
}

/** RETRY_CURVE_STEPS: the retry curve's grid, p = i / RETRY_CURVE_STEPS for i = 0 … RETRY_CURVE_STEPS. */
export const RETRY_CURVE_STEPS = 100;

// retryAttempts is 1 + p + … + p^r, summed term by term (r is at most 10),
// so p = 1 needs no case of its own.
function retryAttempts(p, r) {
  let a = 0;
  let term = 1;
  for (let k = 0; k <= r; k++) {
    a += term;
    term *= p;
  }
  return a;
}

// budgeted is the attempts with a budget b: at most 1 + b, none when b = 0.
const budgeted = (unbudgeted, b) => (b > 0 ? Math.min(unbudgeted, 1 + b) : unbudgeted);

// powerSeries writes 1 + p + … + p^r for a sentence, with superscripts.
function powerSeries(r) {
  const digits = ["⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"];
  const sup = (n) => (n >= 10 ? digits[Math.floor(n / 10)] + digits[n % 10] : digits[n]);
  switch (r) {
    case 0:
      return "1";
    case 1:
      return "1 + p";
    case 2:
      return "1 + p + p²";
    case 3:
      return "1 + p + p² + p³";
  }
  return "1 + p + … + p" + sup(r);
}

/**
 * retryAmplification: retries against a failing service (Go's
 * RetryAmplification). Without a budget a request sends 1 + p + … + p^r
 * attempts (r + 1 at p = 1); with a budget b > 0 at most 1 + b. The load
 * on the service is 100 × utilisation × attempts percent of its capacity.
 */
export function retryAmplification({ p, retries, budget, utilisation }) {
  const F = formatNumber;
  const r = Math.trunc(retries);
  const un = retryAttempts(p, r);
  const att = budgeted(un, budget);
  const load = 100 * utilisation * att;
  const res = {
    p,
    retries,
    budget,
    utilisation,
    unbudgeted: un,
    attempts: att,
    capped: att < un * (1 - 1e-12),
    load_pct: load,
    over: load > 100 * (1 + 1e-12),
    curve_p: [],
    curve_unbudgeted: [],
    curve_attempts: [],
    sentence: "",
  };
  for (let i = 0; i <= RETRY_CURVE_STEPS; i++) {
    const x = i / RETRY_CURVE_STEPS;
    const u = retryAttempts(x, r);
    res.curve_p.push(x);
    res.curve_unbudgeted.push(u);
    res.curve_attempts.push(budgeted(u, budget));
  }
  const rs = F(retries);
  let s = "Each attempt fails with chance " + F(p) + " and a failed one is retried up to " + rs + " " + plural(rs, "time", "times") + ": ";
  if (r === 0) {
    s = "Each attempt fails with chance " + F(p) + " and none is retried: a request sends 1 attempt.";
  } else if (budget > 0 && res.capped) {
    s +=
      "without a budget a request would send " +
      about(un) +
      F(un) +
      " attempts (" +
      powerSeries(r) +
      "); the retry budget of " +
      F(budget) +
      " holds it to " +
      about(att) +
      F(att) +
      ".";
  } else if (budget > 0) {
    s +=
      "a request sends " +
      about(un) +
      F(un) +
      " " +
      plural(F(un), "attempt", "attempts") +
      " (" +
      powerSeries(r) +
      "), within the retry budget of " +
      F(budget) +
      ".";
  } else {
    s += "a request sends " + about(un) + F(un) + " " + plural(F(un), "attempt", "attempts") + " (" + powerSeries(r) + ").";
  }
  s += " Offered " + F(100 * utilisation) + "% of its capacity in first attempts, the service gets " + about(load) + F(load) + "% of it";
  if (res.over && utilisation > 1) s += ": over its capacity, as the first attempts alone are.";
  else if (res.over) s += ": over its capacity, which the first attempts alone are not.";
  else s += ": within its capacity.";
  res.sentence = s;
  return res;
}

// waitText writes a wait given in ms for a sentence: in seconds from 1 s
// up, in ms below, with "about" when the number shown is rounded.
function waitText(ms) {
  if (ms >= 1000) return about(ms / 1000) + formatNumber(ms / 1000) + " s";
  return about(ms) + formatNumber(ms) + " ms";
}

/**
 * lateScaling: capacity that lands late (Go's LateScaling). Demand λ
 * against μ1 builds a backlog B = max(0, λ − μ1) × L by the landing; it
 * drains in B ÷ (μ2 − λ) (never when μ2 ≤ λ); the request arriving at the
 * landing waits B ÷ μ2, the longest wait is B ÷ λ, for the request
 * arriving at μ1 × L ÷ λ; the timeout marks the arrivals that wait past it.
 */
export function lateScaling({ demand: lam, capacity_before: mu1, capacity_after: mu2, lag_s: lag, timeout_ms: timeoutMS }) {
  const F = formatNumber;
  const s = {
    demand: lam,
    capacity_before: mu1,
    capacity_after: mu2,
    lag_s: lag,
    timeout_ms: timeoutMS,
    backlog: 0,
    growth_after: 0,
    drains: false,
    drain_s: NaN,
    drained_at_s: NaN,
    landing_wait_ms: 0,
    worst_wait_ms: NaN,
    peak_at_s: NaN,
    late_from_s: NaN,
    late_until_s: NaN,
    late_s: NaN,
    sentence: "",
  };
  const rise = Math.max(0, lam - mu1);
  const b = rise * lag;
  const net = mu2 - lam;
  s.backlog = b;
  s.growth_after = Math.max(0, -net);
  s.landing_wait_ms = (1000 * b) / mu2;
  let drain = NaN;
  if (net > 0) drain = b / net;
  else if (net === 0 && b === 0) drain = 0;
  if (!Number.isNaN(drain)) {
    s.drains = true;
    s.drain_s = drain;
    s.drained_at_s = lag + drain;
  }
  // Waits rise from 0 to B ÷ λ for the request arriving at μ1 × L ÷ λ,
  // which μ1 serves just at the landing, then fall by (μ2 − λ) ÷ μ2 a
  // second of arrival, to 0 when the backlog is gone.
  if (net < 0) {
    // waits grow without end
  } else if (b > 0) {
    s.worst_wait_ms = (1000 * b) / lam;
    s.peak_at_s = (mu1 * lag) / lam;
  } else s.worst_wait_ms = 0;
  if (timeoutMS > 0) {
    const t = timeoutMS / 1000;
    if (net >= 0 && s.worst_wait_ms <= timeoutMS) {
      s.late_s = 0;
    } else if (b > 0) {
      const peak = b / lam;
      const peakAt = (mu1 * lag) / lam;
      s.late_from_s = t < peak ? (t * mu1) / rise : peakAt + ((t - peak) * mu2) / -net;
      if (net > 0) {
        const until = lag + drain - (t * mu2) / net;
        s.late_until_s = until;
        s.late_s = Math.max(0, until - s.late_from_s);
      }
    } else {
      s.late_from_s = lag + (t * mu2) / -net;
    }
  }

  let txt;
  if (b > 0) {
    txt =
      "Demand of " +
      F(lam) +
      " a second against " +
      F(mu1) +
      " a second of capacity builds a backlog of " +
      about(b) +
      F(b) +
      " requests in the " +
      F(lag) +
      " s before the new capacity lands.";
    if (net > 0) {
      txt +=
        " At " +
        F(mu2) +
        " a second it drains " +
        F(net) +
        " a second and is gone " +
        about(drain) +
        F(drain) +
        " s after the landing (" +
        about(lag + drain) +
        F(lag + drain) +
        " s from the start). A request arriving at the landing waits " +
        waitText(s.landing_wait_ms) +
        "; the longest wait, " +
        waitText(s.worst_wait_ms) +
        ", is for one arriving at " +
        about(s.peak_at_s) +
        F(s.peak_at_s) +
        " s, before the landing.";
    } else if (net === 0) {
      txt +=
        " At " +
        F(mu2) +
        " a second the new capacity only matches the demand: the backlog never drains, and every request arriving from " +
        about(s.peak_at_s) +
        F(s.peak_at_s) +
        " s on waits " +
        waitText(s.worst_wait_ms) +
        ".";
    } else {
      txt +=
        " At " +
        F(mu2) +
        " a second the new capacity is still below the demand: the backlog grows by " +
        F(-net) +
        " a second after the landing and never drains, and waits grow without end.";
    }
  } else {
    txt =
      rise === 0
        ? "Demand of " + F(lam) + " a second is within the " + F(mu1) + " a second of capacity before the landing: no backlog builds"
        : "The new capacity lands at once: no backlog builds";
    if (net >= 0) txt += " and no request waits.";
    else {
      txt +=
        ", but at " +
        F(mu2) +
        " a second the capacity after the landing is below the demand: from the landing at " +
        F(lag) +
        " s the backlog grows by " +
        F(-net) +
        " a second and waits grow without end.";
    }
  }
  if (timeoutMS > 0) {
    const tt = waitText(timeoutMS);
    if (s.late_s === 0 && s.worst_wait_ms > 0) txt += " No wait passes the " + tt + " timeout.";
    else if (Number.isFinite(s.late_s) && s.late_s > 0) {
      txt +=
        " With a " +
        tt +
        " timeout, requests arriving from " +
        about(s.late_from_s) +
        F(s.late_from_s) +
        " s to " +
        about(s.late_until_s) +
        F(s.late_until_s) +
        " s wait past it: " +
        about(s.late_s) +
        F(s.late_s) +
        " s of arrivals.";
    } else if (Number.isFinite(s.late_from_s)) {
      txt += " With a " + tt + " timeout, every request arriving from " + about(s.late_from_s) + F(s.late_from_s) + " s on waits past it.";
    }
  }
  s.sentence = txt;
  return s;
}

const finite = (x) => typeof x === "number" && Number.isFinite(x);

/**
 * compute returns the same shape as Go's model.Result for any kind: quota,
 * aimd, retry-amplification and late-scaling here, the rest from model.js.
 */
export function compute(kind, values, solve = "") {
  let r;
  const res = { kind, values: { ...values }, sentence: "", quantities: {} };
  const put = (names, from) => {
    for (const n of names) if (finite(from[n])) res.quantities[n] = from[n];
  };
  switch (kind) {
    case "quota":
      res.solve = solve || "quota";
      r = quota(values, res.solve);
      res.quota = r;
      put(["arrivals", "latency_ms", "quota", "release_ms", "workers", "timeout_ms", "capacity_before", "capacity_after", "quota_rate"], r);
      put(["with_quota_before", "with_quota_after", "refused_after", "quota_latency_ms", "without_quota_after", "queue_growth", "late_after_s"], r);
      break;
    case "aimd":
      r = aimd(values);
      res.aimd = r;
      put(["capacity_before", "capacity_after", "step_s", "increase", "backoff", "interval_ms", "floor", "duration_s"], r);
      put(["mean_limit", "delivered_pct", "min_after", "max_after", "settle_s"], r);
      break;
    case "retry-amplification":
      r = retryAmplification(values);
      res.retry_amplification = r;
      put(["p", "retries", "budget", "utilisation", "attempts"], r);
      if (finite(r.unbudgeted)) res.quantities.attempts_no_budget = r.unbudgeted;
      put(["load_pct"], r);
      break;
    case "late-scaling":
      r = lateScaling(values);
      res.late_scaling = r;
      put(["demand", "capacity_before", "capacity_after", "lag_s", "timeout_ms"], r);
      put(["backlog", "drain_s", "landing_wait_ms", "worst_wait_ms", "late_s"], r);
      break;
    default:
      return computeBase(kind, values, solve);
  }
  res.sentence = r.sentence;
  return res;
}
