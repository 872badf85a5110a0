// node --test of reconnect.js: the waits between tries, what resets them,
// and when it stops, with a stand-in for the browser's WebSocket.
import { test } from "node:test";
import assert from "node:assert/strict";
import { keepOpen, firstWaitMS, longestWaitMS } from "./reconnect.js";

// fakeEnv records every socket opened and every wait asked for; a test
// runs the waits by hand.
function fakeEnv() {
  const env = { sockets: [], waits: [], due: [] };
  class FakeSocket {
    static OPEN = 1;
    constructor(url) {
      this.url = url;
      this.readyState = 0;
      this.sent = [];
      env.sockets.push(this);
    }
    open() {
      this.readyState = FakeSocket.OPEN;
      this.onopen();
    }
    drop(code = 1006) {
      this.readyState = 3;
      this.onclose({ code });
    }
    send(d) {
      this.sent.push(d);
    }
    close() {
      this.drop(1000);
    }
  }
  env.WebSocket = FakeSocket;
  env.setTimeout = (fn, ms) => {
    env.waits.push(ms);
    env.due.push(fn);
  };
  env.runDue = () => env.due.splice(0).forEach((fn) => fn());
  return env;
}

test("waits double from half a second to ten seconds, and an open connection resets them", () => {
  const env = fakeEnv();
  let seq = 0;
  keepOpen(() => `/ws/runs/r1?since=${seq}`, { onMessage: () => {} }, env);
  for (let i = 0; i < 7; i++) {
    env.sockets.at(-1).drop();
    env.runDue();
  }
  assert.deepEqual(env.waits, [firstWaitMS, 1000, 2000, 4000, 8000, longestWaitMS, longestWaitMS]);
  env.sockets.at(-1).open();
  env.sockets.at(-1).drop();
  assert.equal(env.waits.at(-1), firstWaitMS);
});

test("each try asks for the URL anew, so it carries the last seq seen", () => {
  const env = fakeEnv();
  let seq = 0;
  keepOpen(() => `/ws/runs/r1?since=${seq}`, { onMessage: (d) => (seq = JSON.parse(d).seq) }, env);
  env.sockets[0].open();
  env.sockets[0].onmessage({ data: '{"seq": 7}' });
  env.sockets[0].drop();
  env.runDue();
  assert.equal(env.sockets[1].url, "/ws/runs/r1?since=7");
});

test("onClose decides: false stops; stop() stops", () => {
  const env = fakeEnv();
  let ended = false;
  const c = keepOpen(() => "/ws/x", { onMessage: () => {}, onClose: () => !ended }, env);
  env.sockets[0].open();
  assert.equal(c.send("hi"), true);
  ended = true;
  env.sockets[0].drop();
  assert.equal(env.waits.length, 0);
  assert.equal(c.send("again"), false);

  const env2 = fakeEnv();
  const c2 = keepOpen(() => "/ws/y", { onMessage: () => {} }, env2);
  env2.sockets[0].open();
  c2.stop();
  assert.equal(env2.waits.length, 0);
  assert.equal(c2.connected(), false);
});
