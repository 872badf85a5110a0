// session.js: a class session's page (participant, host or presenter
// view). It keeps one websocket to /ws/sessions/{code} (protocol: package
// classroom's doc), resumes with ?since=&epoch= after a drop, and renders
// the questions, the tally, the spread of the votes and the answer. The
// class run is shown as any run is: the server's run panel, streamed by
// runs.js.
//
// Keys (the "?" dialog lists them): the host view moves the class on with
// Space, → or Page Down (the next step) and 2 (a second round). The
// presenter view (the projector's, which holds no host token) shows one
// thing at a time, J toggles its big join code and F full screen; when the
// host opened it from the host view, its Space, → and 2 are posted to that
// host page, which checks the message came from a window it opened and
// acts with its own token. The projector's address alone controls
// nothing.
//
// The parts: reconnect.js keeps the websocket open, classvotes.js draws
// the votes and the answer, classsteps.js works out the host's next step,
// classkeys.js reads the keys, presenter.js links the presenter window to
// the host page.

import { renderQuestion as drawQuestion } from "./classvotes.js";
import { keyAction, kbd } from "./classkeys.js";
import { nextStep, secondRound } from "./classsteps.js";
import { hostSide, presenterSide } from "./presenter.js";
import { keepOpen } from "./reconnect.js";
import { classGates } from "./classgates.js";

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
    questions: new Map(), // id → {type, options, correct, answered, explain, rounds: [...]}
    participants: new Map(),
    connected: 0,
    focus: "",
    runID: "",
    runLab: "",
    ended: false,
  };
  let conn = null; // the session's websocket (reconnect.js)
  let last = 0;
  let epoch = "";
  let ref = 0;
  let flash = "";
  let run = null;
  const pending = new Map(); // ref → the block whose button sent it, for its error
  let showJoin = false; // presenter: the join code shown on demand (J)

  // A participant's page fills in the parts after a Predict's gate once
  // its answer is shown (classgates.js).
  const openGates = classGates(root, code);
  const answered = (id) => !!(model.questions.get(id) || {}).answered;

  const wsBase = (location.protocol === "https:" ? "wss://" : "ws://") + location.host;
  const connected = () => !!conn && conn.connected();

  // connect opens the session's websocket, resuming after a drop with
  // since and epoch, until the session ends or the server closes it.
  function connect() {
    conn = keepOpen(
      () => {
        const q = new URLSearchParams();
        if (token) q.set("token", token);
        if (epoch) {
          q.set("since", String(last));
          q.set("epoch", epoch);
        }
        return wsBase + "/ws/sessions/" + encodeURIComponent(code) + "?" + q.toString();
      },
      {
        onMessage: (data) => {
          let m;
          try {
            m = JSON.parse(data);
          } catch {
            return;
          }
          if (m.seq > last) last = m.seq;
          onMessage(m);
        },
        onClose: (ev) => {
          if (model.ended || ev.code === 1000) {
            setStatus();
            renderNext();
            return false;
          }
          setStatus("Connection lost; reconnecting…");
          return true;
        },
      },
    );
  }

  // send sends a message; block is the question or lab section whose
  // button sent it, where an error about it will show.
  function send(msg, block) {
    if (!connected()) {
      showError(block, "Not connected right now; try again in a moment.");
      return;
    }
    flash = "";
    showError(block, "");
    ref += 1;
    msg.ref = ref;
    if (block) {
      pending.set(ref, block);
      // Only refusals and votes are answered by ref: forget old ones.
      if (pending.size > 64) pending.delete(pending.keys().next().value);
    }
    conn.send(JSON.stringify(msg));
  }

  // showError puts a message next to the button that caused it: in its
  // block's error line, or the page's status line if it has none.
  function showError(block, text) {
    const el = block && block.querySelector("[data-block-error]");
    if (el) {
      el.textContent = text;
      return;
    }
    flash = text;
    setStatus();
  }

  function onMessage(m) {
    switch (m.kind) {
      case "state":
        loadState(m.state);
        break;
      case "voted": {
        const r = round(m.question, m.round);
        if (r) r.yours = m.option;
        showError(pending.get(m.ref), "");
        pending.delete(m.ref);
        renderQuestion(m.question);
        break;
      }
      case "error":
        showError(pending.get(m.ref), m.message);
        pending.delete(m.ref);
        break;
      case "presence":
        if (m.participant) model.participants.set(m.participant.id, m.participant);
        model.connected = m.connected || 0;
        renderParticipants();
        break;
      case "tally": {
        const r = round(m.question, m.round);
        if (r) {
          if (m.counts) r.counts = m.counts;
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
        model.focus = m.question;
        showJoin = false;
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
        model.focus = m.question;
        renderQuestion(m.question);
        renderFocus();
        break;
      }
      case "answer": {
        const q = model.questions.get(m.question);
        if (!q) break;
        q.answered = true;
        q.correct = m.correct;
        q.explain = m.explain || {};
        model.focus = m.question;
        renderQuestion(m.question);
        renderFocus();
        if (role === "participant") openGates(answered);
        break;
      }
      case "run":
        model.runID = m.run_id;
        model.runLab = m.lab;
        model.focus = m.lab;
        showJoin = false;
        watchRun(m.run_id);
        renderFocus();
        break;
      case "ended":
        model.ended = true;
        for (const id of model.questions.keys()) renderQuestion(id);
        break;
    }
    setStatus();
    renderNext();
  }

  function loadState(st) {
    epoch = st.epoch;
    model.focus = st.focus;
    model.ended = st.ended;
    model.connected = st.connected;
    model.questions.clear();
    for (const q of st.questions) {
      model.questions.set(q.id, { ...q, rounds: q.rounds || [], explain: q.explain || {} });
    }
    model.participants.clear();
    for (const p of st.participants || []) model.participants.set(p.id, p);
    for (const id of model.questions.keys()) renderQuestion(id);
    renderParticipants();
    if (role === "participant") openGates(answered);
    if (st.run_id && !model.questions.has(st.focus)) model.runLab = st.focus;
    const fq = model.questions.get(model.focus);
    if (fq && fq.rounds.length && fq.rounds[fq.rounds.length - 1].status === "open") bringIntoView(model.focus);
    if (st.run_id && st.run_id !== model.runID) {
      model.runID = st.run_id;
      watchRun(st.run_id);
    }
    renderFocus();
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
      else if (!connected()) s = "Connecting…";
      else if (role === "participant") s = "Connected. Follow the instructor: questions open here when they start a vote.";
      else s = "Connected.";
    }
    if (flash) s += " " + flash;
    statusEl.textContent = s;
    statusEl.classList.toggle("form-error", !!flash);
  }

  function sectionOf(qid) {
    return root.querySelector(`[data-class-question="${CSS.escape(qid)}"]`);
  }

  function renderQuestion(qid) {
    const section = sectionOf(qid);
    const q = model.questions.get(qid);
    if (!section || !q) return;
    drawQuestion(section, q, role, model.ended);
    fit();
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
    const section = sectionOf(qid);
    const still = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    if (section) section.scrollIntoView({ behavior: still ? "auto" : "smooth", block: "start" });
  }

  // The presenter shows one thing at a time: the join code until the
  // class is on something (or while J holds it), else the question or the
  // class run the host last acted on, with the join code in a corner.
  function renderFocus() {
    if (role !== "projector") return;
    let screen = "join";
    if (!showJoin && model.questions.has(model.focus)) screen = "question";
    else if (!showJoin && model.runID && model.focus && model.focus === model.runLab) screen = "run";
    root.dataset.screen = screen;
    root.querySelector("[data-presenter-join]").hidden = screen !== "join";
    root.querySelector("[data-presenter-corner]").hidden = screen === "join";
    for (const s of root.querySelectorAll("[data-class-question]")) {
      s.hidden = screen !== "question" || s.dataset.classQuestion !== model.focus;
    }
    const runSection = root.querySelector("[data-class-run]");
    runSection.hidden = screen !== "run";
    fit();
  }

  // fit keeps the presenter view within the screen: when a long question
  // would scroll, its text shrinks in steps (to no less than 70%).
  let fitting = 0;
  function fit() {
    if (role !== "projector" || fitting) return;
    fitting = requestAnimationFrame(() => {
      fitting = 0;
      let f = 1;
      root.style.setProperty("--fit", "1");
      const page = document.documentElement;
      while (page.scrollHeight > window.innerHeight + 1 && f > 0.7) {
        f -= 0.05;
        root.style.setProperty("--fit", f.toFixed(2));
      }
    });
  }
  if (role === "projector") window.addEventListener("resize", fit);

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
    if (role !== "projector") section.hidden = false;
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
    fit();
  }

  function act(step) {
    if (!step) return;
    const block = sectionOf(step.question);
    send({ kind: step.kind, question: step.question }, block);
  }

  // renderNext shows the host the next step on its button (Space does the
  // same).
  function renderNext() {
    const bar = root.querySelector("[data-class-next]");
    if (!bar) return;
    const step = connected() ? nextStep(root, model) : null;
    const b = bar.querySelector("[data-next-step]");
    b.hidden = !step;
    if (step) b.textContent = "Next: " + step.label;
    const none = bar.querySelector("[data-next-none]");
    none.hidden = !!step;
    none.textContent = model.ended
      ? "The session has ended."
      : !connected()
        ? "Connecting…"
        : "No question is left to open: run a lab for the class, or end the session.";
  }

  root.addEventListener("click", (ev) => {
    const b = ev.target.closest("button, a[data-presenter-open]");
    if (!b || b.disabled) return;
    const section = b.closest("[data-class-question]");
    if (b.matches("a[data-presenter-open]")) {
      // A window this page opened, so that its keys reach this page.
      ev.preventDefault();
      if (host) host.open(b.href);
    } else if (b.dataset.vote && section) {
      send({ kind: "vote", question: section.dataset.classQuestion, option: b.dataset.vote }, section);
    } else if (b.dataset.act === "end") {
      if (confirm("End the session? Nobody can join or vote after this.")) send({ kind: "end" });
    } else if (b.dataset.act && section) {
      send({ kind: b.dataset.act, question: section.dataset.classQuestion }, section);
    } else if (b.dataset.run) {
      const lab = b.closest("[data-class-lab]");
      const msg = { kind: "run", lab: b.dataset.run };
      const knobs = changedKnobs(lab);
      if (knobs === null) return;
      if (Object.keys(knobs).length) msg.knobs = knobs;
      send(msg, lab);
    } else if (b.hasAttribute("data-next-step")) {
      act(nextStep(root, model));
    } else if (b.hasAttribute("data-keys-open")) {
      toggleKeys();
    } else if (b.hasAttribute("data-keys-close")) {
      toggleKeys(false);
    }
  });

  // changedKnobs reads the knob fields the host changed from the preset;
  // null (with a message beside the Run button) if one is not a number.
  function changedKnobs(section) {
    const knobs = {};
    if (!section) return knobs;
    for (const input of section.querySelectorAll("[data-knob] input")) {
      const v = input.value.trim();
      if (v === input.defaultValue.trim()) continue;
      const name = input.name;
      if (name === "rates") {
        const rates = v
          .split(/[\s,]+/)
          .filter(Boolean)
          .map(Number);
        if (!rates.length || rates.some((r) => !Number.isFinite(r))) {
          showError(section, `Rates must be numbers separated by commas, like 20, 40, 60; "${v}" is not.`);
          return null;
        }
        knobs.rates = rates;
        continue;
      }
      const n = Number(v);
      if (v === "" || !Number.isFinite(n) || (name !== "seconds" && !Number.isInteger(n))) {
        showError(section, `${name} must be ${name === "seconds" ? "a number" : "a whole number"}; "${v}" is not.`);
        return null;
      }
      knobs[name] = n;
    }
    return knobs;
  }

  // Keys (classkeys.js): "?" lists them; the host's move the class on,
  // the presenter's show the join code, go full screen, or are posted to
  // the host page that opened it (presenter.js).
  const dialog = root.querySelector("[data-keys-dialog]");
  function toggleKeys(open) {
    if (!dialog) return;
    const show = open === undefined ? !dialog.open : open;
    if (show && !dialog.open) dialog.showModal();
    else if (!show && dialog.open) dialog.close();
  }

  if (role === "host" || role === "projector") {
    document.addEventListener("keydown", (ev) => {
      const a = keyAction(ev, !!dialog && dialog.open);
      if (!a) return;
      ev.preventDefault();
      if (a === "help") toggleKeys();
      else if (role === "host") hostKey(a);
      else presenterKey(a);
    });
  }

  function hostKey(a) {
    if (a === "next") act(nextStep(root, model));
    else if (a === "round2") act(secondRound(model));
    else if (a === "join") host.join();
  }

  function presenterKey(a) {
    if (a === "join") {
      showJoin = !showJoin;
      renderFocus();
    } else if (a === "fullscreen") {
      if (document.fullscreenElement) document.exitFullscreen();
      else document.documentElement.requestFullscreen().catch(() => {});
    } else {
      presenter.post(a);
    }
  }

  // The host page and the presenter window it opened.
  const host = role === "host" ? hostSide(code, hostKey) : null;
  const presenter =
    role === "projector"
      ? presenterSide(code, {
          onControl: () => {
            root.dataset.control = "host";
            root.querySelector("[data-presenter-keys]").replaceChildren("Space: next step · 2: second round · J: join code · ", kbd("?"), " all keys");
            const note = root.querySelector("[data-keys-control-note]");
            if (note) note.textContent = "This window was opened from the host's page: its keys move the class on through that page.";
          },
          onJoin: () => presenterKey("join"),
        })
      : null;

  setStatus();
  renderNext();
  connect();
}
