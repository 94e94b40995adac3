/** `peloton volume delete` through `peloton up`: the volume's data is destroyed, the next run starts empty. */
import assert from "node:assert/strict";
import { cli, ROOT, waitFor, withUp } from "./testing.ts";

type Task = { runtime: { state: string; host?: string; mesosTaskId: { value: string } } };

async function task0(url: string, job: string): Promise<Task> {
  const r = await cli(url, "task", "list", job, "-j");
  assert.equal(r.code, 0, r.err);
  return JSON.parse(r.out).result.value["0"];
}

/** Waits until instance 0 is in `state` (in its run `run`, when given). */
function inState(url: string, job: string, state: string, run?: number): Promise<Task> {
  return waitFor(`${job}-0 ${state}${run ? ` in run ${run}` : ""}`, async () => {
    const t = await task0(url, job);
    const at = Number(t.runtime.mesosTaskId.value.split("-").at(-1));
    return t.runtime.state === state && (run === undefined || at === run) ? t : undefined;
  });
}

/** Instance 0's stdout once its shell has written it. */
function runsLine(url: string, job: string): Promise<string> {
  return waitFor(`the stdout of ${job}-0`, async () => {
    const out = (await cli(url, "task", "logs", job, "0")).out;
    return /^runs: \d+ on /.test(out) ? out : undefined;
  });
}

/** The ids of the job's volumes, as `volume list` gives them. */
async function volumeIds(url: string, job: string): Promise<string[]> {
  const r = await cli(url, "volume", "list", job, "-j");
  assert.equal(r.code, 0, r.err);
  return Object.keys(JSON.parse(r.out).volumes);
}

/** The volume's directory on each agent that has one. */
async function volumeDirs(dataDir: string, volumeId: string): Promise<string[]> {
  const out: string[] = [];
  for await (const agent of Deno.readDir(`${dataDir}/minicluster/agents`)) {
    const dir = `${dataDir}/minicluster/agents/${agent.name}/volumes/${volumeId}`;
    if (await Deno.stat(dir).then(() => true, () => false)) out.push(dir);
  }
  return out;
}

Deno.test({
  name: "volume delete destroys the volume's data: the task's next run finds an empty volume",
  sanitizeResources: false,
  async fn() {
    await withUp("peloton-volumes-", async (up, dataDir) => {
      const created = await cli(
        up.url,
        "job",
        "create",
        "/DefaultResPool",
        `${ROOT}/scenarios/jobs/stateful.yaml`,
      );
      assert.equal(created.code, 0, created.err);
      const job = /^Job (\S+) created$/.exec(created.out)![1];
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
      assert.equal((await volumeDirs(dataDir, volumeId)).length, 1, "and kept");

      assert.equal((await cli(up.url, "task", "stop", job)).code, 0);
      await inState(up.url, job, "KILLED");
      const deleted = await cli(up.url, "volume", "delete", volumeId);
      assert.equal(deleted.code, 0, deleted.err);
      await waitFor(
        "the volume's directory removed",
        async () => (await volumeDirs(dataDir, volumeId)).length === 0 || undefined,
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
