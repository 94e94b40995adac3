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

/** The `volume-reservations` events of a host, in order. */
function reports(rec: Recorder, hostname = AGENT_0.hostname) {
  return rec.events.flatMap((e) =>
    e.kind === "volume-reservations" && e.hostname === hostname ? [e.volumes] : []
  );
}

/** What a run of `run` reserves with its volume: its cpus, mem and gpus, and the volume's size as disk. */
const RESERVED = [{
  volumeId: VOLUME.volumeId,
  resources: { cpuMilli: 100, memMb: 32, diskMb: 8, gpuMilli: 0 },
}];

Deno.test("a volume is reported reserved from the launch that makes it until its destroy, also after a restart", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "minicluster_volumes_test_" });
  const started = () => {
    const mc = new Minicluster({ dataDir, agents: 2, stopGracePeriodMs: 200 });
    const rec = new Recorder();
    mc.start(rec.sink);
    return { mc, rec };
  };
  try {
    const first = started();
    const spec = run(COUNT_RUNS);
    assert.equal(await finished(first.mc, first.rec, spec), "runs: 1\n");
    assert.deepEqual(reports(first.rec), [RESERVED]);
    const kinds = first.rec.events.map((e) => e.kind === "task-status" ? e.status.taskId : e.kind);
    assert.ok(
      kinds.indexOf("volume-reservations") < kinds.indexOf(spec.taskId),
      "before any status of the run",
    );
    await delay(20);
    assert.deepEqual(reports(first.rec), [RESERVED], "once: its run ending does not change it");
    await first.mc.stop();

    // A new minicluster (and host manager) on the data dir: the volume is reported again, after its host-up.
    const second = started();
    await second.rec.waitFor((e) => e.kind === "volume-reservations", "the volume's reservation");
    const order = second.rec.events.map((e) => e.kind === "host-up" ? e.host.hostname : e.kind);
    assert.deepEqual(order, ["agent-0", "agent-1", "volume-reservations"]);
    assert.deepEqual(reports(second.rec), [RESERVED]);
    await second.mc.destroyVolumes([REF]);
    await delay(20);
    assert.deepEqual(reports(second.rec), [RESERVED, []], "released once destroyed");
    await second.mc.stop();

    const third = started();
    await third.rec.waitFor((e) => e.kind === "host-up", "the agents");
    await delay(20);
    assert.deepEqual(reports(third.rec), [], "nothing left to report");
    await third.mc.stop();
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("a launch of a volume's id after its destroy began keeps the volume reserved", async () => {
  await withCluster(async (mc, rec) => {
    assert.equal(await finished(mc, rec, run(COUNT_RUNS)), "runs: 1\n");
    const destroyed = mc.destroyVolumes([REF]);
    assert.equal(await finished(mc, rec, run(COUNT_RUNS)), "runs: 1\n", "a fresh volume");
    await destroyed;
    await delay(20);
    assert.deepEqual(reports(rec).at(-1), RESERVED);
  });
});

Deno.test("a volume destroyed while its host's machine is down is reported released when the machine is up", async () => {
  await withCluster(async (mc, rec) => {
    assert.equal(await finished(mc, rec, run(COUNT_RUNS)), "runs: 1\n");
    mc.machineDown(AGENT_0.hostname);
    await rec.waitFor((e) => e.kind === "host-lost", "the host lost");
    await mc.destroyVolumes([REF]);
    await delay(20);
    assert.deepEqual(reports(rec), [RESERVED], "no report for a host away");
    mc.machineUp(AGENT_0.hostname);
    await rec.waitFor((e) => e.kind === "volume-reservations" && !e.volumes.length, "the release");
    const kinds = rec.events.map((e) => e.kind).filter((k) => k !== "task-status");
    assert.deepEqual(kinds.slice(-2), ["host-up", "volume-reservations"]);
  });
});
