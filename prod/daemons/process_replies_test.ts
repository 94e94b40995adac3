/**
 * A separately started daemon's API replies on the wire: a call past its deadline is deadline-exceeded
 * (504), as yarpc answers it; a success says `Rpc-Status: success`, as yarpc's does; and a body that is not
 * UTF-8 is refused before it is read as JSON.
 */
import assert from "node:assert/strict";
import { loadRespoolConfig } from "../../core/model/load.ts";
import { jsonLogger } from "../log.ts";
import { ROOT } from "../testing.ts";
import { startResmgr } from "./resmgr_daemon.ts";

/** Runs `f` against a resource manager daemon on its own SQLite store, with a call to its respool API. */
async function withResmgr(
  f: (
    call: (procedure: string, body: BodyInit, headers?: Record<string, string>) => Promise<Response>,
  ) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "peloton-replies-" });
  const d = await startResmgr({
    host: "127.0.0.1",
    port: 0,
    store: `sqlite:${dir}/peloton.sqlite`,
    dataDir: dir,
    leaseTtlMs: 2_000,
    log: jsonLogger({ daemon: "resmgr" }, () => {}),
  });
  try {
    await f((procedure, body, headers = {}) =>
      fetch(`${d.process.url}/api/v1`, {
        method: "POST",
        headers: { "rpc-procedure": `peloton.api.respool.ResourceManager::${procedure}`, ...headers },
        body,
      })
    );
  } finally {
    await d.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

/** CreateResourcePool's body for the default pool under the root. */
async function createDefaultPoolBody(): Promise<string> {
  const pool = loadRespoolConfig(
    await Deno.readTextFile(`${ROOT}/scenarios/jobs/default_respool.yaml`),
    "default_respool.yaml",
  );
  assert.ok(pool.ok);
  return JSON.stringify({ config: { ...pool.value, parent: { value: "root" } } });
}

Deno.test({
  name:
    "a call with no answer within its Context-TTL-Ms is deadline-exceeded, not unavailable (which says retry)",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withResmgr(async (call) => {
      // A create answers once its pool is stored, far past 1 ms; the deadline counts from when the request
      // came, so it may have passed before the handler would start, which then does nothing.
      const res = await call("CreateResourcePool", await createDefaultPoolBody(), { "context-ttl-ms": "1" });
      const body = await res.text();
      assert.deepEqual([res.status, res.headers.get("rpc-error-code")], [504, "deadline-exceeded"], body);
      assert.match(
        body,
        /CreateResourcePool( timed out after 1 ms|: the call's deadline passed before (it was received|its handler started); nothing was done)\n$/,
      );
    }),
});

Deno.test({
  name: "a daemon's success reply says Rpc-Status success; a body that is not UTF-8 is invalid-argument",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withResmgr(async (call) => {
      const created = await call("CreateResourcePool", await createDefaultPoolBody());
      const answer = await created.json();
      assert.deepEqual(
        [created.status, created.headers.get("rpc-status")],
        [200, "success"],
        JSON.stringify(answer),
      );
      assert.ok(answer.result.value, JSON.stringify(answer));

      const head = new TextEncoder().encode('{"path":{"value":"/');
      const bad = await call(
        "LookupResourcePoolID",
        new Uint8Array([...head, 0xff, ...new TextEncoder().encode('"}}')]),
      );
      assert.deepEqual(
        [bad.status, bad.headers.get("rpc-error-code"), await bad.text()],
        [400, "invalid-argument", `the request body is not valid UTF-8 at byte offset ${head.length}\n`],
      );
    }),
});
