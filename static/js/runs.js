// runs.js: live sweeps in the page. It enhances a lesson lab block's Run
// form (posting it to /api/sweeps and showing the run in the block), and
// streams any run panel marked data-live="true" over the websocket
// /ws/runs/{id}?since=N: progress bars move, rows and the chart are
// redrawn from the server's own rendering (the panel messages a live
// stream sends after rows and the last event; fetched from
// /runs/{id}/panel in a replay), and the
// queue place, the start, each new row and the end are announced in the
// panel's aria-live region (progress, four times a second, is shown but
// not announced: the status line is not a live region). A dropped stream
// reconnects with the last sequence number it saw, so no event is lost or
// repeated.

const reconnectFirstMS = 500;
const reconnectMaxMS = 10000;

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
// stream sends one after each row and after the last event), else fetched
// (of its first rows windows, in a replay).
async function refresh(panel, id, rows, html) {
  if (html === undefined) {
    const q = rows === undefined ? "" : `?rows=${rows}`;
    const res = await fetch(`/runs/${encodeURIComponent(id)}/panel${q}`, { headers: { Accept: "text/html" } });
    if (!res.ok) return;
    html = await res.text();
  }
  const doc = new DOMParser().parseFromString(html, "text/html");
  for (const sel of ['[data-testid="run-chart"]', '[data-testid="run-rows"] tbody']) {
    const fresh = doc.querySelector(sel);
    const old = panel.querySelector(sel);
    if (fresh && old) old.replaceWith(document.adoptNode(fresh));
  }
}

function terminalText(e) {
  switch (e.kind) {
    case "done":
      return `Done: ${e.window} of ${e.windows} windows measured.`;
    case "failed":
      return `Failed. ${e.reason || ""}`;
    case "cancelled":
      return `Cancelled. ${e.reason || ""}`;
    case "interrupted":
      return `Interrupted. ${e.reason || ""}`;
  }
  return e.kind;
}

// watch streams run id into panel until the run's last event; with
// replay set, a recorded run replayed at its real pace.
function watch(panel, replay = false) {
  const id = panel.dataset.runId;
  let last = replay ? 0 : Number(panel.dataset.since || "0");
  let rowsSeen = 0;
  let delay = reconnectFirstMS;
  let finished = false;

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
        const text = `Waiting: number ${e.position} in the queue, expected to start about ${new Date(e.estimated_start).toLocaleTimeString()}.`;
        setStatus(panel, text, "queued");
        announce(panel, text);
        break;
      }
      case "started": {
        const text = replay ? `Replaying a recorded run at its real pace: window 1 of ${e.windows}.` : `Running: window 1 of ${e.windows}. The lab has started.`;
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
          setStatus(panel, `Running: window ${e.window + 1} of ${e.windows} (${what}): ${e.sent || 0} sent, ${e.ended || 0} answered or ended.`, "running");
        }
        break;
      }
      case "row": {
        const r = e.row || {};
        setProgress(panel, "window-progress", 1);
        setProgress(panel, "run-progress", (e.window + 1) / e.windows);
        announce(panel, `Window ${e.window + 1} of ${e.windows}: offered ${fmt(r.offered)} a second, ${fmt(r.ok_per_sec)} ok a second, p50 ${fmt(r.p50_ms)} ms, p99 ${fmt(r.p99_ms)} ms.`);
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
    }
  };

  const connect = () => {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const pace = replay ? "&pace=real" : "";
    const ws = new WebSocket(`${proto}//${location.host}/ws/runs/${encodeURIComponent(id)}?since=${last}${pace}`);
    ws.onmessage = (m) => {
      delay = reconnectFirstMS;
      try {
        onEvent(JSON.parse(m.data));
      } catch (err) {
        console.error("run stream:", err);
      }
    };
    ws.onclose = () => {
      if (finished) return;
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, reconnectMaxMS);
    };
  };
  connect();
}

// panelOf fetches a run's panel (its first rows windows, for a replay).
async function panelOf(url, rows) {
  const q = rows === undefined ? "" : `?rows=${rows}`;
  const html = await (await fetch(`${url}/panel${q}`)).text();
  const doc = new DOMParser().parseFromString(html, "text/html");
  return document.adoptNode(doc.querySelector("[data-run-panel]"));
}

// showReference puts the latest recorded run of the form's lab block in
// its slot at once, with a button to replay it at its real pace.
async function showReference(form) {
  const block = form.querySelector('input[name="block"]').value;
  const slot = form.parentElement.querySelector("[data-run-slot]");
  if (!block || !slot) return;
  const res = await fetch(`/api/labs/${encodeURIComponent(block)}/reference`, { headers: { Accept: "application/json" } });
  if (!res.ok) return;
  const ref = await res.json();
  const intro = document.createElement("p");
  intro.dataset.testid = "lab-reference";
  intro.append(`A recorded run of this preset, from ${new Date(ref.created_at).toLocaleString()}: `);
  const a = document.createElement("a");
  a.href = ref.url;
  a.textContent = "open it";
  const replay = document.createElement("button");
  replay.type = "button";
  replay.dataset.testid = "lab-replay";
  replay.textContent = `Watch it replayed at its real pace (${Math.round(ref.seconds)} s)`;
  intro.append(a, ". Or run it yourself above. ", replay);
  const panel = await panelOf(ref.url);
  if (slot.childElementCount > 0) return; // the learner pressed Run meanwhile
  slot.replaceChildren(intro, panel);
  replay.addEventListener("click", async () => {
    const fresh = await panelOf(ref.url, 0);
    slot.replaceChildren(intro, fresh);
    replay.disabled = true;
    watch(fresh, true);
  });
}

function clearErrors(form) {
  for (const el of form.querySelectorAll("[data-error-for]")) el.textContent = "";
  for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
}

// submitRun posts the lab block's form and shows the run in the block.
async function submitRun(form) {
  const msg = form.querySelector('[data-testid="lab-run-message"]');
  const button = form.querySelector('button[type="submit"]');
  clearErrors(form);
  button.disabled = true;
  msg.textContent = "Sending…";
  try {
    const res = await fetch(form.action, {
      method: "POST",
      headers: { Accept: "application/json", "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(new FormData(form)),
    });
    const body = await res.json().catch(() => ({}));
    if (res.status === 202) {
      msg.innerHTML = "";
      msg.append(`Queued as number ${body.position}. `);
      const a = document.createElement("a");
      a.href = body.url;
      a.textContent = "Open the run's own page";
      msg.append(a, ".");
      const slot = form.parentElement.querySelector("[data-run-slot]");
      const panel = await panelOf(body.url);
      slot.replaceChildren(panel);
      watch(panel);
      return;
    }
    if (res.status === 400 && body.errors) {
      for (const [field, text] of Object.entries(body.errors)) {
        const out = form.querySelector(`[data-error-for="${CSS.escape(field)}"]`);
        const input = form.querySelector(`[name="${CSS.escape(field)}"]`);
        if (out) out.textContent = text;
        if (input) input.setAttribute("aria-invalid", "true");
      }
    }
    msg.textContent = body.error ? body.error.message : `The server answered ${res.status}.`;
    if (res.status === 429 && form.parentElement.querySelector('[data-testid="lab-replay"]')) {
      msg.append(" Or watch the recorded run below, replayed at its real pace.");
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
    button.disabled = false;
  }
}

function init() {
  for (const form of document.querySelectorAll("form[data-run-form]")) {
    if (form.dataset.enhanced) continue;
    form.dataset.enhanced = "1";
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      submitRun(form);
    });
    showReference(form);
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
