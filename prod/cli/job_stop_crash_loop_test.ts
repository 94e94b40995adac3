/** `job stop` of a service in a crash loop: FAILED while its goal, RUNNING, restarts it, it has not ended. */
import assert from "node:assert/strict";
import { cli, waitFor, withUp } from "../testing.ts";

Deno.test("job stop ends a service in a crash loop: FAILED, its goal still RUNNING", async () => {
  // A long restart backoff keeps the failed service FAILED between its runs, long enough to be seen so.
  await withUp("peloton-crash-loop-", async (up) => {
    const file = await Deno.makeTempFile({ suffix: ".yaml" });
    try {
      await Deno.writeTextFile(
        file,
        "name: crash-loop\ntype: SERVICE\ninstanceCount: 1\n" +
          "defaultConfig:\n  resource: {cpuLimit: 0.1, memLimitMb: 16, diskLimitMb: 10}\n" +
          "  command: {shell: true, value: 'exit 3'}\n",
      );
      const created = await cli(up.url, "job", "create", "/DefaultResPool", file);
      assert.equal(created.code, 0, created.err);
      const id = /^Job (\S+) created$/.exec(created.out)![1];
      const status = async () => JSON.parse((await cli(up.url, "job", "status", id, "-j")).out);
      await waitFor("the service to read FAILED while it waits to restart", async () => {
        const s = await status();
        return (s.state === "FAILED" && s.goalState === "RUNNING") || undefined;
      }, 60_000);
      const stop = await cli(up.url, "job", "stop", id);
      assert.equal(stop.code, 0, stop.err);
      assert.doesNotMatch(stop.out, /terminal state/);
      assert.equal((await status()).goalState, "KILLED");
    } finally {
      await Deno.remove(file);
    }
  }, ["--agents", "1", "--task-restart-backoff-ms", "30000"]);
});
