// modeltail.js: the models of variability and the tail for the widget
// pages: the wait under variable arrivals and service times
// (Pollaczek–Khinchine and Kingman), the slowest of a fan-out, and the
// Universal Scalability Law, mirroring model/variability.go,
// model/fanout.go and model/usl.go line for line (same formulas, rounding
// and sentences; held to model/testdata/vectors.json). Apart from
// model.js so that a page without these widgets does not load them:
// widgets.js imports this module only when the page has one. Its compute
// covers these three kinds and model.js's.

import { about, compute as computeBase, CURVE_LAST, CURVE_STEPS, formatNumber, mmcMeanWait, plural } from "./model.js";

/** The kinds this module computes. */
export const TAIL_KINDS = ["variability-wait", "fanout-tail", "usl"];

// variabilitySentence reads the variability-wait result back (Go's
// variabilitySentence).
function variabilitySentence(v) {
  const F = formatNumber;
  const c = F(v.servers);
  const s = F(v.service_ms);
  const ca2 = v.arrival_scv;
  const cs2 = v.service_scv;
  const lam = v.arrivals;
  let txt =
    c +
    " " +
    plural(c, "server", "servers") +
    " taking " +
    s +
    " ms on average, " +
    F(100 * v.utilisation) +
    "% busy (" +
    about(lam) +
    F(lam) +
    " " +
    plural(F(lam), "request", "requests") +
    " a second)";
  txt += ca2 === 1 ? ", with Poisson arrivals" : ", with arrivals of variability ca² = " + F(ca2);
  if (cs2 === 0) txt += " and constant service times";
  else if (cs2 === 1) txt += " and exponential service times (cs² = 1)";
  else txt += " and service times of variability cs² = " + F(cs2);
  if (v.utilisation === 0) return txt + ": no request waits; each takes its " + s + " ms of service.";
  const w = v.mean_wait_ms;
  const r = v.mean_response_ms;
  txt += ": a request waits " + about(w) + F(w) + " ms on average before its service and spends " + about(r) + F(r) + " ms in all.";
  const mw = v.mmc_wait_ms;
  const mmcName = "M/M/" + c;
  switch (v.method) {
    case "pollaczek-khinchine":
      txt += " That is Pollaczek–Khinchine's formula, exact for one server with Poisson arrivals: ρ·S·(1 + cs²) ÷ (2(1 − ρ)).";
      break;
    case "erlang-c":
      txt += " That is the " + mmcName + " queue's wait from Erlang C, exact for Poisson arrivals and exponential service times.";
      break;
    case "deterministic":
      return txt + " With evenly spaced arrivals and constant service times no request ever waits: each finds a server free.";
    case "kingman":
      txt +=
        " That is Kingman's approximation, not an exact result: (ca² + cs²) ÷ 2 = " +
        F((ca2 + cs2) / 2) +
        " times the M/M/1 queue's wait, " +
        about(mw) +
        F(mw) +
        " ms.";
      break;
    default:
      txt +=
        " That is Kingman's approximation (Allen and Cunneen's, for several servers), not an exact result: (ca² + cs²) ÷ 2 = " +
        F((ca2 + cs2) / 2) +
        " times the " +
        mmcName +
        " queue's wait, " +
        about(mw) +
        F(mw) +
        " ms.";
  }
  const cw = v.constant_wait_ms;
  const ratio = v.wait_ratio;
  if (cs2 === 0) txt += " The service times are constant here: any variability in them would add to the wait.";
  else if (ca2 === 0) {
    txt +=
      " With constant service times, as well as evenly spaced arrivals, no request would wait: all of this wait comes from the service times' variability.";
  } else {
    txt +=
      " With constant service times it would wait " +
      about(cw) +
      F(cw) +
      " ms: their variability makes the wait " +
      about(ratio) +
      F(ratio) +
      " times as long at the same load.";
  }
  return txt;
}

/**
 * variabilityWait: the mean wait in queue of c servers at utilisation ρ
 * when arrivals and service times vary (Go's VariabilityWait):
 * (ca² + cs²) ÷ 2 times the M/M/c wait, exactly Pollaczek–Khinchine for
 * one server and Poisson arrivals, exactly M/M/c for ca² = cs² = 1, else
 * Kingman's approximation.
 */
export function variabilityWait({ servers, service_ms: serviceMS, utilisation: rho, arrival_scv: ca2, service_scv: cs2 }) {
  const c = Math.trunc(servers);
  const v = {
    servers,
    service_ms: serviceMS,
    utilisation: rho,
    arrival_scv: ca2,
    service_scv: cs2,
    arrivals: (rho * servers * 1000) / serviceMS,
    method: "",
    exact: false,
    mmc_wait_ms: 0,
    mean_wait_ms: 0,
    mean_response_ms: 0,
    constant_wait_ms: 0,
    wait_ratio: NaN,
    curve_rho: [],
    curves: [],
    sentence: "",
  };
  if (servers === 1 && ca2 === 1) [v.method, v.exact] = ["pollaczek-khinchine", true];
  else if (ca2 === 1 && cs2 === 1) [v.method, v.exact] = ["erlang-c", true];
  else if (ca2 === 0 && cs2 === 0) [v.method, v.exact] = ["deterministic", true];
  else if (servers === 1) v.method = "kingman";
  else v.method = "allen-cunneen";
  const mmcWait = mmcMeanWait(c, serviceMS, rho);
  const wait = ((ca2 + cs2) / 2) * mmcWait;
  v.mmc_wait_ms = mmcWait;
  v.mean_wait_ms = wait;
  v.mean_response_ms = wait + serviceMS;
  v.constant_wait_ms = (ca2 / 2) * mmcWait;
  if (ca2 > 0) v.wait_ratio = (ca2 + cs2) / ca2;
  else if (cs2 > 0) v.wait_ratio = Infinity;
  // The curves always drawn: constant service (0), exponential (1) and
  // twice that (2); the learner's own is added when it is none of them.
  const family = [0, 1, 2];
  if (!family.includes(cs2)) {
    family.push(cs2);
    family.sort((a, b) => a - b);
  }
  const base = [];
  for (let i = 0; i <= CURVE_LAST; i++) {
    const r = i / CURVE_STEPS;
    v.curve_rho.push(r);
    base.push(mmcMeanWait(c, serviceMS, r));
  }
  for (const s of family) v.curves.push({ service_scv: s, wait_ms: base.map((w) => ((ca2 + s) / 2) * w), chosen: s === cs2 });
  v.sentence = variabilitySentence(v);
  return v;
}

/** FANOUT_CURVE_STEPS: the fan-out curve's steps from 0 to its end; it starts at k = 1. */
export const FANOUT_CURVE_STEPS = 100;

// slowShare is 1 − (1 − p)^k as −expm1(k·log1p(−p)).
function slowShare(p, k) {
  if (p === 0) return 0;
  return -Math.expm1(k * Math.log1p(-p));
}

/** fanoutCurveEnd: 100 up to k = 100, else k rounded up to a whole hundred. */
export function fanoutCurveEnd(k) {
  return k <= 100 ? 100 : 100 * Math.ceil(k / 100);
}

// halfSlowFanout is the least whole k ≥ 1 with 1 − (1 − p)^k ≥ 0.5, NaN for p = 0.
function halfSlowFanout(p) {
  if (p === 0) return NaN;
  if (p >= 0.5) return 1;
  let k = Math.max(1, Math.ceil(Math.log(0.5) / Math.log1p(-p) - 1e-9));
  if (slowShare(p, k) < 0.5) k++;
  return k;
}

/**
 * percentileName writes a share below 1 as a percentile's name with two
 * significant digits of the share above it (Go's PercentileName):
 * [approx, name], approx "about " when the name is rounded.
 */
export function percentileName(q) {
  const above = 100 * (1 - q);
  let d = 0;
  for (let t = above; t < 10 && d < 12; t *= 10) d++;
  let p = 1;
  for (let i = 0; i < d; i++) p *= 10;
  const r = Math.floor(100 * q * p + 0.5) / p;
  let s = r.toFixed(d);
  if (s.includes(".")) s = s.replace(/0+$/, "").replace(/\.$/, "");
  return [Math.abs(r - 100 * q) > 1e-9 * 100 * q ? "about " : "", "p" + s];
}

/**
 * fanoutTail: a request that fans out to k sub-requests, each slow with
 * chance p, is slow with chance 1 − (1 − p)^k; its P-th percentile is
 * each backend's P^(1/k)-th (Go's FanoutTail).
 */
export function fanoutTail({ fanout: k, p, percentile }) {
  const F = formatNumber;
  const slow = slowShare(p, k);
  const f = {
    fanout: k,
    p,
    percentile,
    slow_share: slow,
    median_backend_percentile: Math.pow(0.5, 1 / k),
    backend_percentile: Math.pow(percentile, 1 / k),
    half_slow_fanout: halfSlowFanout(p),
    curve_k: [1],
    curve_slow: [slowShare(p, 1)],
    sentence: "",
  };
  const end = fanoutCurveEnd(k);
  for (let i = 1; i <= FANOUT_CURVE_STEPS; i++) {
    const x = (i * end) / FANOUT_CURVE_STEPS;
    if (x > 1) {
      f.curve_k.push(x);
      f.curve_slow.push(slowShare(p, x));
    }
  }
  const ks = F(k);
  let txt = "A request that fans out to " + ks + " " + plural(ks, "sub-request", "sub-requests") + " at once waits for the slowest";
  if (p === 0) txt += ", but no sub-request is ever slow here, so no request is.";
  else if (k === 1) txt += ", its only one: it is slow with the sub-request's own chance, " + F(100 * p) + "%.";
  else {
    txt +=
      ": it is slow if any of them is. If each is slow with chance " +
      F(p) +
      ", " +
      about(100 * slow) +
      F(100 * slow) +
      "% of requests are slow (1 − (1 − p)^k).";
  }
  if (k === 1) txt += " Its percentiles are the backend's own.";
  else {
    const [medAbout, medName] = percentileName(f.median_backend_percentile);
    const [, pctName] = percentileName(percentile);
    const [needAbout, needName] = percentileName(f.backend_percentile);
    txt +=
      " The requests' median is " +
      medAbout +
      "each backend's " +
      medName +
      " (0.5^(1/k)), and their " +
      pctName +
      " is " +
      needAbout +
      "each backend's " +
      needName +
      " (" +
      F(percentile) +
      "^(1/k)).";
  }
  const h = f.half_slow_fanout;
  if (p === 0) {
    // no fan-out makes a request slow
  } else if (h === 1) txt += " Half the requests or more are slow with a single sub-request.";
  else txt += " Half the requests or more are slow from " + F(h) + " sub-requests on.";
  f.sentence = txt;
  return f;
}

/** uslThroughput is X(N) = λN ÷ (1 + σ(N − 1) + κN(N − 1)). */
export function uslThroughput(lambda, sigma, kappa, n) {
  return (lambda * n) / (1 + sigma * (n - 1) + kappa * n * (n - 1));
}

/** uslPeak: √((1 − σ) ÷ κ), at least 1, when κ > 0; Infinity when κ = 0 and σ ≤ 1; 1 when σ > 1. */
export function uslPeak(sigma, kappa) {
  if (kappa > 0) return Math.max(1, Math.sqrt(Math.max(0, 1 - sigma) / kappa));
  if (sigma > 1) return 1;
  return Infinity;
}

/**
 * usl: Gunther's Universal Scalability Law (Go's UniversalScalability):
 * X(N) for N = 1 … N max, the peak N* = √((1 − σ) ÷ κ) (none when κ = 0)
 * and X at N max.
 */
export function usl({ lambda, sigma, kappa, n_max: nMax }) {
  const F = formatNumber;
  const peak = uslPeak(sigma, kappa);
  const u = {
    lambda,
    sigma,
    kappa,
    n_max: nMax,
    has_peak: peak !== Infinity,
    peak_n: peak,
    peak_x: NaN,
    x_at_max: 0,
    speedup_at_max: 0,
    retrograde: false,
    curve_n: [],
    curve_x: [],
    curve_linear: [],
    sentence: "",
  };
  if (u.has_peak) u.peak_x = uslThroughput(lambda, sigma, kappa, peak);
  const xMax = uslThroughput(lambda, sigma, kappa, nMax);
  u.x_at_max = xMax;
  u.speedup_at_max = xMax / lambda;
  u.retrograde = u.has_peak && nMax > peak;
  for (let n = 1; n <= Math.trunc(nMax); n++) {
    u.curve_n.push(n);
    u.curve_x.push(uslThroughput(lambda, sigma, kappa, n));
    u.curve_linear.push(lambda * n);
  }
  const ns = F(nMax);
  const clients = ns + " " + plural(ns, "client", "clients");
  const speed = u.speedup_at_max;
  let txt = "One client alone does " + F(lambda) + " a second. ";
  if (sigma === 0 && kappa === 0) {
    txt +=
      "With neither contention nor coherency costs throughput grows in proportion to the clients, with no peak: " +
      clients +
      " do " +
      about(xMax) +
      F(xMax) +
      " a second.";
  } else if (kappa === 0 && sigma === 1) {
    txt +=
      "With complete contention (σ = 1) and no coherency cost (κ = 0) the clients take turns: throughput stays at one client's " +
      F(lambda) +
      " a second whatever their number, with no peak.";
  } else if (kappa === 0) {
    const ceiling = lambda / sigma;
    txt +=
      "With contention σ = " +
      F(sigma) +
      " and no coherency cost (κ = 0) there is no peak: throughput rises for ever towards λ ÷ σ = " +
      about(ceiling) +
      F(ceiling) +
      " a second (Amdahl's law) without reaching it. " +
      clients +
      " do " +
      about(xMax) +
      F(xMax) +
      " a second, " +
      about(speed) +
      F(speed) +
      " times one client's work.";
  } else {
    const px = u.peak_x;
    const pn = peak;
    txt += "With contention σ = " + F(sigma) + " and coherency κ = " + F(kappa) + ", throughput peaks at ";
    if (pn === 1) txt += "a single client, " + F(px) + " a second: every client added lowers it.";
    else {
      txt +=
        about(px) +
        F(px) +
        " a second with " +
        about(pn) +
        F(pn) +
        " clients (N* = √((1 − σ) ÷ κ)), " +
        about(px / lambda) +
        F(px / lambda) +
        " times one client's work.";
    }
    if (u.retrograde) {
      const below = 100 * (1 - xMax / px);
      txt +=
        " " +
        clients +
        " do " +
        about(xMax) +
        F(xMax) +
        " a second, " +
        about(below) +
        F(below) +
        "% below the peak: past it, each client added costs more in coherency than it brings.";
    } else if (nMax < pn) {
      txt += " " + clients + ", short of the peak, do " + about(xMax) + F(xMax) + " a second, " + about(speed) + F(speed) + " times one client's work.";
    }
  }
  u.sentence = txt;
  return u;
}

const finite = (x) => typeof x === "number" && Number.isFinite(x);

/**
 * compute returns the same shape as Go's model.Result for any of
 * TAIL_KINDS, and model.js's kinds through its compute.
 */
export function compute(kind, values, solve = "") {
  let r;
  const res = { kind, values: { ...values }, sentence: "", quantities: {} };
  const put = (names, from) => {
    for (const n of names) if (finite(from[n])) res.quantities[n] = from[n];
  };
  switch (kind) {
    case "variability-wait":
      r = variabilityWait(values);
      res.variability_wait = r;
      put(["servers", "service_ms", "utilisation", "arrival_scv", "service_scv"], r);
      put(["arrivals", "mean_wait_ms", "mean_response_ms", "mmc_wait_ms", "constant_wait_ms", "wait_ratio"], r);
      break;
    case "fanout-tail":
      r = fanoutTail(values);
      res.fanout_tail = r;
      put(["fanout", "p", "percentile", "slow_share", "median_backend_percentile", "backend_percentile", "half_slow_fanout"], r);
      break;
    case "usl":
      r = usl(values);
      res.usl = r;
      put(["lambda", "sigma", "kappa", "n_max", "peak_n", "peak_x", "x_at_max", "speedup_at_max"], r);
      break;
    default:
      return computeBase(kind, values, solve);
  }
  res.sentence = r.sentence;
  return res;
}
