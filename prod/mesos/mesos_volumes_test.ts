/** The Mesos backend's persistent volumes on the emulator: RESERVE + CREATE + LAUNCH, relaunch on the volume, destroy. */
import assert from "node:assert/strict";
import { DEFAULT_HOSTMGR_CONFIG, HostManager } from "../../core/hostmgr/hostmgr.ts";
import type { BackendEvent, LaunchSpec } from "../../core/ports/host_backend.ts";
import { makePorts } from "../../core/testing/harness.ts";
import { eventually, makeSpec, newBackend, Recorder, startTestMaster, withBackend } from "./_testing.ts";
import { MemoryFrameworkIdStore } from "./scheduler_client.ts";
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

Deno.test("MesosBackend volumes: a machine back from maintenance under a new agent id keeps its volume and data", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const host = hosts[0];
    const volumeId = `vol-${crypto.randomUUID()}`;
    const first = statefulSpec(host, "echo first > data/note", volumeId);
    backend.launch([first]);
    await rec.waitState(first.taskId, "TASK_FINISHED");

    // Maintenance: the machine goes DOWN (its agent is removed) and comes back UP under a new agent id.
    const machine = { hostname: host.hostname, ip: "127.0.0.1" };
    const core = m.master.core;
    const start = { nanoseconds: Date.now() * 1e6 };
    assert.equal(
      core.maintenance.updateSchedule({ windows: [{ machine_ids: [machine], unavailability: { start } }] }),
      undefined,
    );
    assert.equal(core.maintenance.startMaintenance([machine]), undefined);
    await rec.waitFor((e) => e.kind === "host-lost" && e.hostname === host.hostname, "host-lost");
    assert.equal(core.maintenance.stopMaintenance([machine]), undefined);
    const back = await rec.waitFor(
      (e) => e.kind === "host-up" && e.host.hostname === host.hostname && e.host.agentId !== host.agentId,
      "the host up under a new agent id",
    );
    const newAgent = back.kind === "host-up" ? back.host.agentId : "";

    // The agent recovered the machine's checkpointed reservations and volume: it is offered, and used as is.
    const second = statefulSpec(
      { hostname: host.hostname, agentId: newAgent },
      'test "$(cat data/note)" = first',
      volumeId,
    );
    backend.launch([second]);
    const ended = await rec.waitStatus(
      (s) =>
        s.taskId === second.taskId && (s.state === "TASK_FINISHED" || s.state === "TASK_FAILED" ||
          s.state === "TASK_DROPPED" || s.state === "TASK_ERROR"),
      "the second run to end",
    );
    assert.equal(
      ended.state,
      "TASK_FINISHED",
      `the run after maintenance read what the first wrote: ${ended.message}`,
    );
    assert.deepEqual(acceptOf(m.calls, second.taskId).accept.operations.map((o) => o.type), ["LAUNCH"]);
    assert.ok(
      !accepts(m.calls).some((a) =>
        a.accept.operations.filter((o) => o.type === "CREATE").length > 0 &&
        a !== acceptOf(m.calls, first.taskId)
      ),
      "the volume was never CREATEd again",
    );
    assert.deepEqual(core.allocator.dropped, [], "no operation was dropped");
  }));

Deno.test("MesosBackend volumes: a persistence id known on one host is never CREATEd on another", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const volumeId = `vol-${crypto.randomUUID()}`;
    const first = statefulSpec(hosts[0], "echo first > data/note", volumeId);
    backend.launch([first]);
    await rec.waitState(first.taskId, "TASK_FINISHED");
    // The same volume asked for on the other host: it is not there, and making it would give one id two volumes.
    const elsewhere = statefulSpec(hosts[1], "true", volumeId);
    backend.launch([elsewhere]);
    const dropped = await rec.waitState(elsewhere.taskId, "TASK_DROPPED");
    assert.equal(dropped.reason, "REASON_INVALID_OFFERS");
    assert.ok(!JSON.stringify(accepts(m.calls)).includes(`"${elsewhere.taskId}"`), "no ACCEPT launched it");
    const creates = accepts(m.calls).filter((a) => a.accept.operations.some((o) => o.type === "CREATE"));
    assert.equal(creates.length, 1, "the volume was made once");
  }, { backend: { launchTimeoutMs: 500 } }));

Deno.test("MesosBackend volumes: after a restart, a volume it did not make is reported found, and destroyed when asked", () =>
  withBackend(async ({ m, backend, rec, hosts, store }) => {
    const host = hosts[0];
    const volumeId = `vol-${crypto.randomUUID()}`;
    const first = statefulSpec(host, "true", volumeId);
    backend.launch([first]);
    await rec.waitState(first.taskId, "TASK_FINISHED");
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(!rec.events.some((e) => e.kind === "volumes-found"), "a volume it made is not reported");
    // The scheduler restarts before a delete's DESTROY went out: that destroy lived in memory only.
    await backend.stop();
    const again = new Recorder();
    const next = newBackend(m, store);
    again.onStatus = (s) =>
      s.uuid && next.acknowledge([{ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid }]);
    next.start(again.sink);
    try {
      const found = await again.waitFor(
        (e) => e.kind === "volumes-found" && e.volumeIds.includes(volumeId),
        "the volume reported found",
      );
      assert.deepEqual(found, {
        kind: "volumes-found",
        hostname: host.hostname,
        agentId: host.agentId,
        volumeIds: [volumeId],
      });
      next.destroyVolumes([{ volumeId, hostname: host.hostname, agentId: host.agentId }]);
      const destroyed = await eventually(
        "a DESTROY",
        () => accepts(m.calls).find((a) => a.accept.operations.some((o) => o.type === "DESTROY")),
      );
      assert.deepEqual(destroyed.accept.operations.map((o) => o.type), ["DESTROY", "UNRESERVE"]);
      await eventually(
        "the volume's directory removed",
        async () => !(await exists(`${m.dataDir}/agents/${host.agentId}/volumes/${volumeId}`)) || undefined,
      );
    } finally {
      await next.stop();
    }
  }));

Deno.test("MesosBackend volumes: an idle volume's reservation is reported, and the host manager keeps it for its task", async () => {
  // agent-0 has 2 cpus: the stopped volume's task holds 1 of them reserved (RESERVE took it from unreserved).
  const m = await startTestMaster({ agents: [{ cpus: 2, memMb: 512, diskMb: 100 }, {}] });
  const backend = newBackend(m, new MemoryFrameworkIdStore());
  const ports = makePorts();
  const hm = new HostManager(
    { ...ports, backend, self: "hostmgr", jobmgr: "jobmgr", resmgr: "resmgr" },
    { ...DEFAULT_HOSTMGR_CONFIG },
  );
  const rec = new Recorder();
  const sink = (events: BackendEvent[]) => {
    rec.sink(events);
    hm.onBackendEvents(events);
    for (const e of events) {
      const s = e.kind === "task-status" ? e.status : undefined;
      if (s?.uuid) backend.acknowledge([{ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid }]);
    }
  };
  try {
    backend.start(sink);
    await eventually("agent-0", () => hm.host("agent-0"));
    const host = hm.host("agent-0")!.info;
    const volumeId = `job-0-volume-${crypto.randomUUID()}`;
    const first = makeSpec(host, "true", {
      jobId: "job",
      instanceId: 0,
      resources: { cpuMilli: 1000, memMb: 128, diskMb: 26, gpuMilli: 0 },
      volume: { volumeId, containerPath: "data", sizeMb: 16 },
    });
    backend.launch([first]);
    await rec.waitState(first.taskId, "TASK_FINISHED");
    const reported = await rec.waitFor(
      (e) => e.kind === "volume-reservations" && e.volumes.length > 0,
      "the volume's reservation",
    );
    assert.deepEqual(reported, {
      kind: "volume-reservations",
      hostname: "agent-0",
      volumes: [{ volumeId, resources: { cpuMilli: 1000, memMb: 128, diskMb: 16, gpuMilli: 0 } }],
    });
    // Other work sees the reservation as taken; the volume's own task gets it back.
    const pinned = { requiredHost: "agent-0", numPorts: 0, maxHosts: 1, gpu: false };
    const other = hm.acquire([{
      ...pinned,
      minResources: { cpuMilli: 1500, memMb: 64, diskMb: 0, gpuMilli: 0 },
    }]);
    assert.equal(other.leases.length, 0, "1 cpu is free to others");
    const own = hm.acquire([{
      ...pinned,
      volumeOwners: ["job-0"],
      minResources: { cpuMilli: 2000, memMb: 128, diskMb: 26, gpuMilli: 0 },
    }]);
    assert.equal(own.leases.length, 1);
    assert.equal(own.leases[0].free.cpuMilli, 2000);
    // The second run launches on its volume through the host manager's lease.
    const second = {
      ...first,
      taskId: `job-0-${crypto.randomUUID()}`,
      command: { ...first.command, value: "true" },
    };
    hm.receive({
      kind: "launch-tasks",
      leaseId: own.leases[0].leaseId,
      hostname: "agent-0",
      tasks: [second],
    });
    await rec.waitState(second.taskId, "TASK_FINISHED");
    assert.deepEqual(acceptOf(m.calls, second.taskId).accept.operations.map((o) => o.type), ["LAUNCH"]);
    // A new backend (a new leader's) reports it from the master's agent list.
    await backend.stop();
    const next = newBackend(m, new MemoryFrameworkIdStore());
    const again = new Recorder();
    next.start(again.sink);
    try {
      const found = await again.waitFor(
        (e) => e.kind === "volume-reservations" && e.volumes.some((v) => v.volumeId === volumeId),
        "the reservation reported to the next backend",
      );
      assert.deepEqual(found.kind === "volume-reservations" && found.volumes[0].resources, {
        cpuMilli: 1000,
        memMb: 128,
        diskMb: 16,
        gpuMilli: 0,
      });
    } finally {
      await next.stop();
    }
  } finally {
    await backend.stop();
    await m.stop();
  }
});
