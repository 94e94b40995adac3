/** A host keeps its agent id, and so its sandboxes and volumes, across restarts of the minicluster. */
import assert from "node:assert/strict";
import type { HostInfo, LaunchSpec } from "../../core/ports/host_backend.ts";
import { makeSpec, Recorder } from "../backend_testing.ts";
import { volumePath } from "./agent.ts";
import { Minicluster, type MiniclusterOptions } from "./minicluster.ts";

const VOLUME = { volumeId: "job-0-volume-a1", containerPath: "data", sizeMb: 8 };
/** Counts its runs in the volume, as scenarios/jobs/stateful.yaml does. */
const COUNT_RUNS = 'echo run >> data/runs; echo "runs: $(wc -l < data/runs)"';

let runs = 0;

/** Runs COUNT_RUNS on `host` with the volume mounted, to its end; its stdout. */
async function countRun(mc: Minicluster, rec: Recorder, host: HostInfo): Promise<string | undefined> {
  const spec: LaunchSpec = makeSpec(host, COUNT_RUNS, {
    volume: VOLUME,
    taskId: `job-0-${++runs}`,
    jobId: "job",
  });
  mc.launch([spec]);
  await rec.waitState(spec.taskId, "TASK_FINISHED");
  return mc.logs(spec.taskId, "stdout");
}

/** A minicluster on `dataDir`, started, run through `body`, then stopped (as `peloton up` and its restart). */
async function session(
  dataDir: string,
  body: (mc: Minicluster, rec: Recorder) => Promise<void>,
  options: Partial<MiniclusterOptions> = {},
): Promise<void> {
  const mc = new Minicluster({ dataDir, agents: 2, stopGracePeriodMs: 200, ...options });
  const rec = new Recorder();
  mc.start(rec.sink);
  try {
    await body(mc, rec);
  } finally {
    await mc.stop();
  }
}

async function withDataDir(body: (dataDir: string) => Promise<void>): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "minicluster_agent_ids_test_" });
  try {
    await body(dataDir);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
}

const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);

Deno.test("an agent added at run time gets its own id back after a restart, whatever order agents come in", () =>
  withDataDir(async (dataDir) => {
    let agent8: HostInfo | undefined;
    await session(dataDir, async (mc, rec) => {
      agent8 = mc.addAgent({ hostname: "agent-8" });
      assert.equal(await countRun(mc, rec, agent8), "runs: 1\n");
    });
    await session(dataDir, async (mc, rec) => {
      assert.deepEqual(mc.hosts().map((h) => [h.hostname, h.agentId]), [
        ["agent-0", "minicluster-S0"],
        ["agent-1", "minicluster-S1"],
      ]);
      // Another host added first does not take agent-8's directory.
      const agent5 = mc.addAgent({ hostname: "agent-5" });
      assert.notEqual(agent5.agentId, agent8!.agentId);
      const again = mc.addAgent({ hostname: "agent-8" });
      assert.equal(again.agentId, agent8!.agentId, "agent-8's id, as before the restart");
      assert.equal(await countRun(mc, rec, again), "runs: 2\n", "its volume, with the first run's data");
      assert.equal(await countRun(mc, rec, agent5), "runs: 1\n", "agent-5's volume is its own");
    });
  }));

Deno.test("a volume of a host not added again since a restart is destroyed at once, under the host's own id", () =>
  withDataDir(async (dataDir) => {
    let agent8: HostInfo | undefined;
    await session(dataDir, async (mc, rec) => {
      agent8 = mc.addAgent({ hostname: "agent-8" });
      assert.equal(await countRun(mc, rec, agent8), "runs: 1\n");
    });
    const dir = volumePath(dataDir, agent8!.agentId, VOLUME.volumeId);
    assert.ok(await exists(dir));
    await session(dataDir, async (mc, rec) => {
      const errors: string[] = [];
      const error = console.error;
      console.error = (line: string) => errors.push(line);
      try {
        // As the host manager names a host it has no agent of: by its name alone.
        await mc.destroyVolumes([{ volumeId: VOLUME.volumeId, hostname: "agent-8", agentId: "" }]);
        await mc.destroyVolumes([{ volumeId: VOLUME.volumeId, hostname: "agent-9", agentId: "" }]);
      } finally {
        console.error = error;
      }
      assert.equal(await exists(dir), false, "destroyed though agent-8 is not here");
      assert.deepEqual(errors, [
        `minicluster: Cannot destroy volume "${VOLUME.volumeId}": no agent on host agent-9 ever ran on this ` +
        "data dir, so none of its volumes is here",
      ]);
      mc.addAgent({ hostname: "agent-5" });
      const again = mc.addAgent({ hostname: "agent-8" });
      assert.equal(await countRun(mc, rec, again), "runs: 1\n", "an empty volume");
    });
  }));

Deno.test("a data dir from before ids were kept: the agents it starts with keep theirs, a new host takes no old directory", () =>
  withDataDir(async (dataDir) => {
    // Left by agents that had ids by the order they were added: two at the start, one added later.
    for (const id of ["minicluster-S0", "minicluster-S1", "minicluster-S2"]) {
      await Deno.mkdir(volumePath(dataDir, id, VOLUME.volumeId), { recursive: true });
      await Deno.writeTextFile(`${volumePath(dataDir, id, VOLUME.volumeId)}/runs`, "run\n");
    }
    await session(dataDir, async (mc, rec) => {
      const [agent0] = mc.hosts();
      assert.equal(agent0.agentId, "minicluster-S0");
      assert.equal(await countRun(mc, rec, agent0), "runs: 2\n", "agent-0's volume, as before");
      const added = mc.addAgent({ hostname: "agent-5" });
      assert.equal(added.agentId, "minicluster-S3", "not S2, whose host is unknown");
      assert.equal(await countRun(mc, rec, added), "runs: 1\n");
    });
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${dataDir}/agent_ids.json`)), {
      "agent-0": "minicluster-S0",
      "agent-1": "minicluster-S1",
      "agent-5": "minicluster-S3",
    });
  }));

Deno.test("an agent id given for a host is recorded, and taken from the host that had it", () =>
  withDataDir(async (dataDir) => {
    await session(dataDir, async (mc) => {
      assert.ok(await mc.removeAgent("minicluster-S1"));
      mc.addAgent({ hostname: "agent-7", agentId: "minicluster-S1" });
    });
    assert.deepEqual(JSON.parse(await Deno.readTextFile(`${dataDir}/agent_ids.json`)), {
      "agent-0": "minicluster-S0",
      "agent-7": "minicluster-S1",
    });
  }));

Deno.test("an agent id map that cannot be read stops the start, naming the file, and leaves the data dir free", () =>
  withDataDir(async (dataDir) => {
    await Deno.writeTextFile(`${dataDir}/agent_ids.json`, '{"agent-0": "../x"}');
    assert.throws(
      () => new Minicluster({ dataDir, agents: 1 }),
      new RegExp(`^Error: Cannot read the agent ids in ${dataDir}/agent_ids.json: host agent-0: got "../x"`),
    );
    await Deno.remove(`${dataDir}/agent_ids.json`);
    await session(dataDir, (mc) => {
      assert.equal(mc.hosts().length, 2);
      return Promise.resolve();
    });
  }));
