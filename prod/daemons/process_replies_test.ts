/**
 * A separately started daemon's API replies on the wire: a success says `Rpc-Status: success`, as yarpc's
 * does, and a body that is not UTF-8 is refused before it is read as JSON.
 */
import assert from "node:assert/strict";
import { loadRespoolConfig } from "../../core/model/load.ts";
import { jsonLogger } from "../log.ts";
import { ROOT } from "../testing.ts";
import { startResmgr } from "./resmgr_daemon.ts";

Deno.test({
  name: "a daemon's success reply says Rpc-Status success; a body that is not UTF-8 is invalid-argument",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
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
      const call = (procedure: string, body: BodyInit) =>
        fetch(`${d.process.url}/api/v1`, {
          method: "POST",
          headers: { "rpc-procedure": `peloton.api.respool.ResourceManager::${procedure}` },
          body,
        });
      const pool = loadRespoolConfig(
        await Deno.readTextFile(`${ROOT}/scenarios/jobs/default_respool.yaml`),
        "default_respool.yaml",
      );
      assert.ok(pool.ok);
      const created = await call(
        "CreateResourcePool",
        JSON.stringify({ config: { ...pool.value, parent: { value: "root" } } }),
      );
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
    } finally {
      await d.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
