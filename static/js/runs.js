// runs.js: live sweeps in the page. It enhances a lesson lab block's Run
// form (bringing its knobs in from the lab's settings page when "Change
// the settings" is opened, posting it to /api/sweeps and showing the run in the block, with
// Cancel while it goes and every Run off; when it ends it tells lesson.js
// with the event capacitylab:run-ended), plays a recorded run of the block
// again on "Watch a recorded run replayed", and
// streams any run panel marked data-live="true" over the websocket
// /ws/runs/{id}?since=N: progress bars move, rows and the chart are
// redrawn from the server's own rendering (the panel messages a live
// stream sends after rows and the last event; fetched from
// /runs/{id}/panel in a replay), and the
// queue place, the start, each new row and the end are announced in the
// panel's aria-live region (progress, four times a second, is shown but
// not announced: the status line is not a live region). A run's last
// event bubbles from its panel as capacitylab:run-end (detail: the event).
// A dropped stream reconnects (reconnect.js) with the last sequence
// number it saw, so no event is lost or repeated.

import { keepOpen } from "./reconnect.js";

function statusOf(panel) {
  return panel.querySelector('[data-testid="run-status"]');
}

function setStatus(panel, text, status) {
  const el = statusOf(panel);
  if (!el) return;
  el.textContent = text;
  if (status) el.dataset.status = status;
}

function setProgress(panel, testid, value) {
  const bar = panel.querySelector(`[data-testid="${testid}"]`);
  if (bar) bar.value = Math.max(0, Math.min(1, value));
}

function announce(panel, text) {
  const live = panel.querySelector('[data-testid="run-announce"]');
  if (live) live.textContent = text;
}

function fmt(v) {
  return typeof v === "number" ? String(Math.round(v * 100) / 100) : String(v ?? "");
}

// refresh replaces the panel's chart and table body with the server's
// rendering of the run: html when a panel message brought it (a live
// stream sends one after each row, at most one a second as a run over
// time's samples arrive, and after the last event), else fetched
// (of its first rows windows, in a replay).
async function refresh(panel, id, rows, html) {
  if (html === undefined) {
    const q = rows === undefined ? "" : `?rows=${rows}`;
    const res = await fetch(`/runs/${encodeURIComponent(id)}/panel${q}`, { headers: { Accept: "text/html" } });
    if (!res.ok) return;
    html = await res.text();
  }
  const doc = new DOMParser().parseFromString(html, "text/html");
  for (const sel of ['[data-testid="run-time-chart"]', '[data-testid="run-chart"]', '[data-testid="run-rows"] tbody']) {
    const fresh = doc.querySelector(sel);
    const old = panel.querySelector(sel);
    if (fresh && old) old.replaceWith(document.adoptNode(fresh));
    // A run over time's chart appears with its first sample, above the rows' chart.
    else if (fresh && sel.includes("run-time-chart")) panel.querySelector('[data-testid="run-chart"]')?.before(document.adoptNode(fresh));
  }
}

function plural(n, one, many) {
  return n === 1 ? one : many;
}

// startsIn says when a queued run is expected to start (web/runpanel.go
// writes the same words).
function startsIn(ms) {
  const secs = Math.ceil(ms / 1000);
  if (!(secs > 1)) return "in a moment";
  if (secs < 90) return `in about ${secs} s`;
  return `in about ${Math.round(ms / 60000)} min`;
}

function reasonText(reason) {
  const r = String(reason || "").trim();
  if (r === "") return "no reason was given.";
  return r.endsWith(".") ? r : r + ".";
}

function terminalText(e) {
  switch (e.kind) {
    case "done":
      return `Done: all ${e.window} ${plural(e.window, "window", "windows")} measured.`;
    case "failed":
      return `Failed: ${reasonText(e.reason)}`;
    case "cancelled":
      return `Cancelled: ${reasonText(e.reason)}`;
    case "interrupted":
      return `Interrupted: ${reasonText(e.reason)}`;
  }
  return e.kind;
}

// watch streams run id into panel until the run's last event; with
// replay set, a recorded run replayed at its real pace. onEnd, if given,
// is called with the terminal event.
function watch(panel, replay = false, onEnd = null) {
  const id = panel.dataset.runId;
  let last = replay ? 0 : Number(panel.dataset.since || "0");
  let rowsSeen = 0;
  let finished = false;
  // A run over time's last second, in words, for the status line: every
  // watcher gets the samples as they come, while the time chart is redrawn
  // every few seconds for a learner's own run and with each row when a
  // class watches (web's liveChartWatchers).
  let second = "";

  const onEvent = (e) => {
    if (e.kind === "panel") {
      // Not an event of the run's log: the run's panel after event seq,
      // which follows rows and the last event on a live stream.
      refresh(panel, id, undefined, e.panel);
      return;
    }
    if (e.seq <= last) return; // already seen (a replay overlapping what the page showed)
    last = e.seq;
    panel.dataset.since = String(last);
    switch (e.kind) {
      case "queued": {
        const text = `Queued: number ${e.position} in line, starting ${startsIn(new Date(e.estimated_start) - Date.now())}.`;
        setStatus(panel, text, "queued");
        announce(panel, text);
        break;
      }
      case "started": {
        const text = replay ? `Replaying a recorded run at its real pace: window 1 of ${e.windows}.` : `Running: window 1 of ${e.windows}.`;
        setStatus(panel, text, replay ? "replaying" : "running");
        announce(panel, text);
        break;
      }
      case "progress": {
        const frac = e.seconds > 0 ? (e.elapsed_ms || 0) / (e.seconds * 1000) : 0;
        setProgress(panel, "window-progress", frac);
        setProgress(panel, "run-progress", (e.window + Math.min(1, frac)) / e.windows);
        const what = e.clients ? `${e.clients} clients` : `${fmt(e.rate)} a second`;
        if (replay) {
          setStatus(panel, `Replaying a recorded run at its real pace: window ${e.window + 1} of ${e.windows} (${what}).`, "replaying");
        } else {
          setStatus(panel, `Running: window ${e.window + 1} of ${e.windows} (${what}): ${e.sent || 0} sent, ${e.ended || 0} ended.${second}`, "running");
        }
        break;
      }
      case "knob": {
        // A knob change the run makes in every window (its "at"), as the
        // lab took it.
        announce(panel, `Window ${e.window + 1} of ${e.windows}: ${fmt((e.elapsed_ms || 0) / 1000)} s in, the lab took ${e.change}.`);
        break;
      }
      case "sample": {
        // A run over time's second of a window: the panel messages draw
        // the samples (the time chart); not the end of the run.
        const m = e.sample || {};
        const inside = m.lab ? `, ${fmt(m.queued + m.in_service)} inside the lab` : "";
        second = ` Second ${fmt(Math.floor(m.at_s || 0) + 1)}: ${fmt(m.ok)} ok, ${fmt(m.refused)} refused, ${fmt(m.gaveup)} gave up${inside}.`;
        break;
      }
      case "row": {
        second = "";
        const r = e.row || {};
        setProgress(panel, "window-progress", 1);
        setProgress(panel, "run-progress", (e.window + 1) / e.windows);
        announce(
          panel,
          `Window ${e.window + 1} of ${e.windows}: offered ${fmt(r.offered)} a second, ${fmt(r.ok_per_sec)} ok a second, p50 ${fmt(r.p50_ms)} ms, p99 ${fmt(r.p99_ms)} ms.`,
        );
        rowsSeen++;
        if (replay) refresh(panel, id, rowsSeen); // a live stream sends the panel after the row
        break;
      }
      default:
        finished = true;
        panel.dataset.live = "false";
        if (e.kind === "done") setProgress(panel, "run-progress", 1);
        setStatus(panel, terminalText(e), e.kind === "done" ? "done" : e.kind);
        announce(panel, terminalText(e));
        if (replay) refresh(panel, id);
        if (onEnd) onEnd(e);
        // The page around the panel may word the end for its readers (a
        // class session tells the room): the event bubbles from the panel
        // with the terminal event.
        panel.dispatchEvent(new CustomEvent("capacitylab:run-end", { bubbles: true, detail: e }));
    }
  };

  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const pace = replay ? "&pace=real" : "";
  keepOpen(() => `${proto}//${location.host}/ws/runs/${encodeURIComponent(id)}?since=${last}${pace}`, {
    onMessage: (data) => {
      try {
        onEvent(JSON.parse(data));
      } catch (err) {
        console.error("run stream:", err);
      }
    },
    onClose: () => !finished,
  });
}

// panelOf fetches a run's panel (its first rows windows, for a replay).
async function panelOf(url, rows) {
  const q = rows === undefined ? "" : `?rows=${rows}`;
  const html = await (await fetch(`${url}/panel${q}`)).text();
  const doc = new DOMParser().parseFromString(html, "text/html");
  return document.adoptNode(doc.querySelector("[data-run-panel]"));
}

// The learner has one run at a time: while it is queued or running, every
// Run on the page is off.
function setRunning(on) {
  for (const b of document.querySelectorAll('[data-testid="lab-run"]')) b.disabled = on;
}

// follow shows the learner's run id in the lab block of form and streams
// it: Cancel while it goes, Run back when it ends, and then the block asks
// lesson.js for its next state (the prediction beside the measurement).
function follow(form, panel, id) {
  const block = form.querySelector('input[name="block"]').value;
  const cancel = form.querySelector("[data-lab-cancel]");
  setRunning(true);
  if (cancel) {
    cancel.dataset.run = id;
    cancel.formAction = `/runs/${encodeURIComponent(id)}/cancel`;
    cancel.disabled = false;
    cancel.hidden = false;
  }
  watch(panel, false, (e) => {
    setRunning(false);
    if (cancel) cancel.hidden = true;
    document.dispatchEvent(new CustomEvent("capacitylab:run-ended", { detail: { block, run: id, status: e.kind } }));
  });
}

// loadKnobs brings a lab block's knobs into its form from the lab's
// settings page (the lesson page carries only a link to it and the
// preset's values as hidden fields, which the knobs replace). It resolves
// true once they are in, false if they could not be fetched (the link
// stays, so the learner can still open the page).
function loadKnobs(form) {
  const details = form.querySelector("details[data-settings]");
  if (!details) return Promise.resolve(false);
  if (details.dataset.loaded === "1") return Promise.resolve(true);
  if (!details.loading) {
    const slot = details.querySelector("[data-knobs-slot]");
    slot.setAttribute("aria-busy", "true");
    details.loading = fetch(details.dataset.settings, { headers: { Accept: "text/html" } })
      .then((res) => (res.ok ? res.text() : Promise.reject(new Error(String(res.status)))))
      .then((html) => {
        const knobs = new DOMParser().parseFromString(html, "text/html").querySelector("[data-knobs]");
        if (!knobs) throw new Error("no knobs");
        const preset = form.querySelector("[data-preset-fields]");
        if (preset) preset.remove();
        slot.replaceChildren(document.adoptNode(knobs));
        details.dataset.loaded = "1";
        return true;
      })
      .catch(() => {
        details.loading = null;
        return false;
      })
      .finally(() => slot.removeAttribute("aria-busy"));
  }
  return details.loading;
}

function clearErrors(form) {
  for (const el of form.querySelectorAll("[data-error-for]")) el.textContent = "";
  for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
}

// showRefusal shows a refused Run or Simulate in the block: each bad
// field's message beside it (the knobs brought in and opened), and the
// error's message in the status line.
async function showRefusal(form, msg, res, body) {
  if (res.status === 400 && body.errors) {
    const details = form.querySelector("details.knobs");
    if (details) details.open = true;
    await loadKnobs(form);
    for (const [field, text] of Object.entries(body.errors)) {
      const out = form.querySelector(`[data-error-for="${CSS.escape(field)}"]`);
      const input = form.querySelector(`[name="${CSS.escape(field)}"]`);
      if (out) out.textContent = text;
      if (input) input.setAttribute("aria-invalid", "true");
    }
  }
  msg.textContent = body.error ? body.error.message : `The server answered ${res.status}.`;
}

// submitRun posts the lab block's form and shows the run in the block.
async function submitRun(form) {
  const msg = form.querySelector('[data-testid="lab-run-message"]');
  const button = form.querySelector('[data-testid="lab-run"]');
  clearErrors(form);
  button.disabled = true;
  msg.textContent = "Sending…";
  let started = false;
  try {
    const res = await fetch(form.action, {
      method: "POST",
      headers: { Accept: "application/json", "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(new FormData(form)),
    });
    const body = await res.json().catch(() => ({}));
    if (res.status === 202) {
      msg.textContent = "";
      const slot = form.parentElement.querySelector("[data-run-slot]");
      const panel = await panelOf(body.url);
      slot.replaceChildren(panel);
      for (const old of form.parentElement.querySelectorAll("[data-lab-after]")) old.remove();
      started = true;
      follow(form, panel, body.id);
      return;
    }
    await showRefusal(form, msg, res, body);
    if (res.status === 429 && form.querySelector('[data-testid="lab-replay"]')) {
      msg.append(" Or watch the recorded run replayed at its real pace.");
    }
    if (res.status === 409 && body.run) {
      const a = document.createElement("a");
      a.href = `/runs/${body.run}`;
      a.textContent = "Watch your run";
      msg.append(" ", a);
    }
  } catch (err) {
    msg.textContent = "The run could not be sent: is the server reachable?";
  } finally {
    if (!started) button.disabled = false;
  }
}

// simulate posts the lab block's form (the same fields as Run) to
// /api/simulate and shows the simulation's table and chart in the block's
// simulation slot. Refusals show as Run's do.
async function simulate(form, button) {
  const msg = form.querySelector('[data-testid="lab-run-message"]');
  const slot = form.parentElement.querySelector("[data-sim-slot]");
  clearErrors(form);
  button.disabled = true;
  msg.textContent = "Simulating…";
  try {
    const res = await fetch(`${button.formAction}?panel=1`, {
      method: "POST",
      headers: { Accept: "application/json", "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(new FormData(form)),
    });
    if (res.ok) {
      slot.innerHTML = await res.text();
      msg.textContent = "Simulated: the table and chart are below, labelled as a simulation.";
      const panel = slot.querySelector("[data-sim-panel]");
      if (panel) panel.focus();
      return;
    }
    const body = await res.json().catch(() => ({}));
    await showRefusal(form, msg, res, body);
  } catch (err) {
    msg.textContent = "The simulation could not be sent: is the server reachable?";
  } finally {
    button.disabled = false;
  }
}

// replay plays a recorded run of the block at its real pace, in its own
// slot under the learner's run.
async function replay(form, button) {
  const slot = form.parentElement.querySelector("[data-replay-slot]");
  if (!slot) return;
  button.disabled = true;
  const fresh = await panelOf(`/runs/${encodeURIComponent(button.dataset.replay)}`, 0);
  const intro = document.createElement("p");
  intro.className = "muted";
  intro.textContent = "A recorded run of this preset, replayed at the pace it ran:";
  slot.replaceChildren(intro, fresh);
  watch(fresh, true, () => {
    button.disabled = false;
  });
}
function init() {
  for (const form of document.querySelectorAll("form[data-run-form]")) {
    if (form.dataset.enhanced) continue;
    form.dataset.enhanced = "1";
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (ev.submitter && ev.submitter.matches("[data-lab-cancel]")) return;
      if (ev.submitter && ev.submitter.matches("[data-lab-simulate]")) {
        simulate(form, ev.submitter);
        return;
      }
      submitRun(form);
    });
    const cancel = form.querySelector("[data-lab-cancel]");
    if (cancel) {
      cancel.addEventListener("click", async (ev) => {
        ev.preventDefault();
        const id = cancel.dataset.run;
        if (!id) return;
        cancel.disabled = true;
        const msg = form.querySelector('[data-testid="lab-run-message"]');
        try {
          const res = await fetch(`/api/runs/${encodeURIComponent(id)}/cancel`, { method: "POST", headers: { Accept: "application/json" } });
          if (!res.ok) {
            const body = await res.json().catch(() => ({}));
            msg.textContent = body.error ? body.error.message : `The server answered ${res.status}.`;
            cancel.disabled = false;
          }
        } catch (err) {
          msg.textContent = "The cancel could not be sent: is the server reachable?";
          cancel.disabled = false;
        }
      });
    }
    const settings = form.querySelector("details[data-settings]");
    if (settings) {
      settings.addEventListener("toggle", () => {
        if (settings.open) loadKnobs(form);
      });
    }
    const rb = form.querySelector("[data-replay]");
    if (rb) {
      rb.hidden = false;
      rb.addEventListener("click", () => replay(form, rb));
    }
    // A run of this block already going when the page was drawn: follow it.
    const panel = form.parentElement.querySelector('[data-run-slot] [data-run-panel][data-live="true"]');
    if (panel && !panel.dataset.watching) {
      panel.dataset.watching = "1";
      follow(form, panel, panel.dataset.runId);
    }
  }
  for (const form of document.querySelectorAll("form[data-run-cancel]")) {
    if (form.dataset.enhanced) continue;
    form.dataset.enhanced = "1";
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      await fetch(`/api/runs/${encodeURIComponent(form.dataset.runCancel)}/cancel`, { method: "POST", headers: { Accept: "application/json" } });
      form.querySelector("button").disabled = true;
    });
  }
  for (const panel of document.querySelectorAll('[data-run-panel][data-live="true"]')) {
    if (panel.dataset.watching) continue;
    panel.dataset.watching = "1";
    watch(panel);
  }
}

init();
// Pages that add run panels or forms later (a class session's run) ask
// for them to be enhanced with this event.
document.addEventListener("capacitylab:runs", init);
