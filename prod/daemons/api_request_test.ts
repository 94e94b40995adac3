/** An API call's request: its body bounded in size, its deadline in bounds. */
import assert from "node:assert/strict";
import { DEFAULT_TTL_MS, givesDeadline, readApiCall, readBody, ttlOf } from "./api_request.ts";

const post = (body: BodyInit | null, headers: Record<string, string> = {}) =>
  new Request("http://x/api/v1", { method: "POST", body, headers });

Deno.test("a body over the limit is refused (413) from its Content-Length or once that much has come", async () => {
  assert.equal(await readBody(post("{}"), 10), "{}");
  const declared = await readBody(post("x".repeat(11), { "content-length": "11" }), 10);
  assert.ok(declared instanceof Response);
  assert.equal(declared.status, 413);
  assert.equal(declared.headers.get("rpc-error-code"), "invalid-argument");
  assert.equal(await declared.text(), "the request body is 11 bytes, more than the limit of 10 bytes\n");
  // Sent in chunks with no length given: the reading stops at the chunk past the limit.
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (++pulled > 100) return c.close();
      c.enqueue(new Uint8Array(4));
    },
  });
  const streamed = await readBody(post(stream), 10);
  assert.ok(streamed instanceof Response);
  assert.equal(streamed.status, 413);
  assert.ok(pulled < 10, `read ${pulled} chunks`);
});

Deno.test("Context-TTL-Ms: absent is the default, past a day a day; anything but a whole number of ms from 1 is refused", async () => {
  assert.equal(ttlOf(post(null)), DEFAULT_TTL_MS);
  assert.equal(ttlOf(post(null, { "context-ttl-ms": "2500" })), 2500);
  // A YARPC client's long deadline (`--timeout 2h`, a week) is taken, waited for at most a day.
  assert.equal(ttlOf(post(null, { "context-ttl-ms": "7200000" })), 7_200_000);
  assert.equal(ttlOf(post(null, { "context-ttl-ms": "604800000" })), 86_400_000);
  // Only a deadline the caller gave bounds a stream; a blank header gives none, as it gives the default TTL.
  assert.equal(givesDeadline(post(null)), false);
  assert.equal(givesDeadline(post(null, { "context-ttl-ms": " " })), false);
  assert.equal(givesDeadline(post(null, { "context-ttl-ms": "1500" })), true);
  for (const bad of ["-5", "0", "1.5", "abc"]) {
    const r = ttlOf(post(null, { "context-ttl-ms": bad }));
    assert.ok(r instanceof Response, bad);
    assert.equal(r.status, 400);
    assert.equal(r.headers.get("rpc-error-code"), "invalid-argument");
    assert.equal(
      await r.text(),
      `Context-TTL-Ms: got "${bad}", expected a whole number of milliseconds, at least 1\n`,
    );
  }
});

Deno.test("readApiCall: proto names read as JSON names; a body that is not JSON is refused", async () => {
  const call = await readApiCall(post('{"host_states":["HOST_STATE_UP"]}', { "context-ttl-ms": "100" }));
  assert.ok(!(call instanceof Response));
  assert.deepEqual(call.body, { hostStates: ["HOST_STATE_UP"] });
  assert.equal(call.ttlMs, 100);
  const bad = await readApiCall(post("{"));
  assert.ok(bad instanceof Response);
  assert.equal(bad.headers.get("rpc-error-code"), "invalid-argument");
  assert.match(await bad.text(), /^request body is not JSON: /);
});

Deno.test("readApiCall: a body that is JSON but not an object is refused before any handler; empty is {}", async () => {
  for (const text of ["[1,2]", '"abc"', "3", "null", "true", " [] "]) {
    const bad = await readApiCall(post(text));
    assert.ok(bad instanceof Response, text);
    assert.equal(bad.status, 400, text);
    assert.equal(bad.headers.get("rpc-error-code"), "invalid-argument", text);
    // Refused before a handler ran, as yarpc refuses a request it cannot decode.
    assert.equal(bad.headers.get("rpc-status"), "success", text);
    assert.equal(await bad.text(), "the request body must be a JSON object\n", text);
  }
  for (const text of [null, "", "  ", "{}"]) {
    const call = await readApiCall(post(text));
    assert.ok(!(call instanceof Response), String(text));
    assert.deepEqual(call.body, {});
  }
});
