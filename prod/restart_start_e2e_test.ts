/**
 * A stopped service started again, and `peloton up` killed -9 the moment the start is answered: the start
 * was stored, so the restarted scheduler runs the service (before, an ended job was not loaded again).
 */
import assert from "node:assert/strict";
import { cli, createDefaultPool, ROOT, startUp, type UpProcess, waitForJobState } from "./testing.ts";

Deno.test({
  name: "a stopped service whose start was answered, then the scheduler killed -9, runs after the restart",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-restart-start-" });
    let up: UpProcess | undefined = await startUp(dir, ["--agents", "1"]);
    try {
      await createDefaultPool(up.url);
      const created = await cli(
        up.url,
        "job",
        "create",
        "/DefaultResPool",
        `${ROOT}/scenarios/jobs/service.yaml`,
      );
      assert.equal(created.code, 0, created.err);
      const job = /^Job (\S+) created$/.exec(created.out)![1];
      await waitForJobState(up.url, job, ["RUNNING"]);
      assert.equal((await cli(up.url, "job", "stop", job)).code, 0);
      assert.equal(await waitForJobState(up.url, job, ["KILLED"]), "KILLED");

      const started = await cli(up.url, "task", "start", job);
      assert.equal(started.code, 0, started.err);
      up.child.kill("SIGKILL");
      await up.child.status;
      up = undefined;

      up = await startUp(dir, ["--agents", "1"]);
      // Running again: instances are started, and the job leaves KILLED.
      assert.equal(await waitForJobState(up.url, job, ["RUNNING"]), "RUNNING");
    } finally {
      await up?.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
