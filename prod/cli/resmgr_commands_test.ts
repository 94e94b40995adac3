/** `peloton resmgr tasks active|pending` against `peloton up`: what the resource manager holds, as it holds it. */
import assert from "node:assert/strict";
import { batchJobYaml } from "../testing_cluster.ts";
import { cli, createDefaultPool, startUp, waitFor } from "../testing.ts";

Deno.test({
  name: "resmgr tasks active and pending list the resource manager's tasks and a pool's queue in order",
  sanitizeResources: false,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "peloton-resmgr-tasks-" });
    const up = await startUp(`${dir}/peloton`, ["--agents", "3"]);
    try {
      await createDefaultPool(up.url);
      // 5 tasks of 4 cores in a pool of 12: three run, two wait in the pool's queue.
      const file = `${dir}/job.yaml`;
      await Deno.writeTextFile(file, batchJobYaml("wide", 5, "sleep 60", 4));
      const created = await cli(up.url, "job", "create", "/DefaultResPool", file);
      assert.equal(created.code, 0, created.err);
      const jobId = /^Job (\S+) created$/.exec(created.out)![1];

      const active = await waitFor("three tasks running and two pending", async () => {
        const r = await cli(up.url, "resmgr", "tasks", "active", "--job", jobId, "-j");
        if (r.code !== 0) return undefined;
        const body = JSON.parse(r.out) as {
          tasksByState: Record<string, { taskEntry: { taskID: string }[] }>;
        };
        const count = (s: string) => body.tasksByState[s]?.taskEntry.length ?? 0;
        return count("RUNNING") === 3 && count("PENDING") === 2 ? body : undefined;
      });
      const waiting = active.tasksByState.PENDING.taskEntry.map((e) => e.taskID);

      const pending = await cli(up.url, "resmgr", "tasks", "pending", "/DefaultResPool");
      assert.equal(pending.code, 0, pending.err);
      const ids = waiting.map((id) => id.slice(0, id.lastIndexOf("-")));
      // The job is not preemptible, and `up` runs with preemption on: its gangs wait in that queue.
      assert.equal(
        pending.out,
        [`non-preemptible (2 gangs):`, `  1. ${ids[0]}`, `  2. ${ids[1]}`].join("\n"),
      );

      const table = await cli(
        up.url,
        "resmgr",
        "tasks",
        "active",
        "--respool",
        "/DefaultResPool",
        "-s",
        "PENDING",
      );
      assert.equal(table.code, 0, table.err);
      assert.match(table.out, /^\s*Task\|\s+State\|\s+Resource pool\|\s+Reason\|/);
      assert.match(table.out, /-3-1\| {2}PENDING\| {2}\/DefaultResPool\|/);
      assert.equal(table.out.trim().split("\n").length, 3, "a header and the two pending tasks");
      const capped = await cli(up.url, "resmgr", "tasks", "active", "--job", jobId, "-n", "1");
      assert.match(capped.err, /showing 1 of 5 tasks; raise -n for more/);

      const bad = await cli(up.url, "resmgr", "tasks", "active", "-s", "SLEEPING");
      assert.equal(bad.code, 1);
      assert.match(bad.err, /states: got "SLEEPING"/);
      const missing = await cli(up.url, "resmgr", "tasks", "pending", "/Nope");
      assert.equal(missing.code, 1);
      assert.match(missing.err, /resource pool \/Nope not found/);
      assert.equal((await cli(up.url, "job", "stop", jobId)).code, 0);
    } catch (err) {
      console.error(up.output());
      throw err;
    } finally {
      await up.stop();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
