// modellimits.js: the in-flight quota and AIMD models for the widget pages,
// mirroring model/quota.go and model/aimd.go line for line (same formulas,
// rounding and sentences; held to model/testdata/vectors.json). Apart from
// model.js so that a page without these widgets does not load them:
// widgets.js imports this module only when the page has one. Its compute
// covers every kind, these two and model.js's.

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

const finite = (x) => typeof x === "number" && Number.isFinite(x);

/**
 * compute returns the same shape as Go's model.Result for any kind: quota
 * and aimd here, the rest from model.js.
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
    default:
      return computeBase(kind, values, solve);
  }
  res.sentence = r.sentence;
  return res;
}
