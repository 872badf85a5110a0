// classvotes.js: what a class session's page draws of one question from
// the session's state (session.js keeps the state) into the question's
// section: its status line and buttons, the bars of a round's votes, how
// answers moved between rounds, and the answer with its explanation.

const SVG = "http://www.w3.org/2000/svg";

// optionLabel is an option's words as plain text (for status lines);
// optionContent is a copy of its rendered Markdown (code in code type),
// for the bars, the answer and the verdict.
export function optionLabel(section, id) {
  const li = section.querySelector(`.options [data-option="${CSS.escape(id)}"]`);
  return li ? li.dataset.label : id;
}

// optionLetter is an option's letter (A, B, …: its place on the class's
// screens) as an element, for the bars and the answer.
export function optionLetter(section, id) {
  const li = section.querySelector(`.options [data-option="${CSS.escape(id)}"]`);
  const span = document.createElement("span");
  span.className = "option-letter";
  span.textContent = li ? li.dataset.letter || "" : "";
  return span;
}

export function optionContent(section, id) {
  const text = section.querySelector(`.options [data-option="${CSS.escape(id)}"] .option-text`);
  const span = document.createElement("span");
  span.className = "option-text";
  if (text) span.append(...[...text.childNodes].map((n) => n.cloneNode(true)));
  else span.textContent = id;
  return span;
}

// questionName is how the page names a question: its prompt's first
// words, as the class sees it.
export function questionName(section, qid) {
  const p = section?.querySelector("[data-q-prompt]");
  const t = p ? p.textContent.trim().replace(/\s+/g, " ") : qid;
  return "‘" + (t.length > 48 ? t.slice(0, 47).replace(/[\s,;:.]+\S*$/, "") + "…" : t) + "’";
}

// yourLastVote is the participant's vote in the last round they voted in.
export function yourLastVote(q) {
  for (let i = q.rounds.length - 1; i >= 0; i--) {
    if (q.rounds[i].yours) return q.rounds[i].yours;
  }
  return "";
}

// chart draws a round's votes as bars, one row per option in the
// page's order of the options (the one order of the session), with the
// option's words and its count as text: readable at any width, and by a
// screen reader as a list.
export function chart(section, q, rd, role) {
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
    label.append(optionLetter(section, id), " ", optionContent(section, id));
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

export function movement(section, rd) {
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
export function renderAnswer(section, q, role) {
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
  opt.append(optionLetter(section, q.correct), " ", optionContent(section, q.correct));
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

// renderQuestion draws question q (the session's state of it) into its
// section for role: its status line, the host's actions that make sense
// now or a participant's vote buttons, the rounds' bars and movement as
// role may see them, and the answer once shown. ended: the session has
// ended.
export function renderQuestion(section, q, role, ended) {
  const r = q.rounds.length ? q.rounds[q.rounds.length - 1] : undefined;
  const open = r && r.status === "open" && !ended;
  const statusP = section.querySelector("[data-q-status]");
  const answer = q.answered ? optionLabel(section, q.correct) : "";
  let text;
  let count = ""; // shown after text but not announced: see below
  if (!r) {
    text = "Voting has not opened.";
  } else if (role === "participant") {
    const yours = r.yours ? `Your vote: ${optionLabel(section, r.yours)}.` : "";
    if (r.status === "open") {
      text = r.yours ? `Round ${r.round} is open. ${yours} You can change it until voting closes.` : `Round ${r.round} is open: choose your answer.`;
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
      b.hidden = ended || !can[b.dataset.act];
    }
  }
  const results = section.querySelector("[data-q-results]");
  results.replaceChildren();
  for (const rd of q.rounds) {
    const show = role === "host" ? !!rd.counts : rd.status === "revealed" && !!rd.counts;
    if (!show) continue;
    results.append(chart(section, q, rd, role));
    if (rd.movement && rd.movement.length && (role === "host" || rd.status === "revealed")) {
      results.append(movement(section, rd));
    }
  }
  renderAnswer(section, q, role);
}
