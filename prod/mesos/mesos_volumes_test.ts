/** The Mesos backend's persistent volumes on the emulator: RESERVE + CREATE + LAUNCH, relaunch on the volume, destroy. */
import assert from "node:assert/strict";
import type { LaunchSpec } from "../../core/ports/host_backend.ts";
import { eventually, makeSpec, withBackend } from "./_testing.ts";
import type { Operation, Resource } from "./protocol.ts";

type Accept = { type: string; accept: { offer_ids: unknown[]; operations: Operation[] } };

function accepts(calls: unknown[]): Accept[] {
  return calls.filter((c) => (c as { type: string }).type === "ACCEPT") as Accept[];
}

/** The ACCEPT that launched a task. */
function acceptOf(calls: unknown[], taskId: string): Accept {
  const a = accepts(calls).find((c) => JSON.stringify(c).includes(`"${taskId}"`));
  assert.ok(a, `no ACCEPT for ${taskId}`);
  return a;
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

function statefulSpec(
  host: { hostname: string; agentId: string },
  command: string,
  volumeId: string,
): LaunchSpec {
  // The core counts the volume's 16 MB in the task's disk, beside 10 MB of scratch.
  return makeSpec(host, command, {
    resources: { cpuMilli: 100, memMb: 32, diskMb: 26, gpuMilli: 0 },
    volume: { volumeId, containerPath: "data", sizeMb: 16 },
  });
}

Deno.test("MesosBackend volumes: RESERVE + CREATE + LAUNCH first, LAUNCH on the offered volume next, DESTROY + UNRESERVE", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const host = hosts[0];
    const volumeId = `vol-${crypto.randomUUID()}`;
    const dir = `${m.dataDir}/agents/${host.agentId}/volumes/${volumeId}`;

    const first = statefulSpec(host, "echo first > data/note", volumeId);
    backend.launch([first]);
    await rec.waitState(first.taskId, "TASK_FINISHED");
    const made = acceptOf(m.calls, first.taskId).accept.operations;
    assert.deepEqual(made.map((o) => o.type), ["RESERVE", "CREATE", "LAUNCH"]);
    const labels = { labels: [{ key: "peloton.volume_id", value: volumeId }] };
    const reserved = {
      role: "peloton",
      reservation: { principal: "peloton", labels },
      allocation_info: { role: "peloton" },
    };
    assert.deepEqual(made[0].reserve!.resources, [
      { name: "cpus", type: "SCALAR", scalar: { value: 0.1 }, ...reserved },
      { name: "mem", type: "SCALAR", scalar: { value: 32 }, ...reserved },
      { name: "disk", type: "SCALAR", scalar: { value: 16 }, ...reserved },
    ]);
    const volume: Resource = {
      name: "disk",
      type: "SCALAR",
      scalar: { value: 16 },
      ...reserved,
      disk: {
        persistence: { id: volumeId, principal: "peloton" },
        volume: { container_path: "data", mode: "RW" },
      },
    };
    assert.deepEqual(made[1].create!.volumes, [volume]);
    // The task runs on the reserved cpus and mem, the volume, and 10 MB of unreserved scratch disk.
    const task = made[2].launch!.task_infos[0].resources;
    assert.deepEqual(task.find((r) => r.disk), volume);
    assert.deepEqual(task.filter((r) => r.name === "disk" && !r.disk), [
      {
        name: "disk",
        type: "SCALAR",
        scalar: { value: 10 },
        role: "*",
        allocation_info: { role: "peloton" },
      },
    ]);
    assert.equal(task.filter((r) => r.reservation).length, 3);
    assert.equal(await Deno.readTextFile(`${dir}/note`), "first\n", "the volume lives under the agent");

    // The next run on the host: the offers carry the volume back, and the task uses it as it is.
    const second = statefulSpec(host, 'test "$(cat data/note)" = first', volumeId);
    backend.launch([second]);
    const ended = await rec.waitStatus(
      (s) => s.taskId === second.taskId && (s.state === "TASK_FINISHED" || s.state === "TASK_FAILED"),
      "the second run to end",
    );
    assert.equal(ended.state, "TASK_FINISHED", "the second run read what the first wrote");
    const relaunch = acceptOf(m.calls, second.taskId).accept.operations;
    assert.deepEqual(relaunch.map((o) => o.type), ["LAUNCH"]);
    assert.deepEqual(relaunch[0].launch!.task_infos[0].resources.find((r) => r.disk), volume);

    // A deleted volume: DESTROY, then UNRESERVE of every piece reserved for it, the volume's disk included.
    backend.destroyVolumes([{ volumeId, hostname: host.hostname, agentId: host.agentId }]);
    const destroyed = await eventually(
      "a DESTROY",
      () => accepts(m.calls).find((a) => a.accept.operations.some((o) => o.type === "DESTROY")),
    );
    assert.deepEqual(destroyed.accept.operations.map((o) => o.type), ["DESTROY", "UNRESERVE"]);
    assert.deepEqual(destroyed.accept.operations[0].destroy!.volumes, [volume]);
    const { disk: _disk, ...reservedDisk } = volume;
    assert.deepEqual(destroyed.accept.operations[1].unreserve!.resources, [
      { name: "cpus", type: "SCALAR", scalar: { value: 0.1 }, ...reserved },
      { name: "mem", type: "SCALAR", scalar: { value: 32 }, ...reserved },
      reservedDisk,
    ]);
    await eventually("the volume's directory removed", async () => !(await exists(dir)) || undefined);
    assert.deepEqual(m.master.core.allocator.dropped, [], "no operation was dropped");
    await eventually("the agent without reservations", () => {
      const total = m.master.core.agent(host.agentId)!.agent.total;
      return Object.keys(total.kinds ?? {}).every((k) => !k.includes("dynamic") || total.scalars[k] === 0) ||
        undefined;
    });
  }));

Deno.test("MesosBackend volumes: a destroy waits for an offer carrying the volume (none while its task runs)", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const host = hosts[0];
    const volumeId = `vol-${crypto.randomUUID()}`;
    const run = statefulSpec(host, "sleep 30", volumeId);
    backend.launch([run]);
    await rec.waitState(run.taskId, "TASK_RUNNING");
    // In use: no offer carries it, so the destroy waits.
    backend.destroyVolumes([{ volumeId, hostname: host.hostname, agentId: "" }]);
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!accepts(m.calls).some((a) => a.accept.operations.some((o) => o.type === "DESTROY")));
    assert.ok(await exists(`${m.dataDir}/agents/${host.agentId}/volumes/${volumeId}`));
    backend.kill([{ taskId: run.taskId, agentId: host.agentId, gracePeriodMs: 0 }]);
    await rec.waitState(run.taskId, "TASK_KILLED");
    await eventually(
      "the DESTROY once the volume is offered",
      () => accepts(m.calls).find((a) => a.accept.operations.some((o) => o.type === "DESTROY")),
    );
    await eventually(
      "the volume's directory removed",
      async () => !(await exists(`${m.dataDir}/agents/${host.agentId}/volumes/${volumeId}`)) || undefined,
    );
    assert.deepEqual(m.master.core.allocator.dropped, []);
  }));
