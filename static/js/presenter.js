// presenter.js: the presenter window and the host page that opened it.
// The host page opens the presenter view in a window of its own (as on a
// projector); the presenter posts its keys (the next step, a second round)
// to that host page, which checks the message came from a window it
// opened, showing this session's presenter view, and acts with its own
// token. The host page's J is posted to the presenter. The presenter's
// address opened alone (as anyone in the room could) controls nothing.

const fromPresenter = "capacitylab:presenter";
const fromHost = "capacitylab:host";

// hostSide is the host page's end: open opens the presenter window, join
// asks it to show or hide its join code, and onKey(action) gets the keys
// the presenter posts ("next", "round2").
export function hostSide(code, onKey) {
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
    } else if (d.action === "next" || d.action === "round2") {
      onKey(d.action);
    }
  });
  return {
    open(href) {
      win = window.open(href, "capacitylab-presenter-" + code, "popup");
      if (!win) location.assign(href);
    },
    join() {
      if (win && !win.closed) win.postMessage({ type: fromHost, code, action: "join" }, location.origin);
    },
  };
}

// presenterSide is the presenter window's end: it greets the host page
// that opened it, onControl() is called once that page answers (its keys
// now move the class on), onJoin() when the host page's J arrives, and
// post(action) sends a key to the host page.
export function presenterSide(code, { onControl, onJoin }) {
  let control = false;
  window.addEventListener("message", (ev) => {
    const d = ev.data;
    if (ev.origin !== location.origin || ev.source !== window.opener || !d || d.type !== fromHost || d.code !== code) return;
    if (d.action === "ready" && !control) {
      control = true;
      onControl();
    } else if (d.action === "join") {
      onJoin();
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
    post(action) {
      if (window.opener) window.opener.postMessage({ type: fromPresenter, code, action }, location.origin);
    },
  };
}
