/**
 * `job rolling-restart|start|stop JOB BATCH-SIZE` against a stub job manager: the batch size reaches the API
 * as given, as Peloton's CLI sends it; 0 is every instance at once there, not a batch of 1.
 */
import assert from "node:assert/strict";
import { cli } from "../testing.ts";

const JOB_ID = "11111111-2222-4333-8444-555555555555";

/** A job manager that answers JobManager's Restart, Start and Stop, and keeps the bodies it was sent. */
function stubJobManager() {
  const bodies: Record<string, unknown>[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    bodies.push({ procedure: req.headers.get("Rpc-Procedure"), ...await req.json() });
    return Response.json({ updateID: { value: "u-1" }, resourceVersion: 1 });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, bodies, close: () => server.shutdown() };
}

Deno.test("job rolling-restart|start|stop: BATCH-SIZE goes as given, 0 too (all at once); a bad one calls nothing", async () => {
  const jm = stubJobManager();
  try {
    for (const [kind, batch] of [["restart", "0"], ["start", "0"], ["stop", "2"]]) {
      const r = await cli(jm.url, "job", `rolling-${kind}`, JOB_ID, batch);
      assert.equal(r.code, 0, r.err);
      const method = kind[0].toUpperCase() + kind.slice(1);
      assert.deepEqual(jm.bodies.pop(), {
        procedure: `peloton.api.job.JobManager::${method}`,
        id: { value: JOB_ID },
        [`${kind}Config`]: { batchSize: Number(batch) },
      });
    }
    const bad = await cli(jm.url, "job", "rolling-restart", JOB_ID, "all");
    assert.equal(bad.code, 2, bad.out);
    assert.match(bad.err, /BATCH-SIZE: got "all", expected a whole number/);
    assert.deepEqual(jm.bodies, [], "nothing was called");
  } finally {
    await jm.close();
  }
});
