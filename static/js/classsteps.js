// classsteps.js: what the host's keys do next in a class session: the
// next step (Space, → or Page Down, and the host's Next button) and a
// second round (2), from the session's state and the page's order of its
// blocks.

import { questionName } from "./classvotes.js";

function lastRound(q) {
  return q && q.rounds.length ? q.rounds[q.rounds.length - 1] : undefined;
}

function sectionOf(root, qid) {
  return root.querySelector(`[data-class-question="${CSS.escape(qid)}"]`);
}

// nextStep is what Space does on the host view: the step after the one
// the class is on. On the question in focus: close its voting, show the
// spread, show the answer; after a class run, the same for the Predict
// that run settles; then open the next question, in the lesson's order,
// that has not been voted on.
export function nextStep(root, model) {
  if (model.ended) return null;
  let q = model.questions.get(model.focus);
  if (!q && model.focus) {
    const settled = root.querySelector(`[data-settled-by="${CSS.escape(model.focus)}"]`);
    q = settled ? model.questions.get(settled.dataset.classQuestion) : undefined;
  }
  const r = lastRound(q);
  if (q && r && !q.answered) {
    const name = questionName(sectionOf(root, q.id), q.id);
    if (r.status === "open") return { kind: "close", question: q.id, label: `Close voting on ${name}` };
    if (r.status === "closed") return { kind: "reveal", question: q.id, label: `Show the spread of the votes on ${name}` };
    return { kind: "answer", question: q.id, label: q.type === "predict" ? `Show what the measurement showed for ${name}` : `Show the answer to ${name}` };
  }
  const blocks = Array.from(root.querySelectorAll("[data-class-question], [data-class-lab]"));
  const at = blocks.findIndex((b) => (b.dataset.classQuestion || b.dataset.classLab) === model.focus);
  for (const b of blocks.slice(at + 1)) {
    const id = b.dataset.classQuestion;
    const nq = id && model.questions.get(id);
    if (nq && !nq.rounds.length) return { kind: "open", question: id, label: `Open voting on ${questionName(sectionOf(root, id), id)}` };
  }
  return null;
}

// secondRound is what 2 does: a second round of the question in focus.
export function secondRound(model) {
  const q = model.questions.get(model.focus);
  const r = lastRound(q);
  if (!q || !r || model.ended || r.status === "open" || q.rounds.length >= 2 || q.answered) return null;
  return { kind: "next_round", question: q.id };
}
