/**
 * `peloton minicluster` restarted after a kill -9 on the same data dir: the task processes the dead one left
 * running are ended before its agents come up, so each instance a scheduler relaunches runs once.
 */
import assert from "node:assert/strict";
import type { HostInfo } from "../../core/ports/host_backend.ts";
import { MesosBackend } from "../mesos/mesos_backend.ts";
import { MemoryFrameworkIdStore } from "../mesos/scheduler_client.ts";
import { isAlive, makeSpec, Recorder } from "../backend_testing.ts";
import { DATA_DIR_ENV, dataDirMark } from "../minicluster/_task_records.ts";
import { signalGroup } from "../minicluster/_session.ts";
import { isTerminalMesosState } from "../minicluster/minicluster.ts";
import type { MesosTaskState } from "../../core/model/states.ts";
import { startPeloton, type UpProcess, waitFor } from "../testing.ts";

/** A port free now, so a restarted minicluster can listen where the scheduler looks for it. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

function startMinicluster(port: number, dataDir: string): Promise<UpProcess> {
  return startPeloton(
    [
      "minicluster",
      "--port",
      String(port),
      "--data-dir",
      dataDir,
      "--agents",
      "1",
      "--heartbeat-seconds",
      "1",
    ],
    /emulator at (http:\/\/\S+) /,
  );
}

/** The live task processes this data dir's agents started, by pid, with the task id their sandbox names. */
function taskProcesses(dataDir: string): Map<number, string> {
  const mark = `${DATA_DIR_ENV}=${dataDirMark(dataDir)}`;
  const out = new Map<number, string>();
  for (const entry of Deno.readDirSync("/proc")) {
    const pid = Number(entry.name);
    if (!Number.isInteger(pid) || !isAlive(pid)) continue;
    try {
      if (!Deno.readTextFileSync(`/proc/${pid}/environ`).split("\0").includes(mark)) continue;
      out.set(pid, Deno.readLinkSync(`/proc/${pid}/cwd`).split("/").pop()!);
    } catch { /* gone, or another user's */ }
  }
  return out;
}

Deno.test("peloton minicluster: restarted after a kill -9, it ends the old tasks; each relaunched instance runs once", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "minicluster-crash-" });
  const port = freePort();
  const rec = new Recorder();
  let first: UpProcess | undefined, second: UpProcess | undefined;
  let backend: MesosBackend | undefined;
  try {
    first = await startMinicluster(port, dataDir);
    backend = new MesosBackend({
      masterUrl: first.url,
      idStore: new MemoryFrameworkIdStore(),
      client: { backoffMinMs: 50, backoffMaxMs: 200, random: () => 0.5 },
    });
    rec.onStatus = (s) =>
      s.uuid && backend!.acknowledge([{ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid }]);
    backend.start(rec.sink);
    const host = await waitFor("a host", () => {
      const up = rec.events.find((e) => e.kind === "host-up");
      return Promise.resolve(up?.kind === "host-up" ? up.host : undefined);
    });
    // Two instances of one job, as the host manager launches them.
    const jobId = crypto.randomUUID();
    const launch = (on: HostInfo, instance: number, run: number) =>
      makeSpec(on, ["sleep", "300"], { jobId, instanceId: instance, taskId: `${jobId}-${instance}-${run}` });
    const old = [launch(host, 0, 1), launch(host, 1, 1)];
    backend.launch(old);
    for (const spec of old) await rec.waitState(spec.taskId, "TASK_RUNNING", 20_000);
    const oldPids = [...taskProcesses(dataDir).keys()];
    assert.deepEqual([...taskProcesses(dataDir).values()].sort(), old.map((s) => s.taskId).sort());

    first.child.kill("SIGKILL");
    await first.stop();
    first = undefined;
    assert.ok(oldPids.every(isAlive), "the old tasks outlive their minicluster (re-parented)");

    second = await startMinicluster(port, dataDir);
    // The scheduler re-subscribes and reconciles: the agent is back under its id, without the tasks.
    for (const spec of old) {
      const ended = await rec.waitStatus(
        (s) => s.taskId === spec.taskId && isTerminalMesosState(s.state as MesosTaskState),
        `${spec.taskId} reconciled as ended`,
        20_000,
      );
      assert.equal(ended.state, "TASK_GONE", JSON.stringify(ended));
    }
    const relaunched = [launch(host, 0, 2), launch(host, 1, 2)];
    backend.launch(relaunched);
    for (const spec of relaunched) await rec.waitState(spec.taskId, "TASK_RUNNING", 20_000);
    for (const pid of oldPids) assert.ok(!isAlive(pid), `old task process ${pid} still runs`);
    // One process per instance: the relaunched ones, and nothing left from before the crash.
    assert.deepEqual([...taskProcesses(dataDir).values()].sort(), relaunched.map((s) => s.taskId).sort());

    await backend.stop();
    backend = undefined;
    const status = await second.stop();
    second = undefined;
    assert.equal(status.code, 0);
    assert.deepEqual([...taskProcesses(dataDir).values()], [], "task processes outlive a clean stop");
  } finally {
    await backend?.stop();
    await first?.stop().catch(() => {});
    await second?.stop().catch(() => {});
    for (const pid of taskProcesses(dataDir).keys()) signalGroup(pid, "SIGKILL", true);
    await Deno.remove(dataDir, { recursive: true });
  }
});
