/** Error replies in yarpc's HTTP wire format, written as yarpc-go's inbound writes them and read back. */
import assert from "node:assert/strict";
import { API_STATUS, replyError, rpcError } from "./http_errors.ts";

const call = (headers: Record<string, string> = {}) =>
  new Request("http://x/api/v1", { method: "POST", headers: { "rpc-procedure": "P", ...headers } });

Deno.test("an error reply is yarpc's: Rpc-Error-Code, yarpc's HTTP status, the message and a newline as text", async () => {
  const res = rpcError("not-found", "update u-1 not found", { req: call() });
  assert.equal(res.status, 404);
  assert.equal(res.headers.get("rpc-error-code"), "not-found");
  assert.equal(res.headers.get("rpc-error-name"), null, "yarpc names only user-defined errors");
  assert.equal(
    res.headers.get("rpc-status"),
    "error",
    "a handler's error, as yarpc's protobuf encoding marks it",
  );
  assert.equal(res.headers.get("content-type"), "text/plain; charset=utf8");
  assert.equal(await res.text(), "update u-1 not found\n");
  const early = rpcError("unimplemented", "unknown procedure X", { beforeHandler: true });
  assert.equal(early.headers.get("rpc-status"), "success", "yarpc's default, left as it is before a handler");
});

Deno.test("each code has yarpc's HTTP status: codes sharing one are told apart by Rpc-Error-Code", () => {
  assert.deepEqual(
    [
      "already-exists",
      "aborted",
      "failed-precondition",
      "out-of-range",
      "invalid-argument",
      "deadline-exceeded",
      "unavailable",
      "cancelled",
      "unimplemented",
      "internal",
      "unauthenticated",
      "permission-denied",
    ].map((c) => API_STATUS[c as keyof typeof API_STATUS]),
    [409, 409, 400, 400, 400, 504, 503, 499, 501, 500, 401, 403],
  );
});

Deno.test("a client accepting both gets the message in Rpc-Error-Message, as Go's net/http writes a header", async () => {
  const res = rpcError("aborted", "café\nversion ✓", {
    req: call({ "Rpc-Accepts-Both-Response-Error": "true" }),
  });
  assert.equal(res.status, 409);
  assert.equal(res.headers.get("rpc-both-response-error"), "true");
  assert.equal(res.headers.get("rpc-error-code"), "aborted");
  assert.equal(await res.text(), "");
  assert.deepEqual(replyError(res.status, res.headers, ""), { code: "aborted", message: "café version ✓" });
});

Deno.test("replyError reads yarpc's form, the older JSON body, or else guesses the code from the status as yarpc does", async () => {
  const res = rpcError("already-exists", "job j-1 exists\n");
  assert.deepEqual(replyError(res.status, res.headers, await res.text()), {
    code: "already-exists",
    message: "job j-1 exists\n",
  });
  const none = new Headers();
  assert.deepEqual(replyError(401, none, '{"code":"unauthenticated","message":"no credentials"}'), {
    code: "unauthenticated",
    message: "no credentials",
  });
  assert.deepEqual(replyError(409, none, "conflict\n"), { code: "aborted", message: "conflict" });
  assert.deepEqual(replyError(413, none, "too large"), { code: "invalid-argument", message: "too large" });
  assert.deepEqual(replyError(502, none, ""), { code: "unknown", message: "HTTP 502" });
});
