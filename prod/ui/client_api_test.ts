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
