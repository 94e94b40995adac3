/** The web UI's API client reads error replies in yarpc's form, and the older JSON one. */
import assert from "node:assert/strict";
import { rpcError } from "../daemons/http_errors.ts";
import { UiApi, UiApiError } from "./client_api.ts";

Object.defineProperty(globalThis, "location", {
  value: { href: "http://127.0.0.1:5392/ui/" },
  configurable: true,
  writable: true,
});

/** Calls through a fake server that answers `reply`; the error the call was refused with. */
async function refusal(reply: () => Response): Promise<UiApiError> {
  const real = globalThis.fetch;
  globalThis.fetch = () => Promise.resolve(reply());
  try {
    await new UiApi().call("peloton.api.v0.update.svc.UpdateService::GetUpdate");
  } catch (e) {
    assert.ok(e instanceof UiApiError, String(e));
    return e;
  } finally {
    globalThis.fetch = real;
  }
  throw new Error("the call was not refused");
}

Deno.test({
  name: "an error reply in yarpc's form gives its code and message; the older JSON body is read too",
  // The client's per-call timeout signal outlives the fake call it bounds.
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const yarpc = await refusal(() => rpcError("already-exists", "job j-1 already exists"));
    assert.deepEqual(
      [yarpc.code, yarpc.detail, yarpc.status],
      ["already-exists", "job j-1 already exists", 409],
    );
    const both = await refusal(() =>
      rpcError("not-found", "update u-1 not found", {
        req: new Request("http://x/", { headers: { "rpc-accepts-both-response-error": "true" } }),
      })
    );
    assert.deepEqual([both.code, both.detail], ["not-found", "update u-1 not found"]);
    const json = await refusal(() =>
      Response.json({ code: "unauthenticated", message: "sign in" }, { status: 401 })
    );
    assert.deepEqual([json.code, json.detail, json.status], ["unauthenticated", "sign in", 401]);
  },
});

Deno.test({
  name: "a sandbox file's end: asked for as a tail read, kept to its bound should the server send it whole",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const real = globalThis.fetch;
    const asked: string[] = [];
    // "é" is c3 a9: the file's last 5 bytes start inside one.
    const file = new Uint8Array([0x61, 0xc3, 0xa9, 0xc3, 0xa9, 0xff, 0x0a]);
    let reply = (_: URL) => new Response(file);
    globalThis.fetch = (input: string | URL | Request) => {
      asked.push(String(input));
      return Promise.resolve(reply(new URL(String(input))));
    };
    try {
      // A server that ignores tailBytes sends every byte, in pieces: only the end is kept.
      reply = () => new Response(ReadableStream.from([file.subarray(0, 3), file.subarray(3)]));
      const whole = await new UiApi().sandboxTail("j-0-1", "stdout", "a-1", 5);
      assert.deepEqual(whole, { text: "é\uFFFD\n", sizeBytes: 7, offsetBytes: 3 });
      assert.equal(asked[0], "http://127.0.0.1:5392/sandbox/j-0-1/stdout?agentId=a-1&tailBytes=5");
      // One that honours it sends the end and where it starts.
      reply = () =>
        new Response(file.subarray(2), { headers: { "x-file-offset-bytes": "2", "x-file-size-bytes": "7" } });
      assert.deepEqual(await new UiApi().sandboxTail("j-0-1", "stdout", undefined, 5), {
        text: "é\uFFFD\n",
        sizeBytes: 7,
        offsetBytes: 3,
      });
      reply = () => new Response(file);
      assert.deepEqual(await new UiApi().sandboxTail("j-0-1", "stdout", undefined, 100), {
        text: "aéé\uFFFD\n",
        sizeBytes: 7,
        offsetBytes: 0,
      });
      reply = () => new Response("no sandbox for task j-0-1\n", { status: 404 });
      await assert.rejects(
        new UiApi().sandboxTail("j-0-1", "stdout", undefined, 5),
        (e) => e instanceof UiApiError && e.code === "not-found" && e.detail === "no sandbox for task j-0-1",
      );
    } finally {
      globalThis.fetch = real;
    }
  },
});

Deno.test({
  name: "every call asks for the extension fields (Peloton-Extensions: true), which the page reads",
  sanitizeOps: false,
  async fn() {
    const real = globalThis.fetch;
    let sent: Headers | undefined;
    globalThis.fetch = (_input: string | URL | Request, init?: RequestInit) => {
      sent = new Headers(init?.headers);
      return Promise.resolve(Response.json({}));
    };
    try {
      await new UiApi().call("peloton.api.job.JobManager::Get", {});
    } finally {
      globalThis.fetch = real;
    }
    assert.equal(sent?.get("peloton-extensions"), "true");
  },
});
