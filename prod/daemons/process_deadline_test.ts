/** A separately started daemon answers a call past its deadline as yarpc does: deadline-exceeded (504). */
import assert from "node:assert/strict";
import { loadRespoolConfig } from "../../core/model/load.ts";
import { jsonLogger } from "../log.ts";
import { ROOT } from "../testing.ts";
import { startResmgr } from "./resmgr_daemon.ts";

Deno.test({
  name:
    "a call with no answer within its Context-TTL-Ms is deadline-exceeded, not unavailable (which says retry)",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-deadline-" });
    const d = await startResmgr({
      host: "127.0.0.1",
      port: 0,
      store: `sqlite:${dir}/peloton.sqlite`,
      dataDir: dir,
      leaseTtlMs: 2_000,
      log: jsonLogger({ daemon: "resmgr" }, () => {}),
    });
    try {
      const pool = loadRespoolConfig(
        await Deno.readTextFile(`${ROOT}/scenarios/jobs/default_respool.yaml`),
        "default_respool.yaml",
      );
      assert.ok(pool.ok);
      // A create answers once its pool is stored, far past 1 ms.
      const res = await fetch(`${d.process.url}/api/v1`, {
        method: "POST",
        headers: {
          "rpc-procedure": "peloton.api.respool.ResourceManager::CreateResourcePool",
          "context-ttl-ms": "1",
        },
        body: JSON.stringify({ config: { ...pool.value, parent: { value: "root" } } }),
      });
      const body = await res.text();
      assert.deepEqual([res.status, res.headers.get("rpc-error-code")], [504, "deadline-exceeded"], body);
      assert.match(body, /CreateResourcePool timed out after 1 ms\n$/);
    } finally {
      await d.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
