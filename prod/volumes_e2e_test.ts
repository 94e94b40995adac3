/** `peloton volume delete` through `peloton up`: the volume's data is destroyed, the next run starts empty. */
import assert from "node:assert/strict";
import { cli, createJob, ROOT, waitFor, withUp } from "./testing.ts";
import { inState, runsLine, volumeDirs, volumeIds } from "./volumes_testing.ts";

Deno.test({
  name: "volume delete destroys the volume's data: the task's next run finds an empty volume",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-volumes-", async (up, dataDir) => {
      const job = await createJob(up.url, `${ROOT}/scenarios/jobs/stateful.yaml`);
      const first = await inState(up.url, job, "RUNNING");
      // The first run's volume: one id per volume made, never made again.
      const [volumeId] = await volumeIds(up.url, job);
      assert.match(volumeId, new RegExp(`^${job}-0-volume-[0-9a-f-]{36}$`));
      const host = first.runtime.host!;
      assert.equal(await runsLine(up.url, job), `runs: 1 on ${host}`);
      assert.equal((await cli(up.url, "task", "restart", job)).code, 0);
      await inState(up.url, job, "RUNNING", 2);
      assert.equal(await runsLine(up.url, job), `runs: 2 on ${host}`, "the volume kept the first run's line");

      const inUse = await cli(up.url, "volume", "delete", volumeId);
      assert.equal(inUse.code, 1, "refused while its task runs");
      assert.match(
        inUse.err,
        /failed-precondition: volume .* is in use by task .* \(RUNNING\); stop it first/,
      );
      assert.equal((await volumeDirs(`${dataDir}/minicluster/agents`, volumeId)).length, 1, "and kept");

      assert.equal((await cli(up.url, "task", "stop", job)).code, 0);
      await inState(up.url, job, "KILLED");
      const deleted = await cli(up.url, "volume", "delete", volumeId);
      assert.equal(deleted.code, 0, deleted.err);
      await waitFor(
        "the volume's directory removed",
        async () => (await volumeDirs(`${dataDir}/minicluster/agents`, volumeId)).length === 0 || undefined,
      );

      assert.equal((await cli(up.url, "task", "start", job)).code, 0);
      const again = await inState(up.url, job, "RUNNING", 3);
      assert.equal(await runsLine(up.url, job), `runs: 1 on ${again.runtime.host}`, "a fresh volume");
      const made = await volumeIds(up.url, job);
      assert.equal(made.length, 1);
      assert.notEqual(made[0], volumeId, "a new volume, under a new id");
    });
  },
});
