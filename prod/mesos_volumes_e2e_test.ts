/**
 * A stateful job through `peloton up --backend mesos` on `peloton minicluster`, the project's emulator of the
 * documented Mesos v1 protocol (verified against that emulator): its first run makes the persistent volume
 * (RESERVE + CREATE + LAUNCH), the next run on the host finds what the first wrote, and a deleted volume is
 * destroyed on its agent (DESTROY + UNRESERVE).
 */
import assert from "node:assert/strict";
import { cli, createDefaultPool, createJob, ROOT, startPeloton, startUp, waitFor } from "./testing.ts";
import { inState, runsLine, volumeDirs, volumeIds } from "./volumes_testing.ts";

Deno.test({
  name:
    "peloton up --backend mesos: a stateful job's volume keeps its data across runs; a deleted one is destroyed",
  sanitizeResources: false,
  ignore: Deno.env.get("MESOS_MASTER_URL") !== undefined,
  async fn() {
    const dataDir = await Deno.makeTempDir({ prefix: "peloton-mesos-volumes-" });
    const masterDir = `${dataDir}/master`;
    const master = await startPeloton(
      ["minicluster", "--port", "0", "--agents", "2", "--data-dir", masterDir],
      /Mesos master emulator at (http:\/\/\S+) /,
    );
    const up = await startUp(`${dataDir}/peloton`, ["--backend", "mesos", "--mesos-master", master.url]);
    try {
      await createDefaultPool(up.url);
      const job = await createJob(up.url, `${ROOT}/scenarios/jobs/stateful.yaml`);
      const first = await inState(up.url, job, "RUNNING", undefined, 60_000);
      const host = first.runtime.host!;
      const [volumeId] = await volumeIds(up.url, job);
      assert.equal(await runsLine(up.url, job), `runs: 1 on ${host}`);
      assert.equal(
        (await volumeDirs(`${masterDir}/agents`, volumeId)).length,
        1,
        "the volume made on the agent",
      );

      // Mesos keeps the volume as made: an update moving it to another path is refused, and nothing changes.
      const moved = `${dataDir}/moved.yaml`;
      await Deno.writeTextFile(
        moved,
        (await Deno.readTextFile(`${ROOT}/scenarios/jobs/stateful.yaml`)).replace(
          "containerPath: data,",
          "containerPath: data2,",
        ),
      );
      const refused = await cli(up.url, "update", "create", job, moved, "1");
      assert.notEqual(refused.code, 0, refused.out);
      assert.match(refused.err + refused.out, /volume\.containerPath: cannot change "data" to "data2"/);

      assert.equal((await cli(up.url, "task", "restart", job)).code, 0);
      await inState(up.url, job, "RUNNING", 2, 60_000);
      assert.equal(await runsLine(up.url, job), `runs: 2 on ${host}`, "the volume kept the first run's line");

      assert.equal((await cli(up.url, "task", "stop", job)).code, 0);
      await inState(up.url, job, "KILLED", undefined, 60_000);
      const deleted = await cli(up.url, "volume", "delete", volumeId);
      assert.equal(deleted.code, 0, deleted.err);
      await waitFor(
        "the volume destroyed on its agent",
        async () => (await volumeDirs(`${masterDir}/agents`, volumeId)).length === 0 || undefined,
      );

      assert.equal((await cli(up.url, "task", "start", job)).code, 0);
      const again = await inState(up.url, job, "RUNNING", 3, 60_000);
      assert.equal(await runsLine(up.url, job), `runs: 1 on ${again.runtime.host}`, "a fresh volume");
    } catch (err) {
      console.error(up.output());
      throw err;
    } finally {
      await up.stop();
      await master.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
