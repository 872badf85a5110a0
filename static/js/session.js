// session.js: a class session's page (participant, host or presenter
// view). It keeps one websocket to /ws/sessions/{code} (protocol: package
// classroom's doc), resumes with ?since=&epoch= after a drop, and renders
// the questions, the tally, the spread of the votes and the answer. The
// class run is shown as any run is: the server's run panel, streamed by
// runs.js. A class run that does not finish is told to the room in words
// for a room, with the lesson's recorded run of the preset (or a
// simulation of it) under it at once (GET /sessions/{code}/recorded/{lab}).
//
// Keys (the "?" dialog lists them): the host view moves the class on with
// Space, → or Page Down (the next step, classsteps.js), ← or Page Up
// (Back), R (the class run), 2 (a second round), and B blanks the
// presenter view. The presenter view (the projector's, which holds no host
// token) shows one thing at a time; J toggles its big join code, B blanks
// it and F goes full screen; when the host opened it from the host view,
// its other keys are posted to that host page, which checks the message
// came from a window it opened and acts with its own token, and what the
// host page has to say (a refusal, or that there is nothing to do) shows
// on the presenter too, where the host is looking. The projector's
// address alone controls nothing, and says so. While the class run waits
// or runs, the host view and the presenter view the host opened show a
// Stop control, which cancels it (the presenter's through the host page).
//
// The parts: reconnect.js keeps the websocket open, classvotes.js draws
// the votes and the answer, classsteps.js works out the host's steps,
// classkeys.js reads the keys, presenter.js links the presenter window to
// the host page.

import { renderQuestion as drawQuestion } from "./classvotes.js";
import { keyAction, kbd } from "./classkeys.js";
import { planOf, nextStep, backStep, runStep, secondRound } from "./classsteps.js";
import { hostSide, presenterSide } from "./presenter.js";
import { keepOpen } from "./reconnect.js";
import { classGates } from "./classgates.js";

const root = document.querySelector("[data-class-role]");
if (root) {
  start(root);
}

// A run's terminal kinds.
const runEnds = ["done", "failed", "cancelled", "interrupted"];

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
    runStatus: "", // the class run's: "" while its panel loads, then queued, running, done, failed, … or unknown
    runSkipped: new Set(), // questions whose run step the server refused: Next goes on to the answer
    ended: false,
  };
  const plan = role === "host" ? planOf(root) : [];
  let conn = null; // the session's websocket (reconnect.js)
  let last = 0;
  let epoch = "";
  let ref = 0;
  let flash = "";
  let run = null;
  const pending = new Map(); // ref → {block, from, step}: where a refusal of it shows
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
  // button sent it, where an error about it will show. from says where
  // the host is looking when a key or the Next button sent it ("host":
  // this page's Next bar; "presenter": the presenter window as well), and
  // step is the step it takes.
  function send(msg, block, from = "", step = null) {
    if (!connected()) {
      showError(block, "Not connected right now; try again in a moment.");
      if (from) tell("Not connected right now; try again in a moment.", true, from);
      return;
    }
    flash = "";
    showError(block, "");
    ref += 1;
    msg.ref = ref;
    if (block || from) {
      pending.set(ref, { block, from, step });
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
        const p = pending.get(m.ref);
        showError(p && p.block, "");
        pending.delete(m.ref);
        renderQuestion(m.question);
        break;
      }
      case "error": {
        const p = pending.get(m.ref) || {};
        showError(p.block, m.message);
        if (p.from) tell(m.message, true, p.from);
        // A refused class run (the queue full, say) is not offered again
        // by Next: the answer comes next, and R tries again.
        if (p.step && p.step.kind === "run" && p.step.question) model.runSkipped.add(p.step.question);
        // A refused Stop (the run ended meanwhile) may be pressed again.
        if (p.block === runSection) runSection.querySelector("[data-class-cancel]").disabled = false;
        pending.delete(m.ref);
        break;
      }
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
      case "focus":
        model.focus = m.question || m.lab || "";
        showJoin = false;
        renderFocus();
        break;
      case "run":
        model.runID = m.run_id;
        model.runLab = m.lab;
        model.runStatus = "queued";
        model.focus = m.lab;
        showJoin = false;
        watchRun(m.run_id);
        renderFocus();
        break;
      case "ended":
        model.ended = true;
        for (const id of model.questions.keys()) renderQuestion(id);
        renderRunStop();
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
    const fq = model.questions.get(model.focus);
    if (fq && fq.rounds.length && fq.rounds[fq.rounds.length - 1].status === "open") bringIntoView(model.focus);
    if (st.run_id && st.run_id !== model.runID) {
      // Which lab it is of, and how it stands, come with its panel.
      model.runID = st.run_id;
      model.runStatus = "";
      if (!model.questions.has(st.focus)) model.runLab = st.focus;
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
    return qid ? root.querySelector(`[data-class-question="${CSS.escape(qid)}"]`) : null;
  }

  function labSection(lab) {
    return lab ? root.querySelector(`[data-class-lab="${CSS.escape(lab)}"]`) : null;
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
  // class run in focus, with the join code in a corner.
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
  // The panel says which lab the run is of and how it stands.
  const runSection = root.querySelector("[data-class-run]");
  async function watchRun(id, tries = 0) {
    if (run && run.id === id) return;
    const me = { id };
    run = me;
    const slot = runSection.querySelector("[data-class-run-slot]");
    runSection.querySelector("[data-run-link]").href = "/runs/" + encodeURIComponent(id);
    clearRunEnd();
    if (role !== "projector") runSection.hidden = false;
    try {
      const res = await fetch("/runs/" + encodeURIComponent(id) + "/panel", { headers: { Accept: "text/html" } });
      if (!res.ok) throw new Error("the server answered " + res.status);
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const panel = doc.querySelector("[data-run-panel]");
      if (!panel) throw new Error("no run panel in the answer");
      if (run !== me) return;
      slot.replaceChildren(document.adoptNode(panel));
      model.runLab = panel.dataset.block || model.runLab;
      const status = panel.querySelector('[data-testid="run-status"]');
      model.runStatus = (status && status.dataset.status) || "unknown";
      renderRunStop();
      if (runEnds.includes(model.runStatus) && model.runStatus !== "done") {
        runEnded({ kind: model.runStatus, window: Number(panel.dataset.rows || "0"), windows: Number(panel.dataset.windows || "0") });
      }
      document.dispatchEvent(new Event("capacitylab:runs"));
    } catch (err) {
      // The link to the run's own page stays, and the panel is asked for
      // again (a busy server may refuse a request for a moment; no later
      // message would bring it). Stop needs only the run's id, so it
      // shows meanwhile: a Stop on a run that has ended is refused.
      console.error("class run:", err);
      if (run !== me) return;
      model.runStatus = "unknown";
      const why = document.createElement("p");
      why.className = "form-error";
      why.textContent = "The class run could not be shown here yet (" + err.message + "): open the run's own page, or wait a moment.";
      slot.replaceChildren(why);
      renderRunStop();
      if (tries < 5) {
        setTimeout(
          () => {
            if (run !== me || model.runID !== id) return;
            run = null;
            watchRun(id, tries + 1);
          },
          1000 * (tries + 1),
        );
      }
    }
    renderFocus();
    renderNext();
    fit();
  }

  // A class run's end, from runs.js (the terminal event, bubbling from
  // its panel).
  runSection.addEventListener("capacitylab:run-end", (ev) => {
    const e = ev.detail || {};
    model.runStatus = e.kind || "unknown";
    if (e.kind !== "done") runEnded(e);
    renderRunStop();
    renderNext();
  });

  // renderRunStop shows the class run's Stop control while the run waits
  // or runs: on the host view, and on the presenter view the host page
  // opened (its Stop goes through that page, as its keys do).
  function renderRunStop() {
    const stop = runSection.querySelector("[data-class-run-stop]");
    if (!stop) return;
    const may = role === "host" || (role === "projector" && root.dataset.control === "host");
    const going = !!model.runID && !runEnds.includes(model.runStatus) && !model.ended;
    stop.hidden = !(may && going);
    if (stop.hidden) stop.querySelector("[data-class-cancel]").disabled = false;
  }

  // stopRun asks the server to cancel the class run; the run's stream
  // then ends it on every screen.
  function stopRun(from) {
    const b = runSection.querySelector("[data-class-cancel]");
    if (role === "projector") {
      presenterKey("cancel");
      return;
    }
    if (b) b.disabled = true;
    send({ kind: "cancel" }, runSection, from);
  }

  function clearRunEnd() {
    delete runSection.dataset.runEnd;
    const note = runSection.querySelector("[data-class-run-note]");
    note.hidden = true;
    note.textContent = "";
    const fallback = runSection.querySelector("[data-class-fallback]");
    fallback.hidden = true;
    fallback.replaceChildren();
  }

  // runEnded tells the room that the class run did not finish, in words
  // for the room (the run's own reason, written for a learner at their
  // own run, stays on the host's screen), and shows at once the lesson's
  // recorded run of the preset, or a simulation of it. e is the run's
  // terminal event: kind, and window (how many windows it measured) of
  // windows.
  async function runEnded(e) {
    const lab = model.runLab;
    const forRun = model.runID;
    runSection.dataset.runEnd = e.kind || "failed";
    runSection.dataset.runRows = String(e.window || 0);
    const what =
      e.kind === "interrupted"
        ? "The live run was cut short: the server restarted"
        : e.kind === "cancelled"
          ? "The live run was cancelled"
          : !e.window
            ? "The live run could not start this time"
            : `The live run stopped after ${e.window} of ${e.windows} windows`;
    const note = runSection.querySelector("[data-class-run-note]");
    const say = (text) => {
      note.textContent = text;
      note.hidden = false;
      // A screen reader hears the room's words, not the learner's reason
      // runs.js announced a moment before.
      const live = role !== "host" && runSection.querySelector('[data-testid="run-announce"]');
      if (live) live.textContent = text;
      fit();
    };
    say(what + ". The run recorded for this lesson is on its way…");
    const fallback = runSection.querySelector("[data-class-fallback]");
    try {
      const q = token ? "?token=" + encodeURIComponent(token) : "";
      const res = await fetch(`/sessions/${encodeURIComponent(code)}/recorded/${encodeURIComponent(lab)}${q}`, { headers: { Accept: "text/html" } });
      if (!res.ok) throw new Error("the server answered " + res.status);
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const part = doc.querySelector("[data-testid='class-recorded']");
      if (!part) throw new Error("no recorded run in the answer");
      if (model.runID !== forRun) return;
      fallback.replaceChildren(document.adoptNode(part));
      fallback.hidden = false;
      say(
        part.dataset.kind === "simulated"
          ? what + ". Below is a simulation of the same settings instead: computed, not measured."
          : what + ". Below is the run recorded for this lesson with the same settings instead.",
      );
    } catch (err) {
      if (model.runID === forRun) say(what + ". The lesson's recorded run could not be shown here: it is in the lesson's own page.");
      console.error("class run's recorded run:", err);
    }
  }

  // act takes a step (classsteps.js) for a key or the Next button: from
  // is "host" (this page's) or "presenter" (posted by the presenter
  // window); none is what to say when there is no step.
  function act(step, from, none) {
    tell("", false, from);
    if (!step) {
      tell(none, false, from);
      return;
    }
    if (step.kind === "wait") {
      tell(step.label + ".", false, from);
      return;
    }
    if (step.kind === "run") {
      startRun(step.lab, from, step);
      return;
    }
    if (step.kind === "show") {
      const msg = step.question ? { kind: "show", question: step.question } : { kind: "show", lab: step.lab };
      send(msg, sectionOf(step.question) || labSection(step.lab), from, step);
      return;
    }
    send({ kind: step.kind, question: step.question }, sectionOf(step.question), from, step);
  }

  // startRun runs lab for the class with the knobs the host changed in
  // its block (the block's Run button, R and the run step alike).
  function startRun(lab, from = "", step = null) {
    const section = labSection(lab);
    const msg = { kind: "run", lab };
    const k = changedKnobs(section);
    if (k.error) {
      showError(section, k.error);
      if (from) tell(k.error, true, from);
      return;
    }
    if (Object.keys(k.knobs).length) msg.knobs = k.knobs;
    send(msg, section, from, step);
  }

  // tell says text where the host is looking: the Next bar of this page,
  // and the presenter window too when the key came from there. An error
  // is a refusal; anything else a notice ("nothing to do").
  function tell(text, error, from) {
    if (role !== "host" || !from) return;
    const el = root.querySelector("[data-next-message]");
    if (el) {
      el.textContent = text;
      el.classList.toggle("form-error", !!error && !!text);
    }
    if (from === "presenter" && text) host.notice(text, error);
  }

  // renderNext shows the host the next step on its button (Space does the
  // same).
  function renderNext() {
    const bar = root.querySelector("[data-class-next]");
    if (!bar) return;
    const step = connected() ? nextStep(plan, model) : null;
    const b = bar.querySelector("[data-next-step]");
    const go = !!step && step.kind !== "wait";
    b.hidden = !go;
    if (go) b.textContent = "Next: " + step.label;
    const none = bar.querySelector("[data-next-none]");
    none.hidden = go;
    none.textContent = step ? step.label + "." : noneText();
  }

  function noneText() {
    if (model.ended) return "The session has ended.";
    if (!connected()) return "Connecting…";
    return "Every question of the lesson is done: end the session when the class is, and its results stay at the CSV links.";
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
      startRun(b.dataset.run);
    } else if (b.hasAttribute("data-class-cancel")) {
      stopRun("host");
    } else if (b.hasAttribute("data-next-step")) {
      hostKey("next", "host");
    } else if (b.hasAttribute("data-keys-open")) {
      toggleKeys();
    } else if (b.hasAttribute("data-keys-close")) {
      toggleKeys(false);
    }
  });

  // changedKnobs reads the knob fields the host changed from the preset:
  // {knobs}, or {error} saying which one is not a number.
  function changedKnobs(section) {
    const knobs = {};
    if (!section) return { knobs };
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
          return { error: `Rates must be numbers separated by commas, like 20, 40, 60; "${v}" is not.` };
        }
        knobs.rates = rates;
        continue;
      }
      const n = Number(v);
      if (v === "" || !Number.isFinite(n) || (name !== "seconds" && !Number.isInteger(n))) {
        return { error: `${name} must be ${name === "seconds" ? "a number" : "a whole number"}; "${v}" is not.` };
      }
      knobs[name] = n;
    }
    return { knobs };
  }

  // Keys (classkeys.js): "?" lists them; the host's move the class on,
  // the presenter's show the join code, blank the screen, go full screen,
  // or are posted to the host page that opened it (presenter.js).
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
      else if (role === "host") hostKey(a, "host");
      else presenterKey(a);
    });
  }

  // hostKey does what a key asks on the host page; from is where it was
  // pressed ("host", or "presenter" when the presenter window posted it).
  function hostKey(a, from) {
    if (a === "next") act(nextStep(plan, model), from, noneText());
    else if (a === "back")
      act(backStep(plan, model), from, "Nothing before this to go back to: Back shows the questions and the class run the class has seen.");
    else if (a === "run") act(runStep(plan, model), from, "No lab to run here: R runs the lab that settles the prediction on screen.");
    else if (a === "round2")
      act(secondRound(model), from, "A second round is for the question on screen, once its voting has closed and before its answer shows.");
    else if (a === "cancel") stopRun(from);
    else if (a === "join" && !host.join()) tell("Open the presenter view from this page first: J then shows its join code.", false, from);
    else if (a === "blank" && !host.blank()) tell("Open the presenter view from this page first: B then blanks it.", false, from);
  }

  // The presenter's keys: J, B and F act here; the others move the class
  // on through the host page that opened this window, if one did.
  let blank = false;
  function setBlank(on) {
    blank = on;
    root.querySelector("[data-presenter-blank]").hidden = !on;
    if (on) root.dataset.blank = "true";
    else delete root.dataset.blank;
    presenter.post("blanked", { on });
  }

  function presenterKey(a) {
    if (a === "join") {
      showJoin = !showJoin;
      renderFocus();
    } else if (a === "blank") {
      setBlank(!blank);
    } else if (a === "fullscreen") {
      if (document.fullscreenElement) document.exitFullscreen();
      else document.documentElement.requestFullscreen().catch(() => {});
    } else if (!presenter.control()) {
      notice(
        "This window only shows the class. To move it on with keys, open it with “Open the presenter view” on the host's page, and keep that page open.",
        false,
      );
    } else {
      if (blank) setBlank(false); // as a presentation's screen comes back with its next step
      presenter.post(a);
    }
  }

  // notice shows text on the presenter view for a while: what the host
  // page said about a key (a refusal, or that there is nothing to do).
  let noticeTimer = 0;
  function notice(text, error) {
    const el = root.querySelector("[data-presenter-notice]");
    if (!el) return;
    clearTimeout(noticeTimer);
    el.textContent = text;
    el.classList.toggle("form-error", !!error);
    el.hidden = !text;
    noticeTimer = setTimeout(() => {
      el.hidden = true;
      el.textContent = "";
    }, 8000);
  }

  // The host page and the presenter window it opened.
  const host =
    role === "host"
      ? hostSide(
          code,
          (a) => hostKey(a, "presenter"),
          (on) => {
            const el = root.querySelector("[data-next-blank]");
            if (el) el.hidden = !on;
          },
        )
      : null;
  const presenter =
    role === "projector"
      ? presenterSide(code, {
          onControl: () => {
            root.dataset.control = "host";
            root
              .querySelector("[data-presenter-keys]")
              .replaceChildren("Space: next step · ←: back · R: class run · B: blank · J: join code · ", kbd("?"), " all keys");
            const note = root.querySelector("[data-keys-control-note]");
            if (note) note.textContent = "This window was opened from the host's page: its keys move the class on through that page.";
            renderRunStop();
          },
          onJoin: () => presenterKey("join"),
          onBlank: () => setBlank(!blank),
          onNotice: notice,
        })
      : null;

  setStatus();
  renderNext();
  connect();
}
