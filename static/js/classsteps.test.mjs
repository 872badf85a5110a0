// node --test of classsteps.js: the host's next step, Back and R, walked
// against a stand-in for the server that refuses what package classroom
// refuses (a second question opened while one is open, a step out of
// order, a run while the class's run goes on).
import { test } from "node:test";
import assert from "node:assert/strict";
import { nextStep, backStep, runStep, secondRound } from "./classsteps.js";

// The fixture lesson's shape: a Predict settled by a lab, the lab, a
// Check; and a second Predict settled by a lab of its own.
const plan = [
  { kind: "question", id: "p1", type: "predict", name: "‘p1’", settles: "lab1", lab: "lab1" },
  { kind: "lab", id: "lab1", name: "‘lab1’" },
  { kind: "question", id: "c1", type: "check", name: "‘c1’", settles: "", lab: "" },
  { kind: "question", id: "p2", type: "predict", name: "‘p2’", settles: "lab2", lab: "lab2" },
  { kind: "lab", id: "lab2", name: "‘lab2’" },
];

function newModel() {
  const questions = new Map();
  for (const b of plan) if (b.kind === "question") questions.set(b.id, { id: b.id, type: b.type, rounds: [], answered: false });
  return { questions, focus: "", runID: "", runLab: "", runStatus: "", runSkipped: new Set(), ended: false };
}

// server applies a step as package classroom does, or throws its refusal.
function server(model, s) {
  const q = model.questions.get(s.question);
  const r = q && q.rounds[q.rounds.length - 1];
  const open = [...model.questions.values()].find((x) => x.rounds.length && x.rounds[x.rounds.length - 1].status === "open");
  switch (s.kind) {
    case "open":
      if (open) throw new Error(`open ${s.question}: ${open.id} is still open: close it first`);
      if (q.rounds.length) throw new Error(`open ${s.question}: voted on already`);
      q.rounds.push({ round: 1, status: "open" });
      model.focus = q.id;
      return;
    case "next_round":
      if (open || !r || q.answered || q.rounds.length >= 2) throw new Error(`next_round ${s.question} refused`);
      q.rounds.push({ round: 2, status: "open" });
      model.focus = q.id;
      return;
    case "close":
      if (!r || r.status !== "open") throw new Error(`close ${s.question}: not open`);
      r.status = "closed";
      model.focus = q.id;
      return;
    case "reveal":
      if (!r || r.status === "revealed") throw new Error(`reveal ${s.question} refused`);
      r.status = "revealed";
      model.focus = q.id;
      return;
    case "answer":
      if (!r || q.answered) throw new Error(`answer ${s.question} refused`);
      r.status = "revealed";
      q.answered = true;
      model.focus = q.id;
      return;
    case "run":
      if (model.runID && !["done", "failed", "cancelled", "interrupted"].includes(model.runStatus)) throw new Error("run: the class's last run is still going");
      model.runID = "run-" + s.lab;
      model.runLab = s.lab;
      model.runStatus = "queued";
      model.focus = s.lab;
      return;
    case "show":
      model.focus = s.question || s.lab;
      return;
  }
  throw new Error("the server knows no step " + s.kind);
}

function name(s) {
  return s.kind + " " + (s.lab || s.question);
}

test("Space alone walks the lesson: vote, spread, the class run, the answer; never refused", () => {
  const m = newModel();
  const done = [];
  for (let s = nextStep(plan, m); s; s = nextStep(plan, m)) {
    assert.notEqual(s.kind, "wait", `a wait at ${done.join(", ")}`);
    server(m, s);
    done.push(name(s));
    if (s.kind === "run") m.runStatus = "done"; // the host watches the run end
    assert.ok(done.length < 30, "the walk does not end");
  }
  assert.deepEqual(done, [
    "open p1",
    "close p1",
    "reveal p1",
    "run lab1",
    "answer p1",
    "open c1",
    "close c1",
    "reveal c1",
    "answer c1",
    "open p2",
    "close p2",
    "reveal p2",
    "run lab2",
    "answer p2",
  ]);
  assert.equal(nextStep(plan, m), null, "nothing is left once every answer shows");
});

test("Space during the class run shows the answer: the run need not end first", () => {
  const m = newModel();
  for (const k of ["open", "close", "reveal"]) server(m, { kind: k, question: "p1" });
  server(m, nextStep(plan, m)); // the run, still going
  assert.equal(m.runStatus, "queued");
  const s = nextStep(plan, m);
  assert.equal(name(s), "answer p1");
  assert.match(s.label, /with what the measurement showed/);
});

test("a question left open is closed first, even with a class run in focus (issue 31, item 9)", () => {
  const m = newModel();
  // Finish p1, open the Check, then the host runs the lab by hand.
  for (const k of ["open", "close", "reveal", "answer"]) server(m, { kind: k, question: "p1" });
  server(m, { kind: "open", question: "c1" });
  server(m, { kind: "run", lab: "lab1" });
  const s = nextStep(plan, m);
  assert.equal(name(s), "close c1");
  server(m, s); // accepted
});

test("the run step waits for another lab's run still going, and never offers a refused run again", () => {
  const m = newModel();
  server(m, { kind: "run", lab: "lab2" }); // the host ran lab2 early; it is still going
  for (const k of ["open", "close", "reveal"]) server(m, { kind: k, question: "p1" });
  const wait = nextStep(plan, m);
  assert.equal(wait.kind, "wait");
  assert.match(wait.label, /Wait for the class run to end/);
  m.runStatus = "done";
  assert.equal(name(nextStep(plan, m)), "run lab1");
  // The server refused the run (its queue full): Next goes on to the answer.
  m.runSkipped.add("p1");
  assert.equal(name(nextStep(plan, m)), "answer p1");
});

test("without class runs (or a simulated lab) a Predict goes from its spread to its answer", () => {
  const noRuns = plan.map((b) => (b.kind === "question" ? { ...b, lab: "" } : b));
  const m = newModel();
  for (const k of ["open", "close", "reveal"]) server(m, { kind: k, question: "p1" });
  assert.equal(name(nextStep(noRuns, m)), "answer p1");
});

test("a question whose answer was skipped is taken up after the one the host went on to", () => {
  const m = newModel();
  for (const k of ["open", "close", "reveal"]) server(m, { kind: k, question: "c1" });
  // The host opened p2 by its own button, leaving c1 without its answer.
  server(m, { kind: "open", question: "p2" });
  const walk = [];
  for (let s = nextStep(plan, m); s && walk.length < 12; s = nextStep(plan, m)) {
    server(m, s);
    if (s.kind === "run") m.runStatus = "done";
    walk.push(name(s));
  }
  assert.deepEqual(walk, ["close p2", "reveal p2", "run lab2", "answer p2", "open p1", "close p1", "reveal p1", "run lab1", "answer p1", "answer c1"]);
});

test("Back shows the blocks the class saw, in the lesson's order, the class run after its Predict", () => {
  const m = newModel();
  assert.equal(backStep(plan, m), null); // nothing yet
  for (const k of ["open", "close", "reveal"]) server(m, { kind: k, question: "p1" });
  server(m, { kind: "run", lab: "lab1" });
  m.runStatus = "done";
  server(m, { kind: "answer", question: "p1" });
  server(m, { kind: "open", question: "c1" });
  const seen = [];
  for (let s = backStep(plan, m); s; s = backStep(plan, m)) {
    server(m, s);
    seen.push(s.question || s.lab);
  }
  assert.deepEqual(seen, ["lab1", "p1"]);
  // After Back, Next goes on where the lesson was: c1 is still open.
  assert.equal(name(nextStep(plan, m)), "close c1");
});

test("R runs the lab of the question in focus, again if it ran; not while a run goes on", () => {
  const m = newModel();
  assert.equal(runStep(plan, m), null);
  server(m, { kind: "open", question: "c1" });
  assert.equal(runStep(plan, m), null); // a Check settled by no lab
  server(m, { kind: "close", question: "c1" });
  server(m, { kind: "open", question: "p1" });
  assert.equal(name(runStep(plan, m)), "run lab1");
  server(m, runStep(plan, m));
  assert.equal(runStep(plan, m).kind, "wait");
  m.runStatus = "failed";
  assert.equal(name(runStep(plan, m)), "run lab1");
});

test("2 is a second round only between a round's close and the answer", () => {
  const m = newModel();
  server(m, { kind: "open", question: "p1" });
  m.focus = "p1";
  assert.equal(secondRound(m), null);
  server(m, { kind: "close", question: "p1" });
  assert.equal(name(secondRound(m)), "next_round p1");
  server(m, secondRound(m));
  server(m, { kind: "answer", question: "p1" });
  assert.equal(secondRound(m), null);
});

test("an ended session has no steps", () => {
  const m = newModel();
  m.ended = true;
  assert.equal(nextStep(plan, m), null);
  assert.equal(backStep(plan, m), null);
  assert.equal(runStep(plan, m), null);
});
