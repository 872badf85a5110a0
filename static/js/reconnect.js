// reconnect.js: one websocket kept open, for the run streams (runs.js) and
// class sessions (session.js). A dropped connection is opened again after
// a wait that starts at half a second and doubles with each failed try, up
// to ten seconds; a connection that opens resets it. The URL is asked for
// anew each time, so it can carry the last sequence number seen and the
// stream resumes where it left off.

export const firstWaitMS = 500;
export const longestWaitMS = 10000;

// keepOpen opens the websocket at url() and keeps it open until onClose
// says to stop: onClose(ev) is called when it closes and returns true to
// reconnect (after the wait), false to stop. onOpen() and onMessage(data)
// are called as their names say. It returns the connection's handle: send
// (false when not connected), connected, and stop. env replaces the
// browser's WebSocket and setTimeout, for tests.
export function keepOpen(url, { onOpen = () => {}, onMessage, onClose = () => true }, env = globalThis) {
  let ws = null;
  let wait = firstWaitMS;
  let stopped = false;
  const open = () => {
    if (stopped) return;
    const sock = new env.WebSocket(url());
    ws = sock;
    sock.onopen = () => {
      wait = firstWaitMS;
      onOpen();
    };
    sock.onmessage = (ev) => onMessage(ev.data);
    sock.onclose = (ev) => {
      if (ws === sock) ws = null;
      if (stopped || !onClose(ev)) return;
      env.setTimeout(open, wait);
      wait = Math.min(wait * 2, longestWaitMS);
    };
  };
  open();
  return {
    send(data) {
      if (!ws || ws.readyState !== env.WebSocket.OPEN) return false;
      ws.send(data);
      return true;
    },
    connected() {
      return !!ws && ws.readyState === env.WebSocket.OPEN;
    },
    stop() {
      stopped = true;
      if (ws) ws.close();
    },
  };
}
