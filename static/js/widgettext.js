// widgettext.js: the widget helpers that must match web/widgetslider.go and widgetview.go word for
// word and number for number, kept apart from widgets.js (which needs a
// page) so node --test can check them against web/testdata/widget-vectors.json,
// as go test does.

import { formatNumber } from "./model.js";

/** niceCeil: the smallest 1, 2 or 5 × 10^k at or above v (v > 0), else 1. */
export function niceCeil(v) {
  return nice(v, true);
}

/** niceFloor: the largest 1, 2 or 5 × 10^k at or below v (v > 0), else 1. */
export function niceFloor(v) {
  return nice(v, false);
}

/**
 * nice walks the ladder 1, 2, 5, 10 × 10^k of the decade holding v, up to
 * the first rung at or above v, or down to the last at or below it
 * (chart.NiceCeil and chart.NiceFloor).
 */
function nice(v, up) {
  if (!(v > 0) || v === Infinity) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  const ladder = up ? [1, 2, 5, 10] : [10, 5, 2, 1];
  for (const m of ladder) {
    if (up ? m * p >= v * (1 - 1e-12) : m * p <= v * (1 + 1e-12)) return m * p;
  }
  return up ? 10 * p : p;
}

/**
 * sliderMax: the top of a range input for value v of a parameter
 * {min, max, step, default} with no goal on it: niceCeil of twice the
 * larger of v, the default and ten steps, at least min + step, at most max.
 */
export function sliderMax(p, v) {
  const base = Math.max(v, p.default, p.step * 10);
  return Math.min(p.max, Math.max(p.min + p.step, niceCeil(2 * base)));
}

/** sliderPixels: the narrowest a range input is laid out (web/widgetslider.go). */
export const sliderPixels = 250;

/** round12: v to 12 significant digits, without floating-point noise. */
export function round12(v) {
  return parseFloat(v.toPrecision(12));
}

/** goalStep: the slider step for a goal {value, tol} on parameter p. */
export function goalStep(p, t) {
  const on = (step, within) => {
    const near = p.min + Math.round((t.value - p.min) / step) * step;
    return Math.abs(near - t.value) <= within + 1e-9 * Math.max(1, Math.abs(t.value));
  };
  const nice = niceFloor(t.tol);
  if (nice >= p.step && on(nice, 0)) return nice;
  if (on(p.step, t.tol)) return p.step;
  return nice;
}

/**
 * sliderFor: a range input's {min, max, step} for value v of parameter p
 * and the goal's target t on it (null: none); the same rule as sliderFor
 * in web/widgetslider.go.
 */
export function sliderFor(p, v, t) {
  if (!t) return { min: p.min, max: sliderMax(p, v), step: p.step };
  const step = goalStep(p, t);
  const base = Math.max(v, p.default, step * 10, t.value + t.tol);
  const s = { min: p.min, max: Math.min(p.max, Math.max(p.min + step, niceCeil(2 * base))), step };
  const span = Math.floor((2 * t.tol * sliderPixels) / step) * step;
  if (s.max - s.min > span) {
    let lo = Math.max(p.min, p.min + Math.floor((t.value - span / 2 - p.min) / step) * step);
    const hi = Math.min(p.max, lo + span);
    if (hi - lo < span) lo = Math.max(p.min, p.min + Math.ceil((hi - span - p.min) / step) * step);
    s.min = lo;
    s.max = hi;
  }
  return { min: round12(s.min), max: round12(s.max), step: round12(s.step) };
}

/** withUnit: a number and its unit, a count's unit singular for one. */
function withUnit(v, unit) {
  if (!unit) return formatNumber(v);
  if (v === 1 && ["workers", "requests", "cores", "servers", "callers", "attempts", "clients", "sub-requests"].includes(unit)) unit = unit.slice(0, -1);
  else if (v === 1 && unit === "retries") unit = "retry";
  return formatNumber(v) + " " + unit;
}

/**
 * missText says, encouragingly, what one unmet goal target {param, want,
 * tol, got, find} still needs; labels maps a quantity to {label, unit}. A
 * target the learner is to find (find) is named without its value or the
 * way to it: the goal's text says what to look for.
 */
export function missText(labels, m) {
  const q = labels[m.param] || { label: m.param, unit: "" };
  if (m.find) {
    if (!Number.isFinite(m.got)) return q.label + ": no value at these settings; keep looking for the one the goal describes.";
    return q.label + ": " + withUnit(m.got, q.unit) + " is not yet the one the goal asks you to find.";
  }
  let want = withUnit(m.want, q.unit);
  if (m.tol > 0) want += " (within ±" + formatNumber(m.tol) + ")";
  if (!Number.isFinite(m.got)) return q.label + ": no value at these settings; the goal wants " + want + ".";
  const dir = m.got > m.want ? "down" : "up";
  return q.label + ": " + withUnit(m.got, q.unit) + "; bring it " + dir + " to " + want + ".";
}
