// node --test of classkeys.js: which key press asks for what, and when a
// key belongs to a field or a control instead.
import { test } from "node:test";
import assert from "node:assert/strict";
import { keyAction } from "./classkeys.js";

// press is a keydown on an element that is inside the elements named by
// inside (CSS selectors closest() would match).
function press(key, { inside = [], ctrlKey = false } = {}) {
  return { key, ctrlKey, metaKey: false, altKey: false, target: { closest: (sel) => sel.split(", ").some((s) => inside.includes(s)) } };
}

test("the host's and presenter's keys", () => {
  for (const [key, want] of [
    [" ", "next"],
    ["ArrowRight", "next"],
    ["PageDown", "next"],
    ["ArrowLeft", "back"],
    ["PageUp", "back"],
    ["r", "run"],
    ["R", "run"],
    ["b", "blank"],
    ["B", "blank"],
    [".", "blank"],
    ["2", "round2"],
    ["j", "join"],
    ["J", "join"],
    ["f", "fullscreen"],
    ["?", "help"],
    ["x", ""],
  ]) {
    assert.equal(keyAction(press(key), false), want, `key ${JSON.stringify(key)}`);
  }
});

test("a key typed into a field is the field's, even ?", () => {
  for (const field of ["input", "textarea", "select", "[contenteditable]"]) {
    assert.equal(keyAction(press("?", { inside: [field] }), false), "");
    assert.equal(keyAction(press(" ", { inside: [field] }), false), "");
  }
});

test("Space on a focused control presses it; ? still lists the keys", () => {
  assert.equal(keyAction(press(" ", { inside: ["button"] }), false), "");
  assert.equal(keyAction(press("?", { inside: ["summary"] }), false), "help");
});

test("with the list of keys open only ? acts; a modifier never does", () => {
  assert.equal(keyAction(press(" "), true), "");
  assert.equal(keyAction(press("?"), true), "help");
  assert.equal(keyAction(press(" ", { ctrlKey: true }), false), "");
});
