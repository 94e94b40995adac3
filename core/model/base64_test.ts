import assert from "node:assert/strict";
import { canonicalBase64 } from "./base64.ts";

Deno.test("bytes are taken in standard or URL-safe base64, padded or not, and kept standard and padded", () => {
  assert.equal(canonicalBase64("aGVsbG8="), "aGVsbG8=");
  assert.equal(canonicalBase64("aGVsbG8"), "aGVsbG8=");
  assert.equal(canonicalBase64("+/+/"), "+/+/");
  assert.equal(canonicalBase64("-_-_"), "+/+/");
  assert.equal(canonicalBase64("-_8"), "+/8=");
  assert.equal(canonicalBase64(""), "");
  for (const bad of ["a", "aGVsbG8===", "aGVsb=G8", "ab=", "+_+_", "aGVs bG8=", "é"]) {
    assert.equal(canonicalBase64(bad), undefined, bad);
  }
  // Each form decodes to the same bytes.
  assert.equal(atob(canonicalBase64("aGVsbG8")!), "hello");
});
