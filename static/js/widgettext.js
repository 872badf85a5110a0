// widgettext.js: the widget helpers that must match web/widgets.go word for
// word and number for number, kept apart from widgets.js (which needs a
// page) so node --test can check them against web/testdata/widget-vectors.json,
// as go test does.

import { formatNumber } from "./model.js";

/** niceCeil: the smallest 1, 2 or 5 × 10^k at or above v (v > 0), else 1. */
export function niceCeil(v) {
	if (!(v > 0)) return 1;
	const p = Math.pow(10, Math.floor(Math.log10(v)));
	for (const m of [1, 2, 5, 10]) {
		if (m * p >= v * (1 - 1e-12)) return m * p;
	}
	return 10 * p;
}

/**
 * sliderMax: the top of a range input for value v of a parameter
 * {min, max, step, default}: niceCeil of twice the larger of v, the
 * default and ten steps, at least min + step, at most max.
 */
export function sliderMax(p, v) {
	const base = Math.max(v, p.default, p.step * 10);
	return Math.min(p.max, Math.max(p.min + p.step, niceCeil(2 * base)));
}

function withUnit(v, unit) {
	return unit ? formatNumber(v) + " " + unit : formatNumber(v);
}

/**
 * missText says, encouragingly, what one unmet goal target {param, want,
 * tol, got} still needs; labels maps a quantity to {label, unit}.
 */
export function missText(labels, m) {
	const q = labels[m.param] || { label: m.param, unit: "" };
	let want = withUnit(m.want, q.unit);
	if (m.tol > 0) want += " (within ±" + formatNumber(m.tol) + ")";
	if (!Number.isFinite(m.got)) return q.label + " has no value at these settings; the goal wants " + want + ".";
	const dir = m.got > m.want ? "down" : "up";
	return q.label + " is " + withUnit(m.got, q.unit) + ": bring it " + dir + " to " + want + ".";
}
