/** `job stop` of a service in a crash loop: FAILED while its goal, RUNNING, restarts it, it has not ended. */
import assert from "node:assert/strict";
import { cli, waitFor, withUp } from "../testing.ts";

Deno.test("job stop, by id and by --owner, ends a service in a crash loop: FAILED, its goal still RUNNING", async () => {
  // A long restart backoff keeps the failed service FAILED between its runs, long enough to be seen so.
  await withUp("peloton-crash-loop-", async (up) => {
    const file = await Deno.makeTempFile({ suffix: ".yaml" });
    try {
      await Deno.writeTextFile(
        file,
        "name: crash-loop\ntype: SERVICE\nowningTeam: crashers\ninstanceCount: 1\n" +
          "defaultConfig:\n  resource: {cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10}\n" +
          "  command: {shell: true, value: 'exit 3'}\n",
      );
      const create = async () => {
        const created = await cli(up.url, "job", "create", "/DefaultResPool", file);
        assert.equal(created.code, 0, created.err);
        return /^Job (\S+) created$/.exec(created.out)![1];
      };
      const byId = await create(), byOwner = await create();
      const status = async (id: string) => JSON.parse((await cli(up.url, "job", "status", id, "-j")).out);
      for (const id of [byId, byOwner]) {
        await waitFor("the service to read FAILED while it waits to restart", async () => {
          const s = await status(id);
          return (s.state === "FAILED" && s.goalState === "RUNNING") || undefined;
        }, 60_000);
      }
      const stop = await cli(up.url, "job", "stop", byId);
      assert.equal(stop.code, 0, stop.err);
      assert.doesNotMatch(stop.out, /terminal state/);
      assert.equal((await status(byId)).goalState, "KILLED");
      // The owner's active jobs are none (the other is FAILED), yet its crash loop is stopped too.
      const owned = await cli(up.url, "job", "stop", "--owner", "crashers", "-f", "-j");
      assert.equal(owned.code, 0, owned.err);
      assert.deepEqual(JSON.parse(owned.out).stopped.map((s: { id: string }) => s.id), [byOwner]);
      assert.equal((await status(byOwner)).goalState, "KILLED");
    } finally {
      await Deno.remove(file);
    }
  }, ["--agents", "1", "--task-restart-backoff-ms", "30000"]);
});
