/** Sandboxes of ended runs are removed: after the retention period, or at once when their job is deleted. */
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { Minicluster, type MiniclusterOptions } from "./minicluster.ts";
import { makeSpec as specFor, Recorder } from "../backend_testing.ts";
import { sandboxPath, volumePath } from "./agent.ts";
import { filesystemUsage } from "./disk_usage.ts";
import { withMinicluster } from "./testing.ts";

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

function withCluster(options: Partial<MiniclusterOptions>, body: Body): Promise<void> {
  return withMinicluster("sandbox_gc_test_", { agents: 1, stopGracePeriodMs: 100, ...options }, body);
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
      // At once, or, for a run whose process the agent has not reaped yet when its end was told (a loaded
      // machine), as soon as it has: never left for a sweep.
      const path = sandboxPath(dataDir, AGENT_0.agentId, s.taskId);
      for (let waited = 0; waited < 5_000 && await exists(path); waited += 20) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assert(!await exists(path), `${s.taskId}'s sandbox stayed`);
    }
    assert(await exists(sandboxPath(dataDir, AGENT_0.agentId, other.taskId)), "another job's sandbox went");
    const vol = volumePath(dataDir, AGENT_0.agentId, volume.volumeId);
    assert((await Deno.readTextFile(`${vol}/file`)) === "kept\n", "the volume went with the job's sandboxes");
  }));

Deno.test("a job deleted while its task runs (a forced delete, its kill after) loses the sandbox when the run ends", () =>
  withCluster({}, async (mc, rec, dataDir) => {
    const running = makeSpec("echo secret >token; sleep 30");
    const other = makeSpec("sleep 30");
    mc.launch([running, other]);
    for (const s of [running, other]) await rec.waitState(s.taskId, "TASK_RUNNING");
    const sandbox = sandboxPath(dataDir, AGENT_0.agentId, running.taskId);
    await mc.removeSandboxes([running.jobId]);
    assert(await exists(sandbox), "a live run's sandbox went while it ran");
    mc.kill([{ taskId: running.taskId, agentId: AGENT_0.agentId, gracePeriodMs: 0 }]);
    await rec.waitState(running.taskId, "TASK_KILLED");
    await gone(sandbox, "the deleted job's sandbox");
    assert(await exists(sandboxPath(dataDir, AGENT_0.agentId, other.taskId)), "another job's sandbox went");
  }));

const WEEK_MS = 7 * 24 * 3600_000;

async function gone(path: string, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (await exists(path)) {
    assert(Date.now() < deadline, `${what} was never removed`);
    await delay(20);
  }
}

Deno.test("on a disk fuller than 1 - headroom an ended run's sandbox goes at the next look, whatever the delay", () =>
  // A headroom of 1 makes any disk full enough.
  withCluster({ gcDiskHeadroom: 1, diskWatchIntervalMs: 50 }, async (mc, rec, dataDir) => {
    const volume = { volumeId: "vol-3", containerPath: "data", sizeMb: 1 };
    const ended = makeSpec("echo kept >data/file; echo done", { volume });
    const live = makeSpec("sleep 30");
    mc.launch([ended, live]);
    await rec.waitState(ended.taskId, "TASK_FINISHED");
    await rec.waitState(live.taskId, "TASK_RUNNING");
    assert(mc.sandboxGcDelayMs === WEEK_MS);
    await gone(sandboxPath(dataDir, AGENT_0.agentId, ended.taskId), "the ended run's sandbox");
    await delay(150);
    assert(await exists(sandboxPath(dataDir, AGENT_0.agentId, live.taskId)), "a live run's sandbox went");
    const vol = volumePath(dataDir, AGENT_0.agentId, volume.volumeId);
    assert((await Deno.readTextFile(`${vol}/file`)) === "kept\n", "the volume's data went with the sandbox");
  }));

Deno.test("the delay is scaled by the disk's usage, and a sandbox that comes due goes at the next look", async () => {
  // The headroom leaves a tenth of the delay on this disk: 6 of 60 minutes, well before the next sweep (15).
  const probe = await Deno.makeTempDir({ prefix: "sandbox_gc_test_" });
  const usage = await filesystemUsage(probe);
  await Deno.remove(probe);
  assert(usage !== undefined && usage < 0.85, `the test needs a disk less than 85% full, not ${usage}`);
  let skewMs = 0;
  const now = () => Date.now() + skewMs;
  const options = { sandboxGcDelayMs: 3600_000, gcDiskHeadroom: 0.9 - usage, diskWatchIntervalMs: 50, now };
  await withCluster(options, async (mc, rec, dataDir) => {
    // The first look has swept, with nothing ended: from now on only the run's end makes it due.
    await delay(200);
    const spec = makeSpec("echo done");
    mc.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    const dir = sandboxPath(dataDir, AGENT_0.agentId, spec.taskId);
    await delay(200);
    skewMs = 3 * 60_000;
    await delay(200);
    assert(await exists(dir), "the sandbox went 3 minutes after its run ended");
    skewMs = 9 * 60_000;
    await gone(dir, "the sandbox due 6 minutes after its run ended", 2000);
  });
});

/** A small tmpfs to fill: root can mount one (a test machine's disk is not to be filled). */
function mountTmpfs(dir: string, sizeMb: number): boolean {
  if (Deno.uid() !== 0) return false;
  const args = ["-t", "tmpfs", "-o", `size=${sizeMb}m`, "tmpfs", dir];
  return new Deno.Command("mount", { args, stdout: "null", stderr: "null" }).outputSync().success;
}

const CAN_MOUNT = (() => {
  const dir = Deno.makeTempDirSync({ prefix: "sandbox_gc_mount_" });
  const ok = mountTmpfs(dir, 1);
  if (ok) new Deno.Command("umount", { args: [dir] }).outputSync();
  Deno.removeSync(dir);
  return ok;
})();

Deno.test({
  name: "a task that fills the disk has its sandbox removed at the next look, not a week later (root: tmpfs)",
  ignore: !CAN_MOUNT,
  async fn() {
    const mnt = await Deno.makeTempDir({ prefix: "sandbox_gc_full_" });
    assert(mountTmpfs(mnt, 16), "cannot mount a tmpfs");
    const dataDir = `${mnt}/data`;
    // Mesos's defaults otherwise: a week's delay, a headroom of 0.1.
    const mc = new Minicluster({ dataDir, agents: 1, stopGracePeriodMs: 100, diskWatchIntervalMs: 50 });
    const rec = new Recorder();
    mc.start(rec.sink);
    try {
      const small = makeSpec("echo small");
      mc.launch([small]);
      await rec.waitState(small.taskId, "TASK_FINISHED");
      await delay(300);
      assert(
        await exists(sandboxPath(dataDir, AGENT_0.agentId, small.taskId)),
        "a sandbox went from an empty disk",
      );
      // The tester's task, sized to this disk: its output fills it past 90%.
      const big = makeSpec("head -c 15500000 /dev/zero");
      mc.launch([big]);
      await rec.waitState(big.taskId, "TASK_FINISHED");
      await gone(sandboxPath(dataDir, AGENT_0.agentId, big.taskId), "the sandbox filling the disk");
      await gone(sandboxPath(dataDir, AGENT_0.agentId, small.taskId), "the earlier sandbox on a full disk");
      assert((await filesystemUsage(dataDir))! < 0.1, "the disk is still full");
    } finally {
      await mc.stop();
      await new Deno.Command("umount", { args: [mnt] }).output();
      await Deno.remove(mnt, { recursive: true });
    }
  },
});
