// Checks static/js/model.js against the vectors go test also reads:
// node --test static/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { goalReached, formatNumber, queueCurve, roundLimit } from "./model.js";
import { compute as computeLimits, lateScaling, retryAmplification, RETRY_CURVE_STEPS } from "./modellimits.js";
import { compute as computeTail, fanoutTail, percentileName, TAIL_KINDS, usl, uslPeak, variabilityWait } from "./modeltail.js";

// compute covers every kind, as widgets.js's does: modeltail.js's kinds
// there, the rest through modellimits.js (which covers model.js's too).
const compute = (kind, values, solve) => (TAIL_KINDS.includes(kind) ? computeTail : computeLimits)(kind, values, solve);

const file = fileURLToPath(new URL("../../model/testdata/vectors.json", import.meta.url));
const { tolerance, vectors } = JSON.parse(readFileSync(file, "utf8"));

// match returns every difference between want and got, by the rules in the
// vectors file: objects are subsets, numbers within tolerance, null exact.
function match(path, want, got) {
  if (want === null) return got === null ? [] : [`${path}: got ${JSON.stringify(got)}, want null`];
  if (typeof want === "number") {
    const ok = typeof got === "number" && Math.abs(got - want) <= tolerance.absolute + tolerance.relative * Math.abs(want);
    return ok ? [] : [`${path}: got ${JSON.stringify(got)}, want ${want}`];
  }
  if (typeof want === "string" || typeof want === "boolean") {
    return got === want ? [] : [`${path}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`];
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) return [`${path}: got ${JSON.stringify(got)}, want an array of ${want.length}`];
    return want.flatMap((w, i) => match(`${path}[${i}]`, w, got[i]));
  }
  const keys = Object.keys(want).sort();
  if (Array.isArray(got)) {
    return keys.flatMap((k) => {
      if (k === "$len") return got.length === want[k] ? [] : [`${path}.$len: got ${got.length}, want ${want[k]}`];
      const i = Number(k);
      if (!Number.isInteger(i) || i < 0 || i >= got.length) return [`${path}[${k}]: no such element in ${got.length}`];
      return match(`${path}[${i}]`, want[k], got[i]);
    });
  }
  if (got === null || typeof got !== "object") return [`${path}: got ${JSON.stringify(got)}, want an object`];
  return keys.flatMap((k) => (k in got ? match(`${path}.${k}`, want[k], got[k]) : [`${path}.${k}: missing`]));
}

// JSON round trip: Infinity and NaN become null, as Go's model.Num writes them.
const asJSON = (v) => JSON.parse(JSON.stringify(v));

test("the vectors file has vectors and a tolerance", () => {
  assert.ok(vectors.length > 0);
  assert.ok(tolerance.relative > 0);
});

for (const v of vectors) {
  test(`${v.name}: ${v.why}`, () => {
    assert.ok(v.expect || v.expect_goal, "vector needs expect or expect_goal");
    const res = compute(v.kind, v.values, v.solve || "");
    if (v.expect) assert.deepEqual(match("result", v.expect, asJSON(res)), []);
    if (v.expect_goal) assert.deepEqual(match("goal", v.expect_goal, asJSON(goalReached(res.quantities, v.targets))), []);
  });
}

test("match reports differences, so a passing vector means something", () => {
  const got = { a: 1, s: "x", n: 2, arr: [1, 2] };
  // A wrong number, a wrong string, a missing key, null against a number, a wrong length.
  for (const want of [{ a: 1.1 }, { s: "y" }, { zz: 1 }, { n: null }, { arr: { $len: 3 } }, { arr: [1] }]) {
    assert.notDeepEqual(match("r", want, got), [], JSON.stringify(want));
  }
  // A subset and an index that agree.
  assert.deepEqual(match("r", { a: 1, arr: { 1: 2 } }, got), []);
});

test("formatNumber follows the documented rules", () => {
  // [value, shown]: whole from 100, two decimals from 1, three significant digits below 1.
  const cases = [
    [11.040000000000001, "11.04"],
    [190.47619, "190"],
    [761.9047, "762"],
    [9.952380952, "9.95"],
    [0.047619, "0.0476"],
    [0, "0"],
    [-11, "-11"],
    [1e-6, "0.000001"],
    [1e-20, "0"],
    [Infinity, "∞"],
    [NaN, "undefined"],
    [2.5, "2.5"],
    [99.999, "100"],
  ];
  for (const [v, want] of cases) assert.equal(formatNumber(v), want, String(v));
});

test("roundLimit: down, so the last admitted is within budget, at least 1", () => {
  for (const [v, want] of [
    [9.952, 9],
    [72.67, 72],
    [2.5, 2],
    [4, 4],
    [2.9999999999999996, 3],
    [0.04, 1],
    [0.5, 1],
  ])
    assert.equal(roundLimit(v), want, String(v));
});

test("retryAmplification: the curve is the closed form (1 − p^(r+1)) ÷ (1 − p), r + 1 at p = 1, and a budget caps it at 1 + b", () => {
  for (const r of [0, 1, 3, 10]) {
    const res = retryAmplification({ p: 0.3, retries: r, budget: 0.25, utilisation: 1 });
    assert.equal(res.curve_p.length, RETRY_CURVE_STEPS + 1);
    res.curve_p.forEach((p, i) => {
      const want = p < 1 ? (1 - Math.pow(p, r + 1)) / (1 - p) : r + 1;
      assert.ok(Math.abs(res.curve_unbudgeted[i] - want) <= 1e-12 * want, `r=${r} p=${p}: ${res.curve_unbudgeted[i]} against ${want}`);
      assert.ok(res.curve_attempts[i] <= Math.min(1.25, res.curve_unbudgeted[i]) + 1e-12, `r=${r} p=${p}: the budget lets ${res.curve_attempts[i]} through`);
    });
    assert.equal(res.curve_unbudgeted[RETRY_CURVE_STEPS], r + 1);
  }
  // p = 1 with a budget of 0 (none): every retry is sent.
  const all = retryAmplification({ p: 1, retries: 10, budget: 0, utilisation: 0.1 });
  assert.equal(all.attempts, 11);
  assert.ok(all.over && Math.abs(all.load_pct - 110) < 1e-9);
});

test("lateScaling: the longest wait B ÷ λ passes the landing's B ÷ μ2 whenever μ2 > λ, and μ2 ≤ λ never drains", () => {
  for (const lam of [50, 120, 300]) {
    for (const mu2 of [lam - 10, lam, lam + 1, 2 * lam]) {
      const s = lateScaling({ demand: lam, capacity_before: lam / 2, capacity_after: mu2, lag_s: 30, timeout_ms: 1000 });
      const b = (lam / 2) * 30;
      assert.equal(s.backlog, b);
      assert.ok(Math.abs(s.landing_wait_ms - (1000 * b) / mu2) < 1e-9);
      if (mu2 > lam) {
        assert.ok(s.drains && Math.abs(s.drain_s - b / (mu2 - lam)) < 1e-9);
        assert.ok(s.worst_wait_ms > s.landing_wait_ms, `λ ${lam}, μ2 ${mu2}: longest ${s.worst_wait_ms}, at the landing ${s.landing_wait_ms}`);
      } else {
        assert.ok(!s.drains && Number.isNaN(s.drain_s) && Number.isNaN(s.late_s), `λ ${lam}, μ2 ${mu2} drains`);
        // Equal: the waits stop at B ÷ λ; under: no longest wait.
        assert.ok(mu2 === lam ? s.worst_wait_ms === (1000 * b) / lam : Number.isNaN(s.worst_wait_ms));
      }
      // JSON writes the missing figures as null, as Go does.
      const q = compute("late-scaling", { demand: lam, capacity_before: lam / 2, capacity_after: mu2, lag_s: 30, timeout_ms: 1000 }).quantities;
      assert.equal("drain_s" in q, mu2 > lam);
    }
  }
});

test("variabilityWait: Pollaczek–Khinchine for one server and Poisson arrivals, and the M/M/c wait of queueCurve when ca² = cs² = 1", () => {
  for (const rho of [0, 0.3, 0.7, 0.95]) {
    for (const cs2 of [0, 1, 2.5]) {
      const v = variabilityWait({ servers: 1, service_ms: 20, utilisation: rho, arrival_scv: 1, service_scv: cs2 });
      const pk = (rho * 20 * (1 + cs2)) / (2 * (1 - rho));
      assert.ok(Math.abs(v.mean_wait_ms - pk) <= 1e-12 * Math.max(1, pk), `ρ ${rho} cs² ${cs2}: ${v.mean_wait_ms} against ${pk}`);
      assert.equal(v.method, "pollaczek-khinchine");
    }
    for (const c of [2, 8, 64]) {
      if (rho === 0) continue;
      const v = variabilityWait({ servers: c, service_ms: 20, utilisation: rho, arrival_scv: 1, service_scv: 1 });
      const q = queueCurve({ servers: c, service_ms: 20, arrivals: (rho * c * 1000) / 20 });
      assert.ok(Math.abs(v.mean_wait_ms - q.at.mean_wait_ms) <= 1e-12 * q.at.mean_wait_ms, `c ${c} ρ ${rho}`);
      assert.ok(v.exact && v.method === "erlang-c");
    }
  }
  // Only the service times vary: the ratio to constant service is infinite, null in JSON and not a quantity.
  const only = compute("variability-wait", { servers: 1, service_ms: 20, utilisation: 0.5, arrival_scv: 0, service_scv: 2 });
  assert.equal(only.variability_wait.wait_ratio, Infinity);
  assert.ok(!("wait_ratio" in only.quantities));
});

test("fanoutTail: 100 backends each slow 1% of the time make 63.4% of requests slow; one backend gives p; percentiles never read p100", () => {
  assert.ok(Math.abs(fanoutTail({ fanout: 100, p: 0.01, percentile: 0.99 }).slow_share - 0.634) < 0.0005);
  for (const p of [0, 0.01, 0.5, 1]) assert.ok(Math.abs(fanoutTail({ fanout: 1, p, percentile: 0.99 }).slow_share - p) < 1e-15);
  for (const [q, want] of [
    [0.99, "p99"],
    [0.9930924954370359, "about p99.31"],
    [0.99999599800667366, "about p99.9996"],
    [0.5, "p50"],
  ])
    assert.equal(percentileName(q).join(""), want, String(q));
});

test("usl: the peak is where X is highest, and κ = 0 has none", () => {
  const u = usl({ lambda: 100, sigma: 0.05, kappa: 0.001, n_max: 64 });
  assert.ok(Math.abs(u.peak_n - Math.sqrt(950)) < 1e-9 && u.retrograde);
  for (const x of u.curve_x) assert.ok(x <= u.peak_x * (1 + 1e-12));
  assert.equal(uslPeak(0.05, 0), Infinity);
  const none = compute("usl", { lambda: 100, sigma: 0.05, kappa: 0, n_max: 64 });
  assert.ok(!none.usl.has_peak && !("peak_n" in none.quantities) && !("peak_x" in none.quantities));
});
