// widgets.js: the model widgets respond as their controls move.
//
// The server renders every widget complete (web/widgets.templ): a GET form
// whose Recompute button reloads the page with the values in the query.
// This module, loaded as an external ES module (no inline script), takes
// over each element marked data-widget-root:
//
//   - each parameter's range and number inputs follow each other; a typed
//     number above the slider's top widens the slider (sliderFor in
//     widgettext.js, the same rule as the server's, which also fits a
//     slider with a goal on it to the goal's tolerance); − and + move the
//     value one slider step;
//   - a value that is not allowed is named beside its field, and the
//     results, which still show the last values that worked, are marked
//     stale until it is fixed;
//   - the result is recomputed in the page with model.js, modellimits.js
//     for a quota, AIMD, retry or late-scaling widget, or modeltail.js for
//     a variability, fan-out or USL widget (the same formulas as package
//     model, held to the same test vectors): the sentence in the polite
//     live region, every <output data-q=NAME> (scaled by data-scale, or
//     data-none when the quantity has no value), the admission steps, which ceiling binds, the queue
//     curve's steady state, whether the retries' load is over capacity
//     (the quota's steps as the admission limit's), whether the
//     variability's wait is Kingman's approximation, whether the USL's
//     clients are past the peak; a share with data-format="percentile"
//     is written as a percentile's name (p99.31);
//   - the plot (two ceilings, queue curve) is fetched from the server's
//     /widgets/{kind}/plot (its HTML), so it is drawn by one implementation;
//   - the goal's status and what is still off are updated; the first time
//     the goal is reached on a lesson page by moving the controls, the
//     values are POSTed once to data-record-url, which records it in the
//     learner's progress;
//   - for Little's law, the radio group chooses the implied quantity;
//   - the "share this preset" link follows the current values.
//
// Everything is native controls, so the keyboard alone works.

import { compute as computeBase, formatNumber, goalReached } from "./model.js";
import { missText, round12, sliderFor } from "./widgettext.js";

// The quota, AIMD, retry and late-scaling models live in modellimits.js,
// and the variability, fan-out and USL models in modeltail.js, each loaded
// only when the page has one of its kinds; each one's compute covers its
// own kinds and model.js's.
const limitKinds = ["quota", "aimd", "retry-amplification", "late-scaling"];
const tailKinds = ["variability-wait", "fanout-tail", "usl"];
const roots = [...document.querySelectorAll("[data-widget-root]")];
const has = (kinds) => roots.some((r) => kinds.includes(r.dataset.kind));
const computeLimits = has(limitKinds) ? (await import("./modellimits.js")).compute : computeBase;
const tail = has(tailKinds) ? await import("./modeltail.js") : null;
const computeTail = tail ? tail.compute : computeBase;
const compute = (kind, values, solve) => (tailKinds.includes(kind) ? computeTail : computeLimits)(kind, values, solve);

// rangeParam reads a range input's parameter limits for sliderFor.
const rangeParam = (range) => ({
  min: +range.dataset.min,
  max: +range.dataset.max,
  step: +range.dataset.step,
  default: +range.dataset.default,
});

// rangeTarget reads the goal's target on a range input's parameter, or null.
const rangeTarget = (range) => (range.dataset.goal === undefined ? null : { value: +range.dataset.goal, tol: +range.dataset.tol });

// layoutRange gives a range input the limits and step sliderFor gives
// value x, and puts its thumb at x.
const layoutRange = (range, x) => {
  const s = sliderFor(rangeParam(range), x, rangeTarget(range));
  range.min = String(s.min);
  range.max = String(s.max);
  range.step = String(s.step);
  range.value = String(x);
};

const setText = (el, text) => {
  if (el && el.textContent !== text) el.textContent = text;
};

function readJSON(s, fallback) {
  try {
    return JSON.parse(s);
  } catch {
    return fallback;
  }
}

function setup(root) {
  const kind = root.dataset.kind;
  const targets = readJSON(root.dataset.targets, []) || [];
  const labels = readJSON(root.dataset.labels, {}) || {};
  const recordURL = root.dataset.recordUrl || "";
  const plotURL = root.dataset.plotUrl || "";
  let solve = root.dataset.solve || "";
  let recorded = root.dataset.recorded === "true";
  let posted = false;
  // touched: the learner has moved a control here. A goal met by the
  // values a page was opened with (a link from elsewhere) is shown but
  // not recorded until the learner works the controls themselves.
  let touched = false;
  let last = null; // the last result computed
  let first = true; // the server drew the first plot
  const form = root.querySelector("[data-widget-form]");
  const errorBox = root.querySelector("[data-error]");
  const params = new Map();
  for (const el of root.querySelectorAll("[data-param]")) {
    params.set(el.dataset.param, {
      el,
      num: el.querySelector("[data-num]"),
      range: el.querySelector("[data-range]"),
      hidden: el.querySelector("[data-implied-value]"),
      controls: el.querySelector(".w-controls"),
      implied: el.querySelector(".w-implied"),
      error: el.querySelector("[data-param-error]"),
      nudges: [...el.querySelectorAll("[data-nudge]")],
    });
  }
  const result = root.querySelector("[data-result]");
  const stale = root.querySelector("[data-stale]");

  const paramError = (name) => {
    const p = params.get(name);
    const n = p.num;
    if (n.value.trim() === "" || !n.validity.valid) {
      const unit = p.implied.querySelector(".w-unit").textContent;
      const whole = n.step === "1" ? "a whole number" : "a number";
      const what = n.value.trim() === "" ? "This is empty" : "This is not allowed";
      return what + ": want " + whole + " from " + n.min + " to " + n.max + (unit ? " " + unit : "") + ".";
    }
    return "";
  };

  const values = () => {
    const v = {};
    for (const [name, p] of params) {
      if (name === solve) {
        const x = parseFloat(p.hidden.value);
        v[name] = Number.isFinite(x) ? x : parseFloat(p.range.dataset.default);
      } else {
        v[name] = parseFloat(p.num.value);
      }
    }
    return v;
  };

  let plotTimer = 0;
  let plotAbort = null;
  const refreshPlot = (vals) => {
    const fig = root.querySelector("[data-plot]");
    if (!plotURL || !fig) return;
    clearTimeout(plotTimer);
    plotTimer = setTimeout(async () => {
      if (plotAbort) plotAbort.abort();
      plotAbort = new AbortController();
      const q = new URLSearchParams();
      for (const [k, x] of Object.entries(vals)) q.set(k, String(x));
      if (solve) q.set("solve", solve);
      q.set("id", root.id);
      try {
        const res = await fetch(plotURL + "?" + q, { signal: plotAbort.signal });
        if (!res.ok) return;
        const doc = new DOMParser().parseFromString(await res.text(), "text/html");
        const plot = doc.body.querySelector("[data-chart]");
        if (plot) fig.replaceChildren(document.adoptNode(plot));
      } catch {
        // An aborted or failed fetch leaves the last plot in place.
      }
    }, 120);
  };

  const share = root.querySelector("[data-share]");
  const updateShare = (vals) => {
    if (!share) return;
    const u = new URL(share.href, location.href);
    for (const name of params.keys()) {
      if (name === solve) u.searchParams.delete(name);
      else u.searchParams.set(name, String(vals[name]));
    }
    if (solve) u.searchParams.set("solve", solve);
    share.href = u.pathname + u.search;
  };

  const record = async (vals) => {
    posted = true;
    const body = new URLSearchParams();
    for (const [k, x] of Object.entries(vals)) body.set(k, String(x));
    if (solve) body.set("solve", solve);
    const recordedEl = root.querySelector("[data-goal-recorded]");
    try {
      const res = await fetch(recordURL, { method: "POST", body, headers: { Accept: "application/json" } });
      const data = await res.json().catch(() => null);
      if (!res.ok) {
        setText(errorBox, (data && data.error && data.error.message) || "The goal could not be saved: the server answered " + res.status + ".");
        posted = false;
        return;
      }
      recorded = true;
      root.dataset.recorded = "true";
      if (recordedEl) {
        setText(recordedEl, "Saved in your progress.");
        recordedEl.hidden = false;
      }
    } catch {
      setText(errorBox, "The goal could not be saved: the server did not answer. It will be tried again when you next reach it.");
      posted = false;
    }
  };

  const updateGoal = (res, vals) => {
    const box = root.querySelector("[data-goal]");
    if (!box || targets.length === 0) return;
    const st = goalReached(res.quantities, targets);
    box.classList.toggle("reached", st.reached);
    setText(box.querySelector("[data-goal-state]"), st.reached ? "Goal reached." : "Not there yet: keep moving the controls.");
    const misses = box.querySelector("[data-goal-misses]");
    if (misses) {
      misses.hidden = st.reached;
      const texts = st.misses.map((m) => missText(labels, m));
      const now = [...misses.children].map((li) => li.textContent);
      if (texts.join("\n") !== now.join("\n")) {
        misses.replaceChildren(
          ...texts.map((t) => {
            const li = document.createElement("li");
            li.textContent = t;
            return li;
          }),
        );
      }
    }
    const found = box.querySelector("[data-goal-found]");
    if (found) found.hidden = !st.reached;
    if (st.reached && touched && recordURL && !recorded && !posted) record(vals);
  };

  const update = () => {
    // Each bad value is named under its own field; the results keep the
    // last values that worked and say so.
    let bad = 0;
    for (const [name, p] of params) {
      const msg = name !== solve ? paramError(name) : "";
      p.el.classList.toggle("invalid", msg !== "");
      if (msg) {
        bad++;
        p.num.setAttribute("aria-invalid", "true");
      } else p.num.removeAttribute("aria-invalid");
      if (p.error) {
        setText(p.error, msg);
        p.error.hidden = msg === "";
      }
    }
    if (result) result.classList.toggle("stale", bad > 0);
    if (stale) stale.hidden = bad === 0;
    if (bad > 0) return;
    const vals = values();
    const res = compute(kind, vals, solve);
    last = res;
    setText(root.querySelector("[data-sentence]"), res.sentence);
    for (const out of root.querySelectorAll("[data-q]")) {
      const q = res.quantities[out.dataset.q];
      const scale = out.dataset.scale ? parseFloat(out.dataset.scale) : 1;
      let text = formatNumber(q * scale);
      // A share shown as a percentile's name (p99.31), on a fan-out widget's page, which has loaded modeltail.js.
      if (out.dataset.format === "percentile" && tail) text = tail.percentileName(q)[1];
      setText(out, q === undefined ? out.dataset.none || "—" : text);
    }
    if (solve && params.has(solve)) {
      const q = res.quantities[solve];
      params.get(solve).hidden.value = q === undefined ? "" : String(q);
    }
    const steps = root.querySelector("[data-steps]");
    const working = (res.admission_limit || res.quota || {}).steps;
    if (steps && working) {
      steps.replaceChildren(
        ...working.map((s) => {
          const li = document.createElement("li");
          li.textContent = s;
          return li;
        }),
      );
    }
    if (res.two_ceilings) {
      const b = res.two_ceilings.binds;
      for (const el of root.querySelectorAll("[data-binds-when]")) {
        el.classList.toggle("binds", b === el.dataset.bindsWhen || b === "both");
      }
    }
    if (res.queue_curve) {
      for (const el of root.querySelectorAll("[data-show-when]")) {
        const w = el.dataset.showWhen;
        const q = res.queue_curve;
        el.hidden = w === "pooled" ? !(q.stable && q.servers > 1) : (w === "stable") !== q.stable;
      }
    }
    if (res.retry_amplification) {
      for (const el of root.querySelectorAll("[data-show-when]")) {
        el.hidden = (el.dataset.showWhen === "over") !== res.retry_amplification.over;
      }
    }
    if (res.variability_wait) {
      for (const el of root.querySelectorAll('[data-show-when="approximate"]')) el.hidden = res.variability_wait.exact;
    }
    if (res.usl) {
      for (const el of root.querySelectorAll('[data-show-when="retrograde"]')) el.hidden = !res.usl.retrograde;
    }
    if (!first) refreshPlot(vals);
    first = false;
    updateShare(vals);
    updateGoal(res, vals);
  };

  // setSolve makes name the implied quantity: the old implied one becomes
  // editable, starting from its last computed value.
  const setSolve = (name) => {
    if (name === solve) return;
    const old = params.get(solve);
    if (old && last && last.quantities[solve] !== undefined) {
      const x = last.quantities[solve];
      const shown = parseFloat(formatNumber(x));
      old.num.value = String(Number.isFinite(shown) ? shown : x);
      layoutRange(old.range, parseFloat(old.num.value));
    }
    solve = name;
    root.dataset.solve = name;
    for (const [n, p] of params) {
      const implied = n === solve;
      p.el.classList.toggle("implied", implied);
      p.controls.hidden = implied;
      p.implied.hidden = !implied;
      p.num.disabled = implied;
      p.range.disabled = implied;
      for (const b of p.nudges) b.disabled = implied;
      p.hidden.disabled = !implied;
    }
    update();
  };

  for (const [, p] of params) {
    p.range.addEventListener("input", () => {
      touched = true;
      p.num.value = p.range.value;
      update();
    });
    p.num.addEventListener("input", () => {
      touched = true;
      const x = parseFloat(p.num.value);
      if (Number.isFinite(x) && p.num.validity.valid) {
        if (x > parseFloat(p.range.max)) layoutRange(p.range, x);
        else p.range.value = String(x);
      }
      update();
    });
    // − and +: one slider step down or up from the value as it is,
    // within the parameter's range (without script they submit the
    // form with nudge=param:- or param:+, and the server does the same).
    for (const b of p.nudges) {
      b.addEventListener("click", (e) => {
        e.preventDefault();
        const x = parseFloat(p.num.value);
        const base = Number.isFinite(x) ? x : parseFloat(p.range.value);
        const lo = parseFloat(p.num.min);
        const hi = parseFloat(p.num.max);
        const next = round12(Math.min(hi, Math.max(lo, base + parseFloat(b.dataset.nudge) * parseFloat(p.range.step))));
        touched = true;
        p.num.value = String(next);
        if (next > parseFloat(p.range.max)) layoutRange(p.range, next);
        else p.range.value = String(next);
        update();
      });
    }
  }
  for (const radio of root.querySelectorAll('input[name="solve"]')) {
    radio.addEventListener("change", () => {
      touched = true;
      if (radio.checked) setSolve(radio.value);
    });
  }
  if (form) {
    // The page answers as the controls move; Enter in a field recomputes
    // in place instead of reloading.
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      update();
    });
    const button = form.querySelector("[data-recompute]");
    if (button) button.hidden = true;
  }
  root.dataset.live = "true";
  update();
}

for (const root of roots) {
  if (root.dataset.live !== "true") setup(root);
}
