import assert from "node:assert/strict";
import { gotText } from "./got_text.ts";

Deno.test("gotText: a value as its JSON, an absent one (undefined or null) as missing", () => {
  assert.equal(gotText(undefined), "missing");
  assert.equal(gotText(null), "missing");
  assert.equal(gotText(""), 'got ""');
  assert.equal(gotText(5), "got 5");
  assert.equal(gotText(["a"]), 'got ["a"]');
});
