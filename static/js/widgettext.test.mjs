// Checks static/js/widgettext.js against the cases go test also reads:
// node --test static/js/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { missText, sliderFor } from "./widgettext.js";

const file = fileURLToPath(new URL("../../web/testdata/widget-vectors.json", import.meta.url));
const { slider, misses } = JSON.parse(readFileSync(file, "utf8"));

for (const c of slider) {
  test("sliderFor: " + c.why, () => {
    assert.deepEqual(sliderFor(c.param, c.value, c.target || null), c.want);
  });
}

for (const c of misses) {
  test("missText: " + c.why, () => {
    const m = { ...c.miss, got: c.miss.got === null ? NaN : c.miss.got };
    assert.equal(missText(c.labels, m), c.want);
  });
}
