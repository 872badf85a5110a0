// classsteps.js: what the host's keys do in a class session, worked out
// from the lesson's plan (its questions and labs in the page's order,
// planOf) and the session's state (session.js's model): the next step
// (Space, → or Page Down, and the host's Next button), Back (← or Page
// Up), the class run (R) and a second round (2). Each returns a step,
// {kind, question | lab, label}, that the server will accept as the
// session stands, a {kind: "wait"} step that says what to wait for, or
// null when there is nothing to do (session.js then says so).
//
// The next step follows the lesson: for each question in turn, open
// voting, close it, show the spread of the votes, and for a Predict
// that a lab settles, run that lab for the class (once the server runs
// labs, and unless the run was refused), then show the answer with its
// explanation. A question still open is closed first, whatever the
// focus: voting on another cannot open while it is.

import { questionName } from "./classvotes.js";

// planOf reads the plan of the lesson from a host page: every question
// and lab, in order. A question's lab is the lab its Next step runs
// (data-settling-lab, when the server runs labs for the class and the
// lab is measured, not simulated); settles is the lab that settles it
// whatever the server runs, which R runs.
export function planOf(root) {
  const runs = root.dataset.runs === "true";
  const labs = new Map();
  for (const el of root.querySelectorAll("[data-class-lab]")) {
    labs.set(el.dataset.classLab, el);
  }
  const plan = [];
  for (const el of root.querySelectorAll("[data-class-question], [data-class-lab]")) {
    if (el.dataset.classQuestion) {
      const settles = el.dataset.settlingLab || "";
      const lab = labs.get(settles);
      plan.push({
        kind: "question",
        id: el.dataset.classQuestion,
        type: el.dataset.qType,
        name: questionName(el, el.dataset.classQuestion),
        settles: lab ? settles : "",
        lab: runs && lab && lab.dataset.simulated !== "true" ? settles : "",
      });
    } else {
      plan.push({ kind: "lab", id: el.dataset.classLab, name: labName(el) });
    }
  }
  return plan;
}

// labName is how a step names a lab: its preset in words.
function labName(el) {
  const p = el.querySelector(".lab-preset");
  const t = p ? p.textContent.trim().replace(/\s+/g, " ") : el.dataset.classLab;
  return "‘" + (t.length > 48 ? t.slice(0, 47).replace(/[\s,;:.]+\S*$/, "") + "…" : t) + "’";
}

function lastRound(q) {
  return q && q.rounds.length ? q.rounds[q.rounds.length - 1] : undefined;
}

// runLive reports whether the class run is still waiting or running (or
// its state is still loading: runStatus ""), when the server would
// refuse another. A run whose state could not be read ("unknown") is not
// held against the next one: the server says if it still goes.
export function runLive(model) {
  return !!model.runID && ["", "queued", "running"].includes(model.runStatus);
}

// questionStep is the next step of question b, or null when it has none
// (not voted on yet, or its answer shows).
function questionStep(plan, b, model) {
  const q = model.questions.get(b.id);
  const r = lastRound(q);
  if (!q || !r || q.answered) return null;
  if (r.status === "open") return { kind: "close", question: b.id, label: `Close voting on ${b.name}` };
  if (r.status === "closed") return { kind: "reveal", question: b.id, label: `Show the spread of the votes on ${b.name}` };
  if (b.lab && model.runLab !== b.lab && !(model.runSkipped && model.runSkipped.has(b.id))) {
    if (runLive(model)) {
      return { kind: "wait", question: b.id, label: `Wait for the class run to end, then run the lab that settles ${b.name}` };
    }
    return { kind: "run", lab: b.lab, question: b.id, label: `Run the lab that settles ${b.name} for the class` };
  }
  const with_ = b.type === "predict" && b.settles ? ", with what the measurement showed" : "";
  return { kind: "answer", question: b.id, label: `Show the answer to ${b.name}${with_}` };
}

// current is the question the class is on: the focus, or the question
// the lab in focus settles.
function current(plan, model) {
  const f = plan.find((b) => b.id === model.focus);
  if (f && f.kind === "lab") return plan.find((b) => b.kind === "question" && b.settles === f.id) || null;
  return f || null;
}

// nextStep is what Space does: see the file's comment. After the
// question in focus, it walks the lesson from the focus on (then from its
// start) to the first question not finished: one voted on whose answer
// is not shown yet, or one not voted on, whose voting it opens.
export function nextStep(plan, model) {
  if (model.ended) return null;
  for (const b of plan) {
    const r = b.kind === "question" && lastRound(model.questions.get(b.id));
    if (r && r.status === "open") return questionStep(plan, b, model);
  }
  const cur = current(plan, model);
  const s = cur && questionStep(plan, cur, model);
  if (s) return s;
  const at = plan.findIndex((b) => b.id === model.focus);
  for (const b of [...plan.slice(at + 1), ...plan.slice(0, at + 1)]) {
    const q = b.kind === "question" && model.questions.get(b.id);
    if (!q) continue;
    if (!q.rounds.length) return { kind: "open", question: b.id, label: `Open voting on ${b.name}` };
    const s = questionStep(plan, b, model);
    if (s) return s;
  }
  return null;
}

// backStep is what Back does: the presenter shows again the block the
// class saw before the focus, in the order the lesson went: each question
// voted on, and the class run right after the question its lab settles
// (or where its lab is in the lesson). Nothing is undone.
export function backStep(plan, model) {
  if (model.ended) return null;
  const voted = (b) => {
    const q = b.kind === "question" && model.questions.get(b.id);
    return !!q && q.rounds.length > 0;
  };
  const run = plan.find((b) => b.kind === "lab" && b.id === model.runLab);
  const flow = [];
  for (const b of plan) {
    if (voted(b)) {
      flow.push(b);
      if (run && b.settles === run.id) flow.push(run);
    } else if (b === run && !plan.some((q) => voted(q) && q.settles === run.id)) {
      flow.push(b);
    }
  }
  const i = flow.findIndex((b) => b.id === model.focus);
  if (i <= 0) return null;
  const to = flow[i - 1];
  const step = { kind: "show", label: to.kind === "lab" ? "Back to the class run" : `Back to ${to.name}` };
  step[to.kind] = to.id;
  return step;
}

// runStep is what R does: run for the class the lab that settles the
// question in focus, or the lab in focus (again, if it ran already).
export function runStep(plan, model) {
  if (model.ended) return null;
  const f = plan.find((b) => b.id === model.focus);
  const lab = f && (f.kind === "lab" ? f.id : f.settles);
  if (!lab) return null;
  const cur = current(plan, model);
  if (runLive(model)) return { kind: "wait", question: cur ? cur.id : "", label: "Wait for the class run to end: one run at a time" };
  return { kind: "run", lab, question: cur ? cur.id : "", label: "Run the lab for the class" };
}

// secondRound is what 2 does: a second round of the question in focus.
export function secondRound(model) {
  const q = model.questions.get(model.focus);
  const r = lastRound(q);
  if (!q || !r || model.ended || r.status === "open" || q.rounds.length >= 2 || q.answered) return null;
  return { kind: "next_round", question: q.id, label: "A second round of voting" };
}
