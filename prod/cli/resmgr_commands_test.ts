/** `peloton resmgr tasks active|pending|orphan` against `peloton up`: what the resource manager holds, as it holds it. */
import assert from "node:assert/strict";
import { batchJobYaml } from "../testing_cluster.ts";
import { cli, waitFor, withUp } from "../testing.ts";
import { type Orphan, orphanTable } from "./resmgr_commands.ts";

Deno.test({
  name: "resmgr tasks active and pending list the resource manager's tasks and a pool's queue in order",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-resmgr-tasks-", async (up, dir) => {
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

      // A restart gives an instance its next run only once the last one ended: no run is left orphaned.
      const restarted = active.tasksByState.RUNNING.taskEntry[0].taskID;
      const instance = Number(restarted.split("-").at(-2));
      const r = await cli(up.url, "task", "restart", jobId, "-r", `${instance}:${instance + 1}`);
      assert.equal(r.code, 0, r.err);
      const next = `${jobId}-${instance}-2`;
      await waitFor(`${next} held in place of ${restarted}`, async () => {
        const all = await cli(up.url, "resmgr", "tasks", "active", "--job", jobId, "-j");
        const ids = Object.values(
          JSON.parse(all.out).tasksByState as Record<string, { taskEntry: { taskID: string }[] }>,
        ).flatMap((s) => s.taskEntry.map((e) => e.taskID));
        return ids.includes(next) && !ids.includes(restarted) ? true : undefined;
      });
      const orphans = await cli(up.url, "resmgr", "tasks", "orphan");
      assert.equal(orphans.code, 0, orphans.err);
      assert.equal(orphans.out, "No orphan tasks");
      const inPool = await cli(up.url, "resmgr", "tasks", "orphan", "--respool", "/DefaultResPool", "-j");
      assert.equal(inPool.code, 0, inPool.err);
      assert.deepEqual(JSON.parse(inPool.out), { orphanTasks: [] });
      const noPool = await cli(up.url, "resmgr", "tasks", "orphan", "--respool", "/Nope");
      assert.equal(noPool.code, 1);
      assert.match(noPool.err, /^peloton resmgr tasks orphan: .*not-found: resource pool \/Nope not found$/);
      assert.equal((await cli(up.url, "job", "stop", jobId)).code, 0);
    }, ["--agents", "3"]);
  },
});

Deno.test("resmgr tasks orphan's table totals what the orphans hold in their pools' allocation", () => {
  const orphan = (run: number, held: boolean, hostname?: string): Orphan => ({
    taskId: { value: `j-0-${run}` },
    state: held ? "RUNNING" : "PENDING",
    respool: "/p",
    resource: { cpuLimit: 0.1, gpuLimit: 0, memLimitMb: 64, diskLimitMb: 10 },
    held,
    hostname,
    reason: `why ${run}`,
  });
  const rows = orphanTable([orphan(1, true, "h1"), orphan(2, true), orphan(3, false)]).split("\n")
    .map((l) => l.split("|").map((c) => c.trim()).slice(0, -1));
  assert.deepEqual(rows, [
    ["Task", "State", "Resource pool", "Hostname", "CPU", "GPU", "Memory MB", "Disk MB", "Held", "Reason"],
    ["j-0-1", "RUNNING", "/p", "h1", "0.1", "0", "64", "10", "yes", "why 1"],
    ["j-0-2", "RUNNING", "/p", "", "0.1", "0", "64", "10", "yes", "why 2"],
    ["j-0-3", "PENDING", "/p", "", "0.1", "0", "64", "10", "no", "why 3"],
    ["Total held", "", "", "", "0.2", "0", "128", "20", "", ""],
  ]);
});
