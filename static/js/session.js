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
    questions: new Map(), // id → {type, options, correct, answered, explain, rounds: [...]}
    participants: new Map(),
    connected: 0,
    focus: "",
    runID: "",
    runLab: "",
    ended: false,
  };
  let ws = null;
  let last = 0;
  let epoch = "";
  let ref = 0;
  let backoff = 500;
  let flash = "";
  let run = null;
  const pending = new Map(); // ref → the block whose button sent it, for its error
  let showJoin = false; // presenter: the join code shown on demand (J)
  let presenterWin = null; // host: the presenter window this page opened
  let control = false; // presenter: the host page that opened it takes its keys

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
        renderNext();
        return;
      }
      setStatus("Connection lost; reconnecting…");
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 8000);
    };
  }

  // send sends a message; block is the question or lab section whose
  // button sent it, where an error about it will show.
  function send(msg, block) {
    if (!ws || ws.readyState !== WebSocket.OPEN) {
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
    ws.send(JSON.stringify(msg));
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

  function lastRound(q) {
    return q && q.rounds.length ? q.rounds[q.rounds.length - 1] : undefined;
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

  function sectionOf(qid) {
    return root.querySelector(`[data-class-question="${CSS.escape(qid)}"]`);
  }

  // optionLabel is an option's words as plain text (for status lines);
  // optionContent is a copy of its rendered Markdown (code in code type),
  // for the bars, the answer and the verdict.
  function optionLabel(section, id) {
    const li = section.querySelector(`.options [data-option="${CSS.escape(id)}"]`);
    return li ? li.dataset.label : id;
  }

  function optionContent(section, id) {
    const text = section.querySelector(`.options [data-option="${CSS.escape(id)}"] .option-text`);
    const span = document.createElement("span");
    span.className = "option-text";
    if (text) span.append(...[...text.childNodes].map((n) => n.cloneNode(true)));
    else span.textContent = id;
    return span;
  }

  // questionName is how the page names a question: its prompt's first
  // words, as the class sees it.
  function questionName(qid) {
    const p = sectionOf(qid)?.querySelector("[data-q-prompt]");
    const t = p ? p.textContent.trim().replace(/\s+/g, " ") : qid;
    return "‘" + (t.length > 48 ? t.slice(0, 47).replace(/[\s,;:.]+\S*$/, "") + "…" : t) + "’";
  }

  // yourLastVote is the participant's vote in the last round they voted in.
  function yourLastVote(q) {
    for (let i = q.rounds.length - 1; i >= 0; i--) {
      if (q.rounds[i].yours) return q.rounds[i].yours;
    }
    return "";
  }

  function renderQuestion(qid) {
    const section = sectionOf(qid);
    const q = model.questions.get(qid);
    if (!section || !q) return;
    const r = lastRound(q);
    const open = r && r.status === "open" && !model.ended;
    const statusP = section.querySelector("[data-q-status]");
    const answer = q.answered ? optionLabel(section, q.correct) : "";
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
      } else if (!q.answered) {
        text = `Round ${r.round} revealed. ${yours || "You did not vote."} The answer comes next.`;
      } else {
        const mine = yourLastVote(q);
        const verdict = !mine ? "You did not vote." : mine === q.correct ? "Your vote was right." : `You voted ${optionLabel(section, mine)}.`;
        text = `Round ${r.round} revealed. The answer is ${answer}. ${verdict}`;
      }
    } else {
      const n = r.total || 0;
      const votes = `${n} vote${n === 1 ? "" : "s"}`;
      if (r.status === "open") {
        text = `Round ${r.round}: voting is open,`;
        count = ` ${votes} so far.`;
      } else if (r.status === "closed") {
        text = `Round ${r.round}: voting closed with ${votes}.`;
      } else if (!q.answered) {
        text = `Round ${r.round}: revealed, ${votes}.`;
      } else {
        text = `Round ${r.round}: revealed, ${votes}. The answer is ${answer}.`;
      }
    }
    // Only the state is a live region: a screen reader announces voting
    // opening, closing, the spread and the answer, not every one of a
    // class's votes.
    const stateEl = statusP.querySelector("[data-q-state]");
    if (stateEl.textContent !== text) stateEl.textContent = text;
    statusP.querySelector("[data-q-count]").textContent = count;
    statusP.dataset.round = r ? String(r.round) : "0";
    statusP.dataset.state = r ? r.status : "none";
    section.dataset.state = !r ? "none" : q.answered ? "answered" : r.status;

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
        answer: !!r && r.status === "revealed" && !q.answered,
        next_round: !!r && r.status !== "open" && n < 2 && !q.answered,
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
    renderAnswer(section, q);
    fit();
  }

  // chart draws a round's votes as bars, one row per option in the
  // page's order of the options (the one order of the session), with the
  // option's words and its count as text: readable at any width, and by a
  // screen reader as a list.
  function chart(section, q, rd) {
    const fig = document.createElement("figure");
    fig.className = "votes";
    fig.dataset.round = String(rd.round);
    fig.setAttribute("data-testid", `chart-${q.id}-${rd.round}`);
    const cap = document.createElement("figcaption");
    const hidden = role === "host" && rd.status !== "revealed" ? " (only you see this until you show the spread)" : "";
    cap.textContent = `Round ${rd.round}: ${rd.total || 0} vote${rd.total === 1 ? "" : "s"}${hidden}`;
    const byOption = new Map((rd.counts || []).map((c) => [c.option, c.count]));
    const max = Math.max(1, ...byOption.values());
    const total = Math.max(1, rd.total || 0);
    const showCorrect = role === "host" || q.answered;
    const ul = document.createElement("ul");
    ul.className = "vote-bars";
    for (const li of section.querySelectorAll(".options [data-option]")) {
      const id = li.dataset.option;
      const n = byOption.get(id) || 0;
      const row = document.createElement("li");
      row.className = "vote-row";
      row.dataset.option = id;
      const label = document.createElement("span");
      label.className = "vote-label";
      label.append(optionContent(section, id));
      if (showCorrect && q.correct === id) {
        row.classList.add("correct");
        label.append(" ", tag("correct", "Answer"));
      }
      if (role === "participant" && rd.yours === id) {
        row.classList.add("yours");
        label.append(" ", tag("yours", "Your vote"));
      }
      const bar = document.createElementNS(SVG, "svg");
      bar.setAttribute("class", "vote-bar");
      bar.setAttribute("viewBox", "0 0 100 10");
      bar.setAttribute("preserveAspectRatio", "none");
      bar.setAttribute("aria-hidden", "true");
      bar.setAttribute("focusable", "false");
      const rect = document.createElementNS(SVG, "rect");
      rect.setAttribute("x", "0");
      rect.setAttribute("y", "0");
      rect.setAttribute("height", "10");
      rect.setAttribute("width", String(n ? Math.max((100 * n) / max, 0.8) : 0));
      rect.dataset.option = id;
      rect.dataset.count = String(n);
      bar.append(rect);
      const count = document.createElement("span");
      count.className = "vote-count";
      count.textContent = `${n} · ${Math.round((100 * n) / total)}%`;
      row.append(label, bar, count);
      ul.append(row);
    }
    fig.append(cap, ul);
    return fig;
  }

  function tag(kind, text) {
    const t = document.createElement("span");
    t.className = "tag " + kind;
    t.textContent = text;
    return t;
  }

  function movement(section, rd) {
    const div = document.createElement("div");
    div.className = "movement";
    div.setAttribute("data-testid", "movement");
    const p = document.createElement("p");
    p.textContent = `How answers moved from round ${rd.round - 1} to round ${rd.round}:`;
    const ul = document.createElement("ul");
    for (const m of rd.movement) {
      const li = document.createElement("li");
      const from = optionContent(section, m.from);
      if (m.from === m.to) li.append(`${m.count} stayed with `, from);
      else li.append(`${m.count} moved from `, from, " to ", optionContent(section, m.to));
      if (m.from === m.to) li.className = "stayed";
      ul.append(li);
    }
    div.append(p, ul);
    return div;
  }

  // renderAnswer shows the reveal's second step: the right option and
  // its explanation from the lesson, and to a participant whether their
  // own vote was right (and, if not, why that option is tempting and
  // wrong).
  function renderAnswer(section, q) {
    const box = section.querySelector("[data-q-answer]");
    if (!box) return;
    box.hidden = !q.answered;
    if (!q.answered) {
      box.replaceChildren();
      return;
    }
    if (box.dataset.shown === q.correct + "|" + yourLastVote(q)) return;
    box.dataset.shown = q.correct + "|" + yourLastVote(q);
    const title = document.createElement("p");
    title.className = "answer-title";
    title.textContent = q.type === "predict" ? "What the measurement shows" : "The answer";
    const opt = document.createElement("p");
    opt.className = "answer-option";
    opt.setAttribute("data-testid", `answer-option-${q.id}`);
    opt.append(optionContent(section, q.correct));
    const why = explanation(q, q.correct);
    why.setAttribute("data-testid", `answer-explain-${q.id}`);
    box.replaceChildren(title, opt, why);
    if (role !== "participant") return;
    const mine = yourLastVote(q);
    const verdict = document.createElement("div");
    verdict.setAttribute("data-testid", `your-verdict-${q.id}`);
    const v = document.createElement("p");
    v.className = "verdict";
    if (!mine) {
      verdict.className = "result";
      v.textContent = "You did not vote on this one.";
      verdict.append(v);
    } else if (mine === q.correct) {
      verdict.className = "result right";
      v.append("Right: you voted ", optionContent(section, mine), ".");
      verdict.append(v);
    } else {
      verdict.className = "result wrong";
      v.append("Not this time: you voted ", optionContent(section, mine), ".");
      verdict.append(v, explanation(q, mine));
    }
    box.append(verdict);
  }

  // explanation is an option's explanation from the lesson (its rendered
  // Markdown, which the server sent with the answer).
  function explanation(q, option) {
    const div = document.createElement("div");
    div.className = "explain";
    const t = document.createElement("template");
    t.innerHTML = (q.explain && q.explain[option]) || "";
    div.append(t.content);
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

  // nextStep is what Space does on the host view: the step after the one
  // the class is on. On the question in focus: close its voting, show the
  // spread, show the answer; after a class run, the same for the Predict
  // that run settles; then open the next question, in the lesson's order,
  // that has not been voted on.
  function nextStep() {
    if (model.ended) return null;
    let q = model.questions.get(model.focus);
    if (!q && model.focus) {
      const settled = root.querySelector(`[data-settled-by="${CSS.escape(model.focus)}"]`);
      q = settled ? model.questions.get(settled.dataset.classQuestion) : undefined;
    }
    const r = lastRound(q);
    if (q && r && !q.answered) {
      const name = questionName(q.id);
      if (r.status === "open") return { kind: "close", question: q.id, label: `Close voting on ${name}` };
      if (r.status === "closed") return { kind: "reveal", question: q.id, label: `Show the spread of the votes on ${name}` };
      return { kind: "answer", question: q.id, label: q.type === "predict" ? `Show what the measurement showed for ${name}` : `Show the answer to ${name}` };
    }
    const blocks = Array.from(root.querySelectorAll("[data-class-question], [data-class-lab]"));
    const at = blocks.findIndex((b) => (b.dataset.classQuestion || b.dataset.classLab) === model.focus);
    for (const b of blocks.slice(at + 1)) {
      const id = b.dataset.classQuestion;
      const nq = id && model.questions.get(id);
      if (nq && !nq.rounds.length) return { kind: "open", question: id, label: `Open voting on ${questionName(id)}` };
    }
    return null;
  }

  // secondRound is what 2 does: a second round of the question in focus.
  function secondRound() {
    const q = model.questions.get(model.focus);
    const r = lastRound(q);
    if (!q || !r || model.ended || r.status === "open" || q.rounds.length >= 2 || q.answered) return null;
    return { kind: "next_round", question: q.id };
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
    const step = ws && ws.readyState === WebSocket.OPEN ? nextStep() : null;
    const b = bar.querySelector("[data-next-step]");
    b.hidden = !step;
    if (step) b.textContent = "Next: " + step.label;
    const none = bar.querySelector("[data-next-none]");
    none.hidden = !!step;
    none.textContent = model.ended
      ? "The session has ended."
      : !ws || ws.readyState !== WebSocket.OPEN
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
      presenterWin = window.open(b.href, "capacitylab-presenter-" + code, "popup");
      if (!presenterWin) location.assign(b.href);
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
      act(nextStep());
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
    for (const input of section.querySelectorAll("[data-knob]")) {
      const v = input.value.trim();
      if (v === input.defaultValue.trim()) continue;
      const name = input.dataset.knob;
      if (name === "rates") {
        const rates = v.split(/[\s,]+/).filter(Boolean).map(Number);
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

  // Keys. Nothing happens while the reader types in a field or has a
  // control focused (Space presses a focused button), or with a modifier.
  const dialog = root.querySelector("[data-keys-dialog]");
  function toggleKeys(open) {
    if (!dialog) return;
    const show = open === undefined ? !dialog.open : open;
    if (show && !dialog.open) dialog.showModal();
    else if (!show && dialog.open) dialog.close();
  }

  function keyAction(ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return "";
    const t = ev.target;
    if (t.closest && t.closest("input, textarea, select, [contenteditable]")) return "";
    if (ev.key === "?") return "help";
    if (dialog && dialog.open) return "";
    if (t.closest && t.closest("button, a, summary")) return "";
    switch (ev.key) {
      case " ":
      case "ArrowRight":
      case "PageDown":
        return "next";
      case "2":
        return "round2";
      case "j":
      case "J":
        return "join";
      case "f":
      case "F":
        return "fullscreen";
    }
    return "";
  }

  if (role === "host" || role === "projector") {
    document.addEventListener("keydown", (ev) => {
      const a = keyAction(ev);
      if (!a) return;
      ev.preventDefault();
      if (a === "help") toggleKeys();
      else if (role === "host") hostKey(a);
      else presenterKey(a);
    });
  }

  function hostKey(a) {
    if (a === "next") act(nextStep());
    else if (a === "round2") act(secondRound());
    else if (a === "join" && presenterWin && !presenterWin.closed) {
      presenterWin.postMessage({ type: "capacitylab:host", code, action: "join" }, location.origin);
    }
  }

  function presenterKey(a) {
    if (a === "join") {
      showJoin = !showJoin;
      renderFocus();
    } else if (a === "fullscreen") {
      if (document.fullscreenElement) document.exitFullscreen();
      else document.documentElement.requestFullscreen().catch(() => {});
    } else if (window.opener) {
      // The host page that opened this window acts, with its own token;
      // it checks this message came from a window it opened.
      window.opener.postMessage({ type: "capacitylab:presenter", code, action: a }, location.origin);
    }
  }

  if (role === "host") {
    // The presenter window posts its keys here. Only a window of this
    // site that this page (or this tab before a reload) opened, showing
    // this session's presenter view, is listened to.
    window.addEventListener("message", (ev) => {
      const d = ev.data;
      if (ev.origin !== location.origin || !d || d.type !== "capacitylab:presenter" || d.code !== code) return;
      let mine = false;
      try {
        mine = !!ev.source && ev.source.opener === window && ev.source.location.pathname === `/sessions/${code}/projector`;
      } catch {
        mine = false;
      }
      if (!mine) return;
      presenterWin = ev.source;
      if (d.action === "hello") {
        ev.source.postMessage({ type: "capacitylab:host", code, action: "ready" }, location.origin);
      } else if (d.action === "next" || d.action === "round2") {
        hostKey(d.action);
      }
    });
  }

  if (role === "projector") {
    const hint = root.querySelector("[data-presenter-keys]");
    window.addEventListener("message", (ev) => {
      const d = ev.data;
      if (ev.origin !== location.origin || ev.source !== window.opener || !d || d.type !== "capacitylab:host" || d.code !== code) return;
      if (d.action === "ready" && !control) {
        control = true;
        root.dataset.control = "host";
        hint.replaceChildren("Space: next step · 2: second round · J: join code · ", kbd("?"), " all keys");
        const note = root.querySelector("[data-keys-control-note]");
        if (note) note.textContent = "This window was opened from the host's page: its keys move the class on through that page.";
      } else if (d.action === "join") {
        presenterKey("join");
      }
    });
    if (window.opener) {
      try {
        window.opener.postMessage({ type: "capacitylab:presenter", code, action: "hello" }, location.origin);
      } catch {
        // An opener of another site: this window only watches.
      }
    }
  }

  function kbd(text) {
    const k = document.createElement("kbd");
    k.textContent = text;
    return k;
  }

  setStatus();
  renderNext();
  connect();
}
