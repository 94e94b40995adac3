/** Disk quota enforcement: a task whose sandbox outgrows its disk fails as Mesos's `disk/du` makes it. */
import assert from "node:assert/strict";
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { Minicluster } from "./minicluster.ts";
import { isAlive, makeSpec as specFor, Recorder } from "../backend_testing.ts";
import { DiskQuotaWatch } from "./disk_quota.ts";
import { withMinicluster } from "./testing.ts";

const AGENT_0 = { hostname: "agent-0", agentId: "minicluster-S0" };

function makeSpec(command: string, diskMb: number, overrides: Partial<LaunchSpec> = {}): LaunchSpec {
  const spec = specFor(AGENT_0, command, overrides);
  return { ...spec, resources: { ...spec.resources, diskMb } };
}

function withCluster(body: (mc: Minicluster, rec: Recorder) => Promise<void>): Promise<void> {
  const options = {
    agents: [{ containerDiskWatchIntervalMs: 100 }],
    stopGracePeriodMs: 100,
    spawnInWorker: true,
  };
  return withMinicluster("disk_quota_test_", options, body);
}

Deno.test("a task whose sandbox outgrows its disk is killed, TASK_FAILED with the reason and Mesos's message", () =>
  withCluster(async (mc, rec) => {
    // 3 MB in its stdout against 1 MB of disk; a child that would outlive a kill of the shell alone.
    const spec = makeSpec("head -c 3000000 /dev/zero; sleep 60 & echo $! >child; wait", 1);
    mc.launch([spec]);
    const failed = await rec.waitState(spec.taskId, "TASK_FAILED");
    assert.equal(failed.reason, "REASON_CONTAINER_LIMITATION_DISK");
    assert.match(failed.message ?? "", /^Disk usage \(\d+KB\) exceeds quota \(1MB\); Command terminated/);
    assert.deepEqual(rec.states(spec.taskId), [
      "TASK_STAGING",
      "TASK_STARTING",
      "TASK_RUNNING",
      "TASK_FAILED",
    ]);
    const child = Number((await Deno.readTextFile(`${mc.sandboxOf(spec.taskId)}/child`)).trim());
    assert.equal(isAlive(child), false, "the task's child outlived it");
    // Its output stays for `task logs`, until the sandbox GC.
    assert.equal((await Deno.stat(`${mc.sandboxOf(spec.taskId)}/stdout`)).size, 3_000_000);
  }));

Deno.test("a task within its disk, one with no disk, and one whose volume holds the data all run to their end", () =>
  withCluster(async (mc, rec) => {
    const volume = { volumeId: "vol-1", containerPath: "data", sizeMb: 8 };
    const specs = [
      makeSpec("head -c 200000 /dev/zero; sleep 0.5", 1),
      makeSpec("head -c 3000000 /dev/zero; sleep 0.5", 0),
      makeSpec("head -c 3000000 /dev/zero >data/file; sleep 0.5", 1, { volume }),
    ];
    mc.launch(specs);
    for (const spec of specs) {
      const end = await rec.waitStatus(
        (s) => s.taskId === spec.taskId && ["TASK_FINISHED", "TASK_FAILED", "TASK_KILLED"].includes(s.state),
        `${spec.command.value} to end`,
      );
      assert.equal(end.state, "TASK_FINISHED", `${spec.command.value}: ${end.message}`);
    }
  }));

Deno.test("the watch keeps no timer or du once nothing is watched, and starts again for the next task", async () => {
  const dir = await Deno.makeTempDir({ prefix: "disk_quota_test_" });
  try {
    await Deno.writeFile(`${dir}/out`, new Uint8Array(2 * 1024 * 1024));
    const exceeded: string[] = [];
    const onExceeded = (taskId: string, message: string) => exceeded.push(`${taskId}: ${message}`);
    // Unwatched before its first measurement, a minute away: nothing left holds the process up.
    const script = `import { DiskQuotaWatch } from ${JSON.stringify(import.meta.resolve("./disk_quota.ts"))};
      const slow = new DiskQuotaWatch(60_000, () => console.log("measured"));
      slow.watch("a", ${JSON.stringify(dir)}, 1024 * 1024);
      await slow.unwatch("a");`;
    const child = new Deno.Command(Deno.execPath(), { args: ["eval", script], stdout: "piped" }).spawn();
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    const ended = await child.output();
    clearTimeout(timer);
    assert.equal(ended.signal, null, "the process was held up by the watch after unwatch");
    assert.equal(new TextDecoder().decode(ended.stdout), "");
    const watch = new DiskQuotaWatch(20, onExceeded);
    watch.watch("a", dir, 1024 * 1024);
    await watch.unwatch("a");
    watch.watch("b", dir, 1024 * 1024);
    const deadline = Date.now() + 5000;
    while (exceeded.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.equal(exceeded.length, 1);
    assert.match(exceeded[0], /^b: Disk usage \(20\d\dKB\) exceeds quota \(1MB\)$/);
    await watch.unwatch("b");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("disk options out of range are refused, naming the option, and leave the data dir free", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "disk_quota_test_" });
  try {
    const refused: [Partial<ConstructorParameters<typeof Minicluster>[0]>, string][] = [
      [{ gcDiskHeadroom: 1.5 }, "gcDiskHeadroom is 1.5, expected a fraction from 0 to 1"],
      [{ diskWatchIntervalMs: 0 }, "diskWatchIntervalMs is 0, expected a positive number of ms"],
      [
        { agents: [{ containerDiskWatchIntervalMs: -1 }] },
        "agent-0: containerDiskWatchIntervalMs is -1, expected a positive number of ms",
      ],
    ];
    for (const [options, message] of refused) {
      assert.throws(() => new Minicluster({ dataDir, agents: 1, ...options }), (e: Error) => {
        assert.ok(e.message.endsWith(message), e.message);
        return true;
      });
    }
    await new Minicluster({ dataDir, agents: 1 }).stop();
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
