/** Sandboxes of ended runs are removed: after the retention period, or at once when their job is deleted. */
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { Minicluster, type MiniclusterOptions } from "./minicluster.ts";
import { makeSpec as specFor, Recorder } from "../backend_testing.ts";
import { sandboxPath, volumePath } from "./agent.ts";

function assert(cond: unknown, message = "assertion failed"): asserts cond {
  if (!cond) throw new Error(message);
}

const AGENT_0 = { hostname: "agent-0", agentId: "minicluster-S0" };

function makeSpec(command: string, overrides: Partial<LaunchSpec> = {}): LaunchSpec {
  return specFor(AGENT_0, command, overrides);
}

async function exists(path: string): Promise<boolean> {
  return await Deno.lstat(path).then(() => true, () => false);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

type Body = (mc: Minicluster, rec: Recorder, dataDir: string) => Promise<void>;

async function withCluster(options: Partial<MiniclusterOptions>, body: Body): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "sandbox_gc_test_" });
  const mc = new Minicluster({ dataDir, agents: 1, stopGracePeriodMs: 100, ...options });
  const rec = new Recorder();
  mc.start(rec.sink);
  try {
    await body(mc, rec, dataDir);
  } finally {
    await mc.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
}

Deno.test("an ended run's sandbox is removed after the retention period; a live one's and volumes stay", () =>
  withCluster({ sandboxGcDelayMs: 400 }, async (mc, rec, dataDir) => {
    const volume = { volumeId: "vol-1", containerPath: "data", sizeMb: 1 };
    const ended = makeSpec("echo kept >data/file; echo done", { volume });
    const live = makeSpec("sleep 30");
    mc.launch([ended, live]);
    await rec.waitState(ended.taskId, "TASK_FINISHED");
    await rec.waitState(live.taskId, "TASK_RUNNING");
    const endedDir = sandboxPath(dataDir, AGENT_0.agentId, ended.taskId);
    assert(await exists(`${endedDir}/stdout`), "the sandbox is there just after the run ended");
    await delay(200);
    assert(await exists(endedDir), "the sandbox went before its retention period");
    const deadline = Date.now() + 5000;
    while (await exists(endedDir)) {
      assert(Date.now() < deadline, "the ended run's sandbox was never removed");
      await delay(50);
    }
    assert(await exists(sandboxPath(dataDir, AGENT_0.agentId, live.taskId)), "a live run's sandbox went");
    const vol = volumePath(dataDir, AGENT_0.agentId, volume.volumeId);
    assert((await Deno.readTextFile(`${vol}/file`)) === "kept\n", "the volume's data went with the sandbox");
  }));

Deno.test("a deleted job's sandboxes are removed at once; other jobs' and volumes stay", () =>
  withCluster({}, async (mc, rec, dataDir) => {
    const volume = { volumeId: "vol-2", containerPath: "data", sizeMb: 1 };
    const deleted = makeSpec("echo kept >data/file", { volume });
    const earlier = makeSpec("echo earlier", {
      jobId: deleted.jobId,
      taskId: `${deleted.jobId}-1-1`,
      instanceId: 1,
    });
    const other = makeSpec("echo other");
    mc.launch([deleted, earlier, other]);
    for (const s of [deleted, earlier, other]) await rec.waitState(s.taskId, "TASK_FINISHED");
    await mc.removeSandboxes([deleted.jobId]);
    for (const s of [deleted, earlier]) {
      assert(!await exists(sandboxPath(dataDir, AGENT_0.agentId, s.taskId)), `${s.taskId}'s sandbox stayed`);
    }
    assert(await exists(sandboxPath(dataDir, AGENT_0.agentId, other.taskId)), "another job's sandbox went");
    const vol = volumePath(dataDir, AGENT_0.agentId, volume.volumeId);
    assert((await Deno.readTextFile(`${vol}/file`)) === "kept\n", "the volume went with the job's sandboxes");
  }));
