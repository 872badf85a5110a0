// session.js: a class session's page (participant, host or projector).
// It keeps one websocket to /ws/sessions/{code} (protocol: package
// classroom's doc), resumes with ?since=&epoch= after a drop, and renders
// the questions, the tally and the revealed distributions. The class run
// is shown as any run is: the server's run panel, streamed by runs.js.

const SVG = "http://www.w3.org/2000/svg";

const root = document.querySelector("[data-class-role]");
if (root) {
  start(root);
}

function start(root) {
  const role = root.dataset.classRole; // participant | host | projector
  const code = root.dataset.code;
  const token = root.dataset.token || "";
  const statusEl = root.querySelector("[data-class-status]");
  const model = {
    questions: new Map(), // id → {type, options, correct, rounds: [...]}
    participants: new Map(),
    connected: 0,
    focus: "",
    runID: "",
    ended: false,
  };
  let ws = null;
  let last = 0;
  let epoch = "";
  let ref = 0;
  let backoff = 500;
  let flash = "";
  let run = null;

  const wsBase = (location.protocol === "https:" ? "wss://" : "ws://") + location.host;

  function connect() {
    const q = new URLSearchParams();
    if (token) q.set("token", token);
    if (epoch) {
      q.set("since", String(last));
      q.set("epoch", epoch);
    }
    ws = new WebSocket(wsBase + "/ws/sessions/" + encodeURIComponent(code) + "?" + q.toString());
    ws.onopen = () => {
      backoff = 500;
    };
    ws.onmessage = (ev) => {
      let m;
      try {
        m = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (m.seq > last) last = m.seq;
      onMessage(m);
    };
    ws.onclose = (ev) => {
      ws = null;
      if (model.ended || ev.code === 1000) {
        setStatus();
        return;
      }
      setStatus("Connection lost; reconnecting…");
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 8000);
    };
  }

  function send(msg) {
    if (!ws || ws.readyState !== WebSocket.OPEN) {
      flash = "Not connected right now; try again in a moment.";
      setStatus();
      return;
    }
    flash = "";
    ref += 1;
    msg.ref = ref;
    ws.send(JSON.stringify(msg));
  }

  function onMessage(m) {
    switch (m.kind) {
      case "state":
        loadState(m.state);
        break;
      case "voted": {
        const r = round(m.question, m.round);
        if (r) r.yours = m.option;
        flash = "";
        renderQuestion(m.question);
        break;
      }
      case "error":
        flash = m.message;
        break;
      case "presence":
        if (m.participant) model.participants.set(m.participant.id, m.participant);
        model.connected = m.connected || 0;
        renderParticipants();
        break;
      case "tally": {
        const r = round(m.question, m.round);
        if (r) {
          r.counts = m.counts;
          r.total = m.total || 0;
          r.movement = m.movement || [];
        }
        renderQuestion(m.question);
        break;
      }
      case "round": {
        const q = model.questions.get(m.question);
        if (!q) break;
        let r = round(m.question, m.round);
        if (!r) {
          r = { round: m.round, status: m.status, total: 0, yours: "" };
          q.rounds.push(r);
        }
        r.status = m.status;
        if (m.total !== undefined) r.total = m.total;
        if (m.status === "open") model.focus = m.question;
        renderQuestion(m.question);
        renderFocus();
        if (m.status === "open") bringIntoView(m.question);
        break;
      }
      case "revealed": {
        const r = round(m.question, m.round);
        if (r) {
          r.status = "revealed";
          r.counts = m.counts;
          r.total = m.total || 0;
          r.movement = m.movement || [];
        }
        renderQuestion(m.question);
        break;
      }
      case "run":
        model.runID = m.run_id;
        watchRun(m.run_id);
        break;
      case "ended":
        model.ended = true;
        for (const id of model.questions.keys()) renderQuestion(id);
        break;
    }
    setStatus();
  }

  function loadState(st) {
    epoch = st.epoch;
    model.focus = st.focus;
    model.ended = st.ended;
    model.connected = st.connected;
    model.questions.clear();
    for (const q of st.questions) {
      model.questions.set(q.id, { ...q, rounds: q.rounds || [] });
    }
    model.participants.clear();
    for (const p of st.participants || []) model.participants.set(p.id, p);
    for (const id of model.questions.keys()) renderQuestion(id);
    renderParticipants();
    renderFocus();
    const fq = model.questions.get(model.focus);
    if (fq && fq.rounds.length && fq.rounds[fq.rounds.length - 1].status === "open") bringIntoView(model.focus);
    if (st.run_id && st.run_id !== model.runID) {
      model.runID = st.run_id;
      watchRun(st.run_id);
    }
  }

  function round(qid, n) {
    const q = model.questions.get(qid);
    return q ? q.rounds.find((r) => r.round === n) : undefined;
  }

  function setStatus(text) {
    if (!statusEl) return;
    let s = text;
    if (!s) {
      if (model.ended) s = "This session has ended. Thank you!";
      else if (!ws || ws.readyState !== WebSocket.OPEN) s = "Connecting…";
      else if (role === "participant") s = "Connected. Follow the instructor: questions open here when they start a vote.";
      else s = "Connected.";
    }
    if (flash) s += " " + flash;
    statusEl.textContent = s;
    statusEl.classList.toggle("form-error", !!flash);
  }

  function optionLabel(section, id) {
    const li = section.querySelector(`[data-option="${CSS.escape(id)}"]`);
    return li ? li.dataset.label : id;
  }

  function renderQuestion(qid) {
    const section = root.querySelector(`[data-class-question="${CSS.escape(qid)}"]`);
    const q = model.questions.get(qid);
    if (!section || !q) return;
    const r = q.rounds[q.rounds.length - 1];
    const open = r && r.status === "open" && !model.ended;
    const statusP = section.querySelector("[data-q-status]");
    let text;
    let count = ""; // shown after text but not announced: see below
    if (!r) {
      text = "Voting has not opened.";
    } else if (role === "participant") {
      const yours = r.yours ? `Your vote: ${optionLabel(section, r.yours)}.` : "";
      if (r.status === "open") {
        text = r.yours
          ? `Round ${r.round} is open. ${yours} You can change it until voting closes.`
          : `Round ${r.round} is open: choose your answer.`;
      } else if (r.status === "closed") {
        text = `Round ${r.round} is closed. ${yours || "You did not vote."} Wait for the reveal.`;
      } else {
        text = `Round ${r.round} revealed. ${yours || "You did not vote."}`;
      }
    } else {
      const n = r.total || 0;
      const votes = `${n} vote${n === 1 ? "" : "s"}`;
      if (r.status === "open") {
        text = `Round ${r.round}: voting is open,`;
        count = ` ${votes} so far.`;
      } else if (r.status === "closed") {
        text = `Round ${r.round}: voting closed with ${votes}.`;
      } else {
        text = `Round ${r.round}: revealed, ${votes}.`;
      }
    }
    // Only the state is a live region: a screen reader announces voting
    // opening, closing and the reveal, not every one of a class's votes.
    const stateEl = statusP.querySelector("[data-q-state]");
    if (stateEl.textContent !== text) stateEl.textContent = text;
    statusP.querySelector("[data-q-count]").textContent = count;
    statusP.dataset.round = r ? String(r.round) : "0";
    statusP.dataset.state = r ? r.status : "none";

    if (role === "participant") {
      for (const b of section.querySelectorAll("[data-vote]")) {
        b.disabled = !open;
        const mine = !!r && r.yours === b.dataset.vote;
        b.setAttribute("aria-pressed", mine ? "true" : "false");
        b.classList.toggle("secondary", !mine);
      }
    }
    if (role === "host") {
      const n = q.rounds.length;
      const can = {
        open: n === 0,
        close: !!r && r.status === "open",
        reveal: !!r && r.status !== "revealed",
        next_round: !!r && r.status !== "open" && n < 2,
      };
      // Only the actions that make sense now are shown.
      for (const b of section.querySelectorAll("[data-act]")) {
        b.hidden = model.ended || !can[b.dataset.act];
      }
    }
    const results = section.querySelector("[data-q-results]");
    results.replaceChildren();
    for (const rd of q.rounds) {
      const show = role === "host" ? !!rd.counts : rd.status === "revealed" && !!rd.counts;
      if (!show) continue;
      results.append(chart(section, q, rd));
      if (rd.movement && rd.movement.length && (role === "host" || rd.status === "revealed")) {
        results.append(movement(section, rd));
      }
    }
  }

  function chart(section, q, rd) {
    const fig = document.createElement("figure");
    fig.dataset.round = String(rd.round);
    fig.dataset.testid = "chart";
    fig.setAttribute("data-testid", `chart-${q.id}-${rd.round}`);
    const cap = document.createElement("figcaption");
    const hidden = role === "host" && rd.status !== "revealed" ? " (only you see this until you reveal it)" : "";
    cap.textContent = `Round ${rd.round}: ${rd.total || 0} vote${rd.total === 1 ? "" : "s"}${hidden}`;
    const counts = rd.counts || [];
    const max = Math.max(1, ...counts.map((c) => c.count));
    const total = Math.max(1, rd.total || 0);
    const rowH = 28;
    const w = 480;
    const labelW = 200;
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", `0 0 ${w} ${rowH * counts.length + 4}`);
    svg.setAttribute("role", "img");
    svg.setAttribute(
      "aria-label",
      `Round ${rd.round} votes: ` + counts.map((c) => `${optionLabel(section, c.option)} ${c.count}`).join(", "),
    );
    counts.forEach((c, i) => {
      const y = i * rowH + 2;
      const label = document.createElementNS(SVG, "text");
      label.setAttribute("x", "0");
      label.setAttribute("y", String(y + 18));
      label.setAttribute("font-size", "13");
      label.setAttribute("fill", "currentColor");
      const full = optionLabel(section, c.option);
      label.textContent = full.length > 28 ? full.slice(0, 27) + "…" : full;
      const bar = document.createElementNS(SVG, "rect");
      const bw = Math.round(((w - labelW - 70) * c.count) / max);
      bar.setAttribute("x", String(labelW));
      bar.setAttribute("y", String(y + 4));
      bar.setAttribute("height", String(rowH - 8));
      bar.setAttribute("width", String(Math.max(bw, 1)));
      const correct = role === "host" && q.correct === c.option;
      bar.setAttribute("fill", correct ? "#2e7d32" : "#3f6fb5");
      bar.dataset.option = c.option;
      bar.dataset.count = String(c.count);
      const n = document.createElementNS(SVG, "text");
      n.setAttribute("x", String(labelW + bw + 6));
      n.setAttribute("y", String(y + 18));
      n.setAttribute("font-size", "13");
      n.setAttribute("fill", "currentColor");
      n.textContent = `${c.count} (${Math.round((100 * c.count) / total)}%)`;
      svg.append(label, bar, n);
    });
    fig.append(cap, svg);
    return fig;
  }

  function movement(section, rd) {
    const div = document.createElement("div");
    div.setAttribute("data-testid", "movement");
    const p = document.createElement("p");
    p.textContent = `How answers moved from round ${rd.round - 1} to round ${rd.round}:`;
    const ul = document.createElement("ul");
    for (const m of rd.movement) {
      const li = document.createElement("li");
      const from = optionLabel(section, m.from);
      const to = optionLabel(section, m.to);
      li.textContent = m.from === m.to ? `${m.count} stayed with ${from}` : `${m.count} moved from ${from} to ${to}`;
      ul.append(li);
    }
    div.append(p, ul);
    return div;
  }

  function renderParticipants() {
    for (const el of root.querySelectorAll("[data-class-connected]")) el.textContent = String(model.connected);
    const ul = root.querySelector("[data-class-participants]");
    if (!ul) return;
    ul.replaceChildren();
    for (const p of model.participants.values()) {
      const li = document.createElement("li");
      li.textContent = (p.name || `Participant ${p.id}`) + (p.connected ? "" : " (away)");
      ul.append(li);
    }
  }

  // A participant's page scrolls to the question the class is voting on:
  // smoothly, unless they asked for reduced motion, when it jumps.
  function bringIntoView(qid) {
    if (role !== "participant") return;
    const section = root.querySelector(`[data-class-question="${CSS.escape(qid)}"]`);
    const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    if (section) section.scrollIntoView({ behavior: still ? "auto" : "smooth", block: "start" });
  }

  // The projector shows only the question the class is on.
  function renderFocus() {
    if (role !== "projector") return;
    for (const s of root.querySelectorAll("[data-class-question]")) {
      s.hidden = s.dataset.classQuestion !== model.focus;
    }
    for (const s of root.querySelectorAll("[data-class-lab]")) s.hidden = true;
  }

  // watchRun shows the class run as any run is shown: the server's own
  // run panel (/runs/{id}/panel: progress, chart with the model beside the
  // measurement, rows), which runs.js streams over /ws/runs/{id} and
  // announces to screen readers. One run client for lessons and classes.
  async function watchRun(id) {
    if (run && run.id === id) return;
    const me = { id };
    run = me;
    const section = root.querySelector("[data-class-run]");
    const slot = section.querySelector("[data-class-run-slot]");
    section.querySelector("[data-run-link]").href = "/runs/" + encodeURIComponent(id);
    section.hidden = false;
    try {
      const res = await fetch("/runs/" + encodeURIComponent(id) + "/panel", { headers: { Accept: "text/html" } });
      if (!res.ok) throw new Error("the server answered " + res.status);
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const panel = doc.querySelector("[data-run-panel]");
      if (!panel) throw new Error("no run panel in the answer");
      if (run !== me) return;
      slot.replaceChildren(document.adoptNode(panel));
      document.dispatchEvent(new Event("capacitylab:runs"));
    } catch (err) {
      // The link to the run's own page stays; the next state tries again.
      if (run === me) run = null;
      slot.textContent = "The class run could not be shown here: open the run's own page.";
      console.error("class run:", err);
    }
  }

  root.addEventListener("click", (ev) => {
    const b = ev.target.closest("button");
    if (!b || b.disabled) return;
    const section = b.closest("[data-class-question]");
    if (b.dataset.vote && section) {
      send({ kind: "vote", question: section.dataset.classQuestion, option: b.dataset.vote });
    } else if (b.dataset.act === "end") {
      if (confirm("End the session? Nobody can join or vote after this.")) send({ kind: "end" });
    } else if (b.dataset.act && section) {
      send({ kind: b.dataset.act, question: section.dataset.classQuestion });
    } else if (b.dataset.run) {
      const msg = { kind: "run", lab: b.dataset.run };
      const knobs = changedKnobs(b.closest("[data-class-lab]"));
      if (knobs === null) return;
      if (Object.keys(knobs).length) msg.knobs = knobs;
      send(msg);
    }
  });

  // changedKnobs reads the knob fields the host changed from the preset;
  // null (with a message) if one is not a number.
  function changedKnobs(section) {
    const knobs = {};
    if (!section) return knobs;
    for (const input of section.querySelectorAll("[data-knob]")) {
      const v = input.value.trim();
      if (v === input.defaultValue.trim()) continue;
      const name = input.dataset.knob;
      if (name === "rates") {
        const rates = v.split(/[\s,]+/).filter(Boolean).map(Number);
        if (!rates.length || rates.some((r) => !Number.isFinite(r))) {
          flash = `Rates must be numbers separated by commas, like 20, 40, 60; "${v}" is not.`;
          setStatus();
          return null;
        }
        knobs.rates = rates;
        continue;
      }
      const n = Number(v);
      if (v === "" || !Number.isFinite(n) || (name !== "seconds" && !Number.isInteger(n))) {
        flash = `${name} must be ${name === "seconds" ? "a number" : "a whole number"}; "${v}" is not.`;
        setStatus();
        return null;
      }
      knobs[name] = n;
    }
    return knobs;
  }

  setStatus();
  connect();
}
