// lesson.js: progressive enhancement of the lesson page.
//
// Without this module every block works through plain POST forms that
// redirect back to the block. With it, a form marked data-enhance is sent
// with fetch to the same URL with "Accept: application/json"; the server
// answers with the block's new HTML (the same template the page uses),
// which replaces the block in place. Focus moves to the block's new status
// (the element marked data-focus) so keyboard and screen reader users hear
// the result. Errors come back as {"error": {"code", "message"}} and are
// shown in the block's live region; when an error answer also carries
// "html" (a refused record, with what was typed and a message per field),
// that block replaces the old one first. An answer's "related" blocks
// (the measurement a locked prediction unfolds, a table just opened)
// replace their namesakes too, and when the learner's run ends (runs.js)
// the lab block and its Predict are fetched again. Answering the Predict
// that gates the page (its note, data-gate, stands for the rest of the
// lesson, which the server did not send) loads the page again at the
// Predict, with focus on its status.

const busy = (form, on) => {
  for (const b of form.querySelectorAll("button")) {
    b.disabled = on;
    if (on) b.setAttribute("aria-busy", "true");
    else b.removeAttribute("aria-busy");
  }
};

const showError = (section, message) => {
  const box = section && section.querySelector("[data-error]");
  if (box) box.textContent = message;
  else window.alert(message);
};

async function onSubmit(event) {
  const form = event.currentTarget;
  const section = form.closest("[data-block]");
  event.preventDefault();
  const body = new URLSearchParams(new FormData(form));
  const submitter = event.submitter;
  if (submitter && submitter.name) body.append(submitter.name, submitter.value);
  busy(form, true);
  showError(section, "");
  let res;
  try {
    // getAttribute, not form.action: a button named "action" shadows it.
    res = await fetch(form.getAttribute("action"), {
      method: "POST",
      body,
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    });
  } catch (err) {
    busy(form, false);
    showError(section, "Could not reach the server. Check your connection and try again.");
    return;
  }
  let data = null;
  try {
    data = await res.json();
  } catch (err) {
    data = null;
  }
  busy(form, false);
  if (!res.ok && data && data.error && typeof data.html === "string" && section) {
    // A refused form that comes back as the block's HTML (a record with
    // what was typed and a message per field): show it in place.
    const tpl = document.createElement("template");
    tpl.innerHTML = data.html.trim();
    const fresh = tpl.content.firstElementChild;
    if (fresh) {
      swap(section, fresh, null);
      showError(fresh, data.error.message);
      return;
    }
  }
  if (!res.ok || !data || typeof data.html !== "string") {
    const message = data && data.error ? data.error.message : `The server answered ${res.status}.`;
    if (res.status === 409 && section) {
      // The page is stale (answered in another tab): show the block as
      // the server has it, then say why nothing changed.
      const current = await currentBlock(section.id);
      if (current) {
        swap(section, current, null);
        showError(current, message);
        return;
      }
    }
    showError(section, message);
    return;
  }
  const fresh = fromHTML(data.html);
  if (!section || !fresh) {
    window.location.reload();
    return;
  }
  if (data.prediction && document.querySelector(`[data-gate="${CSS.escape(data.block)}"]`)) {
    // The Predict was the page's gate: what follows it is not on the
    // page yet, so load the page again and come back to the Predict.
    reloadAt(data.block);
    return;
  }
  // The answer is the block the action names (a predict, when the form
  // sat in its recorded table) and the blocks the action changed with it
  // (the measurement a lock unfolds): each replaces its namesake, and
  // focus goes to the status of the block the form was in.
  const blocks = [{ block: data.block, html: data.html }].concat(data.related || []);
  let focusIn = null;
  for (const b of blocks) {
    const el = document.getElementById(b.block);
    const next = fromHTML(b.html);
    if (!el || !next) continue;
    el.replaceWith(next);
    enhance(next);
    if (b.block === section.id) focusIn = next;
  }
  const target = focusIn || document.getElementById(data.block);
  const focus = target && target.querySelector("[data-focus]");
  if (focus) focus.focus();
  document.dispatchEvent(new CustomEvent("lesson:block", { detail: data }));
  if (data.related && data.related.length > 0) document.dispatchEvent(new CustomEvent("capacitylab:runs"));
}

// reloadAt loads the page again at block id, with focus on its status
// once loaded (focusAfterReload).
function reloadAt(id) {
  try {
    sessionStorage.setItem("capacitylab:focus", id);
  } catch (err) {
    // Storage refused (private mode): the page still reloads at the block.
  }
  history.replaceState(null, "", `${location.pathname}${location.search}#${id}`);
  window.location.reload();
}

// focusAfterReload puts focus on the status of the block reloadAt named.
function focusAfterReload() {
  let id = null;
  try {
    id = sessionStorage.getItem("capacitylab:focus");
    sessionStorage.removeItem("capacitylab:focus");
  } catch (err) {
    return;
  }
  const block = id && document.getElementById(id);
  const focus = block && block.querySelector("[data-focus]");
  if (focus) focus.focus();
}

// swap puts a block's new HTML in place of the old, wires its forms and
// moves focus to its status.
function swap(section, fresh, data) {
  section.replaceWith(fresh);
  enhance(fresh);
  const focus = fresh.querySelector("[data-focus]");
  if (focus) focus.focus();
  if (data) document.dispatchEvent(new CustomEvent("lesson:block", { detail: data }));
}

// fromHTML is the first element of an HTML fragment, or null.
function fromHTML(html) {
  const tpl = document.createElement("template");
  tpl.innerHTML = String(html || "").trim();
  return tpl.content.firstElementChild;
}

// currentBlock fetches this page again and returns its block with id, or
// null.
async function currentBlock(id) {
  const doc = await fetchPage();
  const block = doc && doc.getElementById(id);
  return block ? document.importNode(block, true) : null;
}

function enhance(root) {
  for (const form of root.querySelectorAll("form[data-enhance]")) {
    form.addEventListener("submit", onSubmit);
  }
}

// The record form lists the learner's saved runs as the page was
// rendered. When a run on this page changes status (queued, running,
// done), fetch the page again and refresh each list's options, keeping
// the learner's choice, so a sweep just run can be attached at once.
function watchRuns() {
  if (!document.querySelector("select[data-record-runs]")) return;
  let timer = null;
  const isRun = (n) => n.nodeType === 1 && (n.matches("[data-status]") || n.querySelector("[data-status]"));
  const observer = new MutationObserver((changes) => {
    if (!changes.some((c) => c.type === "attributes" || [...c.addedNodes].some(isRun))) return;
    clearTimeout(timer);
    timer = setTimeout(refreshRunChoices, 300);
  });
  observer.observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-status"] });
}

// fetchPage fetches this page again as the server renders it now, or
// gives null when it cannot (the blocks then stay as they are).
async function fetchPage() {
  try {
    const res = await fetch(window.location.pathname, { credentials: "same-origin" });
    if (!res.ok) return null;
    return new DOMParser().parseFromString(await res.text(), "text/html");
  } catch (err) {
    return null;
  }
}

async function refreshRunChoices() {
  const doc = await fetchPage();
  if (!doc) return;
  for (const select of document.querySelectorAll("select[data-record-runs]")) {
    const fresh = doc.getElementById(select.id);
    if (!fresh) continue;
    const chosen = select.value;
    select.replaceChildren(...[...fresh.options].map((o) => document.importNode(o, true)));
    select.value = chosen;
    if (select.value !== chosen) select.value = "";
  }
}

// When the learner's run of a lab block ends (runs.js), the block and the
// Predict it settles change on the server: the prediction goes beside the
// measurement, the next step appears, Reveal becomes possible. Fetch the
// page once and put both in place (the run's panel and any knobs the
// learner opened stay as they are), keeping focus where it was unless it
// was inside a block that changed.
document.addEventListener("capacitylab:run-ended", async (event) => {
  const lab = document.getElementById(event.detail.block);
  if (!lab) return;
  const ids = [lab.id];
  if (lab.dataset.settles) ids.push(lab.dataset.settles);
  const doc = await fetchPage();
  if (!doc) return;
  for (const id of ids) {
    const old = document.getElementById(id);
    const fresh = doc.getElementById(id);
    if (!old || !fresh) continue;
    const had = old.contains(document.activeElement);
    const next = document.importNode(fresh, true);
    // The finished run stays as the learner watched it (its panel is the
    // same run); only what follows it is new.
    const slot = old.querySelector("[data-run-slot]");
    const nextSlot = next.querySelector("[data-run-slot]");
    if (slot && nextSlot) nextSlot.replaceWith(slot);
    // Knobs the learner brought in (and perhaps changed) stay too.
    const knobs = old.querySelector("details[data-settings][data-loaded]");
    const nextKnobs = next.querySelector("details[data-settings]");
    if (knobs && nextKnobs) {
      nextKnobs.replaceWith(knobs);
      next.querySelector("[data-preset-fields]")?.remove();
    }
    old.replaceWith(next);
    enhance(next);
    if (had) {
      const after = next.querySelector("[data-lab-after] a, [data-focus]");
      if (after) after.focus();
    }
  }
  document.dispatchEvent(new CustomEvent("capacitylab:runs"));
});

enhance(document);
watchRuns();
focusAfterReload();
