// classgates.js: the parts of a class's lesson that a participant's page
// leaves out until the host shows an answer. The server renders each
// such part as an empty placeholder (data-class-gated: the Predicts it
// waits for; data-part: its place in the lesson) and a note at the gate
// (data-class-gate-note; all but the first hidden). When every Predict a placeholder waits for is
// answered, the page asks /sessions/{code}/parts for the parts now open
// and puts each in its place.

// classGates returns open(answered), which fills the placeholders whose
// Predicts answered(id) says are answered and removes their notes. Calls
// while a request is out run once more after it.
export function classGates(root, code) {
  let running = null;
  let again = false;
  async function fill(answered) {
    const ready = [...root.querySelectorAll("[data-class-gated]")].filter((el) => el.dataset.classGated.split(" ").every(answered));
    for (const note of root.querySelectorAll("[data-class-gate-note]")) {
      if (answered(note.dataset.classGateNote)) note.remove();
    }
    const next = root.querySelector("[data-class-gate-note]");
    if (next) next.hidden = false;
    if (ready.length === 0) return;
    let data;
    try {
      const res = await fetch(`/sessions/${encodeURIComponent(code)}/parts`, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (!res.ok) return;
      data = await res.json();
    } catch (err) {
      return; // the next answer, or the next reconnect, asks again
    }
    for (const p of data.parts || []) {
      const el = root.querySelector(`[data-class-gated][data-part="${p.part}"]`);
      if (!el) continue;
      const tpl = document.createElement("template");
      tpl.innerHTML = p.html;
      el.replaceWith(tpl.content);
    }
  }
  return function open(answered) {
    if (running) {
      again = true;
      return running;
    }
    running = fill(answered).finally(() => {
      running = null;
      if (again) {
        again = false;
        open(answered);
      }
    });
    return running;
  };
}
