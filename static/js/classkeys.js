// classkeys.js: the keys of a class session's host and presenter views.
// Nothing happens while the reader types in a field or has a control
// focused (Space presses a focused button), or with a modifier; "?" opens
// and closes the list of keys.

// keyAction is what a key press asks for: "help", "next", "back", "run",
// "round2", "blank", "join", "fullscreen", or "" for nothing (a key typed
// into a field, or pressed on a control, or any but "?" while the list of
// keys is open). Next and Back are also the keys a presentation clicker
// sends (Page Down, Page Up), and its blank-screen button's (B or ".").
export function keyAction(ev, dialogOpen) {
  if (ev.ctrlKey || ev.metaKey || ev.altKey) return "";
  const t = ev.target;
  if (t.closest && t.closest("input, textarea, select, [contenteditable]")) return "";
  if (ev.key === "?") return "help";
  if (dialogOpen) return "";
  if (t.closest && t.closest("button, a, summary")) return "";
  switch (ev.key) {
    case " ":
    case "ArrowRight":
    case "PageDown":
      return "next";
    case "ArrowLeft":
    case "PageUp":
      return "back";
    case "r":
    case "R":
      return "run";
    case "b":
    case "B":
    case ".":
      return "blank";
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

// kbd is a key's name as a <kbd> element.
export function kbd(text) {
  const k = document.createElement("kbd");
  k.textContent = text;
  return k;
}
