/** Persistent volumes of the minicluster's agents: a destroyed one's data is gone, one in use is kept. */
import assert from "node:assert/strict";
import { relative } from "node:path";
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { makeSpec as specFor, Recorder } from "../backend_testing.ts";
import { volumePath } from "./agent.ts";
import { Minicluster } from "./minicluster.ts";
import { withMinicluster } from "./testing.ts";

const AGENT_0 = { hostname: "agent-0", agentId: "minicluster-S0" };
const VOLUME = { volumeId: "job-0-volume", containerPath: "data", sizeMb: 8 };
const REF = { volumeId: VOLUME.volumeId, ...AGENT_0 };
/** Counts its runs in the volume, as scenarios/jobs/stateful.yaml does. */
const COUNT_RUNS = 'echo run >> data/runs; echo "runs: $(wc -l < data/runs)"';

let runs = 0;
function run(command: string, host = AGENT_0): LaunchSpec {
  return specFor(host, command, { volume: VOLUME, taskId: `job-0-${++runs}`, jobId: "job" });
}

function withCluster(
  body: (mc: Minicluster, rec: Recorder, dataDir: string) => Promise<void>,
  asGiven = (dir: string) => dir,
) {
  return withMinicluster("minicluster_volumes_test_", { agents: 2, stopGracePeriodMs: 200 }, body, asGiven);
}

async function finished(mc: Minicluster, rec: Recorder, spec: LaunchSpec): Promise<string | undefined> {
  mc.launch([spec]);
  await rec.waitState(spec.taskId, "TASK_FINISHED");
  return mc.logs(spec.taskId, "stdout");
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);

Deno.test("a data dir given relative (peloton up's default, .peloton) still mounts each run's volume", async () => {
  await withCluster(async (mc, rec) => {
    assert.equal(await finished(mc, rec, run(COUNT_RUNS)), "runs: 1\n");
    assert.equal(await finished(mc, rec, run(COUNT_RUNS)), "runs: 2\n", "kept across runs");
  }, (dir) => relative(Deno.cwd(), dir));
});

Deno.test("a destroyed volume's data is gone: the next run of its id on the agent starts with an empty one", async () => {
  await withCluster(async (mc, rec, dataDir) => {
    assert.equal(await finished(mc, rec, run(COUNT_RUNS)), "runs: 1\n");
    // Enough files that removing them takes a while.
    const many = `${COUNT_RUNS}; mkdir data/many && cd data/many && seq 3000 | xargs touch`;
    assert.equal(await finished(mc, rec, run(many)), "runs: 2\n", "kept across runs");
    const dir = volumePath(`${dataDir}`, AGENT_0.agentId, VOLUME.volumeId);
    // Launched at once after the destroy: the run waits until the old data is gone, and keeps its own.
    const destroyed = mc.destroyVolumes([REF]);
    assert.equal(await finished(mc, rec, run(COUNT_RUNS)), "runs: 1\n", "a fresh volume");
    await destroyed;
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["runs"]);
    assert.equal(await Deno.readTextFile(`${dir}/runs`), "run\n");
    await mc.destroyVolumes([REF]);
    assert.equal(await exists(dir), false, "its directory is removed");
  });
});

Deno.test("a volume a live task mounts is not destroyed; once the task ended, it is", async () => {
  await withCluster(async (mc, rec, dataDir) => {
    const live = run(`${COUNT_RUNS}; sleep 30`);
    mc.launch([live]);
    await rec.waitState(live.taskId, "TASK_RUNNING");
    while (await mc.logs(live.taskId, "stdout") !== "runs: 1\n") await delay(20);
    const dir = volumePath(dataDir, AGENT_0.agentId, VOLUME.volumeId);
    const errors: string[] = [];
    const error = console.error;
    console.error = (line: string) => errors.push(line);
    try {
      await mc.destroyVolumes([REF]);
    } finally {
      console.error = error;
    }
    assert.deepEqual(errors, [
      `minicluster: Cannot destroy volume ${VOLUME.volumeId}: task ${live.taskId} on agent-0 uses it`,
    ]);
    assert.equal(await Deno.readTextFile(`${dir}/runs`), "run\n", "its data is kept");
    mc.kill([{ taskId: live.taskId, agentId: AGENT_0.agentId, gracePeriodMs: 0 }]);
    await rec.waitState(live.taskId, "TASK_KILLED");
    await mc.destroyVolumes([REF]);
    assert.equal(await exists(dir), false);
  });
});

Deno.test("the volume of an agent that is gone is destroyed too: the agent back under its id finds none", async () => {
  await withCluster(async (mc, rec, dataDir) => {
    const host = { hostname: "agent-1", agentId: "minicluster-S1" };
    assert.equal(await finished(mc, rec, run(COUNT_RUNS, host)), "runs: 1\n");
    assert.ok(await mc.removeAgent(host.agentId));
    // The host manager names a host it knows no agent of by its name alone.
    await mc.destroyVolumes([{ volumeId: VOLUME.volumeId, hostname: host.hostname, agentId: "" }]);
    assert.equal(await exists(volumePath(dataDir, host.agentId, VOLUME.volumeId)), false);
    mc.addAgent(host);
    assert.equal(await finished(mc, rec, run(COUNT_RUNS, host)), "runs: 1\n");
  });
});
