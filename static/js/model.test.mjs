// Checks static/js/model.js against the vectors go test also reads:
// node --test static/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { goalReached, formatNumber, roundLimit } from "./model.js";
import { compute } from "./modellimits.js";

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
