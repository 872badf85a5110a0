// presenter.js: the presenter window and the host page that opened it.
// The host page opens the presenter view in a window of its own (as on a
// projector); the presenter posts its keys (the next step, Back, the
// class run, a second round) to that host page, which checks the message
// came from a window it opened, showing this session's presenter view,
// and acts with its own token. The host page posts back what the
// presenter should show where the host is looking: a refusal or "nothing
// to do" (notice), and its own J and B (join code, blank screen). The
// presenter tells the host page when it goes blank or comes back. The
// presenter's address opened alone (as anyone in the room could)
// controls nothing.

const fromPresenter = "capacitylab:presenter";
const fromHost = "capacitylab:host";

// The keys a presenter window posts to its host page.
const hostKeys = ["next", "back", "run", "round2", "cancel"];

// hostSide is the host page's end: open opens the presenter window; join
// and blank ask it to show or hide its join code, or to blank itself;
// notice(text, error) shows text on it. Each returns whether a presenter
// window is there to ask. onKey(action) gets the keys the presenter posts
// ("next", "back", "run", "round2", and "cancel" from its Stop control),
// onBlanked(on) its blank screen going on or off.
export function hostSide(code, onKey, onBlanked) {
  let win = null; // the presenter window this page (or this tab before a reload) opened
  window.addEventListener("message", (ev) => {
    const d = ev.data;
    if (ev.origin !== location.origin || !d || d.type !== fromPresenter || d.code !== code) return;
    let mine = false;
    try {
      mine = !!ev.source && ev.source.opener === window && ev.source.location.pathname === `/sessions/${code}/projector`;
    } catch {
      mine = false;
    }
    if (!mine) return;
    win = ev.source;
    if (d.action === "hello") {
      ev.source.postMessage({ type: fromHost, code, action: "ready" }, location.origin);
    } else if (hostKeys.includes(d.action)) {
      onKey(d.action);
    } else if (d.action === "blanked") {
      onBlanked(!!d.on);
    }
  });
  const post = (msg) => {
    if (!win || win.closed) return false;
    win.postMessage({ type: fromHost, code, ...msg }, location.origin);
    return true;
  };
  return {
    open(href) {
      win = window.open(href, "capacitylab-presenter-" + code, "popup");
      if (!win) location.assign(href);
    },
    join: () => post({ action: "join" }),
    blank: () => post({ action: "blank" }),
    notice: (text, error) => post({ action: "notice", text, error: !!error }),
  };
}

// presenterSide is the presenter window's end: it greets the host page
// that opened it; onControl() is called once that page answers (its keys
// now move the class on), onJoin() and onBlank() when the host page's J
// or B arrives, onNotice(text, error) with what the host page says.
// post(action, extra) sends a key (or "blanked", {on}) to the host page;
// control() says whether one answered and is still open.
export function presenterSide(code, { onControl, onJoin, onBlank, onNotice }) {
  let control = false;
  window.addEventListener("message", (ev) => {
    const d = ev.data;
    if (ev.origin !== location.origin || ev.source !== window.opener || !d || d.type !== fromHost || d.code !== code) return;
    if (d.action === "ready" && !control) {
      control = true;
      onControl();
    } else if (d.action === "join") {
      onJoin();
    } else if (d.action === "blank") {
      onBlank();
    } else if (d.action === "notice" && typeof d.text === "string") {
      onNotice(d.text, !!d.error);
    }
  });
  if (window.opener) {
    try {
      window.opener.postMessage({ type: fromPresenter, code, action: "hello" }, location.origin);
    } catch {
      // An opener of another site: this window only watches.
    }
  }
  return {
    post(action, extra = {}) {
      if (control && window.opener) window.opener.postMessage({ type: fromPresenter, code, action, ...extra }, location.origin);
    },
    // The host page may have been closed since it answered.
    control: () => control && !!window.opener && !window.opener.closed,
  };
}
