/** MesosBackend end to end on the emulator (verified against an emulator of the documented protocol). */
import assert from "node:assert/strict";
import type { HostInfo, LaunchSpec } from "../../core/ports/host_backend.ts";
import {
  eventually,
  frameworkInfo,
  makeSpec,
  newBackend,
  RawSubscription,
  Recorder,
  startTestMaster,
  withBackend,
} from "./_testing.ts";
import type { TaskInfo } from "./protocol.ts";
import { MemoryFrameworkIdStore } from "./scheduler_client.ts";
import { MesosBackend } from "./mesos_backend.ts";
import { orWithin } from "../settle.ts";

Deno.test("MesosBackend: hosts from GET_AGENTS; an echo task goes STAGING→STARTING→RUNNING→FINISHED with acks", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const h = hosts.find((x) => x.hostname === "agent-0")!;
    assert.deepEqual(h.resources, { cpuMilli: 4000, memMb: 8192, diskMb: 20480, gpuMilli: 0 });
    assert.deepEqual(h.portRanges, [[31000, 31999]]);
    assert.equal(h.attributes.rack, "tdc1-t0001");
    assert.equal(h.ip, "127.0.0.1", "from the agent's PID");
    const spec = makeSpec(h, "echo hello $PELOTON_JOB_ID", { ports: { http: 31005 } });
    backend.launch([spec]);
    const done = await rec.waitState(spec.taskId, "TASK_FINISHED");
    assert.deepEqual(rec.states(spec.taskId), [
      "TASK_STAGING",
      "TASK_STARTING",
      "TASK_RUNNING",
      "TASK_FINISHED",
    ]);
    assert.equal(done.exitCode, 0);
    assert.equal(done.hostname, "agent-0");
    assert.ok(done.uuid);
    // One ACKNOWLEDGE per update that carried a uuid, each echoing it.
    const acks = await eventually("three acks", () => {
      const a = m.calls.filter((c) => (c as { type: string }).type === "ACKNOWLEDGE");
      return a.length >= 3 ? a : undefined;
    });
    const uuids = rec.statuses(spec.taskId).flatMap((s) => s.uuid ? [s.uuid] : []);
    assert.deepEqual(acks.map((a) => (a as { acknowledge: { uuid: string } }).acknowledge.uuid), uuids);
    assert.equal(await backend.logs(spec.taskId, "stdout"), `hello ${spec.jobId}\n`);
    const accept = m.calls.find((c) => (c as { type: string }).type === "ACCEPT") as {
      accept: {
        operations: { launch: { task_infos: { resources: { name: string; ranges?: unknown }[] }[] } }[];
      };
    };
    const ports = accept.accept.operations[0].launch.task_infos[0].resources.find((r) => r.name === "ports");
    assert.deepEqual(ports?.ranges, { range: [{ begin: 31005, end: 31005 }] });
  }));

Deno.test("MesosBackend: nothing is acknowledged before the host manager says so, and the stream waits", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const spec = makeSpec(hosts[0], "echo quick");
    backend.launch([spec]);
    const starting = await rec.waitState(spec.taskId, "TASK_STARTING");
    await new Promise((r) => setTimeout(r, 400));
    assert.ok(!rec.states(spec.taskId).includes("TASK_RUNNING"), "the agent holds later updates");
    assert.ok(
      rec.statuses(spec.taskId).filter((s) => s.state === "TASK_STARTING").length >= 2,
      "and resends the head",
    );
    assert.ok(!m.calls.some((c) => (c as { type: string }).type === "ACKNOWLEDGE"));
    backend.acknowledge([{ taskId: spec.taskId, agentId: starting.agentId, uuid: starting.uuid! }]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
  }, { autoAck: false }));

Deno.test("MesosBackend: a burst of acknowledgements goes out a few calls at a time, in order", () =>
  withBackend(async ({ backend }) => {
    // The client's calls are held open here, so that what is in flight can be counted.
    const calls: { uuid: string; done: () => void }[] = [];
    let inFlight = 0, most = 0;
    backend.client.acknowledge = (_agentId, _taskId, uuid) =>
      new Promise<void>((resolve) => {
        inFlight++;
        most = Math.max(most, inFlight);
        calls.push({ uuid, done: () => (inFlight--, resolve()) });
      });
    const acks = Array.from({ length: 10 }, (_, i) => ({ taskId: `t-${i}`, agentId: "a", uuid: `u-${i}` }));
    backend.acknowledge(acks.slice(0, 6));
    backend.acknowledge(acks.slice(6));
    assert.equal(calls.length, 3, "sent at once");
    for (let i = 0; i < calls.length; i++) {
      await new Promise((r) => setTimeout(r, 0));
      calls[i].done();
    }
    await eventually(
      "every acknowledgement answered",
      () => inFlight === 0 && calls.length === 10 || undefined,
    );
    assert.equal(most, 3, "most calls in flight at once");
    assert.deepEqual(calls.map((c) => c.uuid), acks.map((a) => a.uuid), "in the order given");
  }, { backend: { maxAcksInFlight: 3 } }));

Deno.test("MesosBackend: kill with a grace period (TASK_KILLING, SIGKILL after the grace)", () =>
  withBackend(async ({ backend, rec, hosts }) => {
    const spec = makeSpec(hosts[0], "trap '' TERM; echo ready; sleep 30");
    backend.launch([spec]);
    const running = await rec.waitState(spec.taskId, "TASK_RUNNING");
    // RUNNING comes when the process starts; on a busy machine the shell may not have set its trap yet.
    await eventually(
      "the trap set",
      async () => (await backend.logs(spec.taskId, "stdout")) ? true : undefined,
    );
    const started = Date.now();
    backend.kill([{ taskId: spec.taskId, agentId: running.agentId, gracePeriodMs: 300 }]);
    await rec.waitState(spec.taskId, "TASK_KILLING");
    await rec.waitState(spec.taskId, "TASK_KILLED");
    assert.ok(Date.now() - started >= 250, `killed after ${Date.now() - started} ms`);
  }));

Deno.test("MesosBackend: after a stream drop it re-subscribes with its id and reconciles its tasks", () =>
  withBackend(async ({ m, backend, rec, hosts, store }) => {
    const spec = makeSpec(hosts[0], "sleep 30");
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    const id = store.id;
    const stream = backend.client.streamId;
    m.master.dropStreams();
    const reconciled = await rec.waitFor(
      (e) =>
        e.kind === "task-status" && e.status.taskId === spec.taskId &&
        e.status.reason === "REASON_RECONCILIATION",
      "a reconciliation answer",
    );
    assert.equal(reconciled.kind === "task-status" && reconciled.status.state, "TASK_RUNNING");
    assert.equal(reconciled.kind === "task-status" && reconciled.status.uuid, undefined);
    assert.equal(backend.client.frameworkId, id);
    assert.notEqual(backend.client.streamId, stream);
    const reconcile = m.calls.find((c) => (c as { type: string }).type === "RECONCILE") as {
      reconcile: { tasks: { task_id: { value: string }; agent_id: { value: string } }[] };
    };
    assert.deepEqual(reconcile.reconcile.tasks, [{
      task_id: { value: spec.taskId },
      agent_id: { value: hosts[0].agentId },
    }]);
    // Heartbeat loss is handled the same way: a new SUBSCRIBE, then a reconciliation again.
    const subscribes = () => m.calls.filter((c) => (c as { type: string }).type === "SUBSCRIBE").length;
    const before = subscribes(), reconciles = rec.statuses(spec.taskId).length;
    m.master.setHeartbeats(false);
    await eventually("a re-subscription", () => subscribes() > before ? true : undefined);
    m.master.setHeartbeats(true);
    await eventually(
      "another reconciliation",
      () => rec.statuses(spec.taskId).length > reconciles ? true : undefined,
    );
    backend.kill([{ taskId: spec.taskId, agentId: hosts[0].agentId, gracePeriodMs: 0 }]);
    await rec.waitState(spec.taskId, "TASK_KILLED");
  }));

Deno.test("MesosBackend: survives re-chunked stream bytes and a rescind during an ACCEPT", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const h = hosts.find((x) => x.hostname === "agent-0")!;
    assert.equal(h.attributes.zone, "zürich-日本-🚀");
    m.master.rescindDuringNextAccept();
    const first = makeSpec(h, "echo one");
    backend.launch([first]);
    const dropped = await rec.waitState(first.taskId, "TASK_DROPPED");
    assert.equal(dropped.reason, "REASON_INVALID_OFFERS");
    assert.equal(dropped.uuid, undefined);
    const second = makeSpec(h, "echo two");
    backend.launch([second]);
    await rec.waitState(second.taskId, "TASK_FINISHED");
  }, { master: { agents: [{ attributes: { zone: "zürich-日本-🚀" } }, {}], rechunkSeed: 11 } }));

Deno.test("MesosBackend: a launch no offer covers waits, then is TASK_DROPPED; a waiting task can be killed", () =>
  withBackend(async ({ backend, rec, hosts }) => {
    const huge = makeSpec(hosts[0], "true", {
      resources: { cpuMilli: 64_000, memMb: 32, diskMb: 0, gpuMilli: 0 },
    });
    const other = makeSpec(hosts[0], "true", {
      resources: { cpuMilli: 64_000, memMb: 32, diskMb: 0, gpuMilli: 0 },
    });
    const started = Date.now();
    backend.launch([huge, other]);
    backend.kill([{ taskId: other.taskId, agentId: other.agentId, gracePeriodMs: 0 }]);
    assert.equal(
      (await rec.waitState(other.taskId, "TASK_KILLED")).reason,
      "REASON_TASK_KILLED_DURING_LAUNCH",
    );
    const dropped = await rec.waitState(huge.taskId, "TASK_DROPPED");
    assert.equal(dropped.reason, "REASON_INVALID_OFFERS");
    assert.ok(Date.now() - started >= 250);
  }, { backend: { launchTimeoutMs: 300 } }));

Deno.test("MesosBackend: a launch waiting for an agent the host replaced under a new id is dropped at once", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    // More than the agent offers: it waits for offers of the agent its spec names.
    const waiting = makeSpec(hosts[0], "true", {
      resources: { cpuMilli: 64_000, memMb: 32, diskMb: 0, gpuMilli: 0 },
    });
    backend.launch([waiting]);
    // A rebooted machine's agent registers under a new id before the master has removed the old one (its
    // health checks take a while): no FAILURE has dropped the launch.
    const newId = m.master.addAgent({ hostname: hosts[0].hostname });
    assert.notEqual(newId, hosts[0].agentId);
    // Not after the 60 s launch timeout: as soon as the host is up under its new agent.
    const dropped = await rec.waitState(waiting.taskId, "TASK_DROPPED");
    assert.equal(dropped.reason, "REASON_INVALID_OFFERS");
    assert.match(dropped.message ?? "", new RegExp(`registered again as ${newId}`));
  }, { backend: { launchTimeoutMs: 60_000 } }));

Deno.test("MesosBackend: agent loss is host-lost; maintenance inverse offers reach the callback", async () => {
  const seen: unknown[] = [];
  await withBackend(async ({ m, backend, rec, hosts }) => {
    const spec = makeSpec(hosts[0], "sleep 30");
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    const schedule = {
      windows: [{
        machine_ids: [{ hostname: hosts[0].hostname, ip: "127.0.0.1" }],
        unavailability: { start: { nanoseconds: 1.9e18 } },
      }],
    };
    assert.equal(m.master.core.maintenance.updateSchedule(schedule), undefined);
    await eventually("inverse offers", () => seen.length ? true : undefined);
    assert.deepEqual(seen[0], {
      kind: "inverse-offers",
      offers: [{
        id: backend.inverseOffers()[0].id.value,
        agentId: hosts[0].agentId,
        hostname: hosts[0].hostname,
        startMs: 1.9e12,
        durationMs: undefined,
      }],
    });
    await backend.acceptInverseOffers([backend.inverseOffers()[0].id.value]);
    m.master.loseAgent(hosts[0].agentId);
    const lost = await rec.waitFor((e) => e.kind === "host-lost", "host-lost");
    assert.deepEqual(lost, {
      kind: "host-lost",
      hostname: hosts[0].hostname,
      agentId: hosts[0].agentId,
      reason: "agent removed (FAILURE)",
    });
    await rec.waitState(spec.taskId, "TASK_UNREACHABLE");
  }, { backend: { onMaintenance: (e) => seen.push(e) } });
});

Deno.test("MesosBackend: without the operator API a host's total is its offers plus our tasks there", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    assert.deepEqual(hosts.map((h) => h.resources.cpuMilli), [4000, 4000]);
    const h = hosts[0];
    const spec = makeSpec(h, "sleep 30", {
      resources: { cpuMilli: 1500, memMb: 100, diskMb: 0, gpuMilli: 0 },
      ports: { p: 31002 },
    });
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    // A partition: the host is lost, then comes back with the task still running on it.
    m.master.loseAgent(h.agentId, { partition: true });
    await rec.waitFor((e) => e.kind === "host-lost", "host-lost");
    await rec.waitState(spec.taskId, "TASK_UNREACHABLE");
    const ups = rec.events.filter((e) => e.kind === "host-up").length;
    m.master.healAgent(h.agentId);
    const back = await eventually("host-up again", () => {
      const all = rec.events.flatMap((e) => e.kind === "host-up" ? [e.host] : []);
      return all.length > ups ? all.at(-1) : undefined;
    });
    assert.deepEqual(back.resources, h.resources, "offered remainder + the running task = the whole agent");
    assert.deepEqual(back.portRanges, [[31000, 31999]]);
    backend.reconcile([spec.taskId]);
    await rec.waitFor(
      (e) =>
        e.kind === "task-status" && e.status.taskId === spec.taskId && e.status.state === "TASK_RUNNING" &&
        e.status.reason === "REASON_RECONCILIATION",
      "the task running again",
    );
  }, { backend: { useOperatorApi: false } }));

Deno.test("MesosBackend: stop leaves tasks running; the next backend with the stored id reconciles them", async () => {
  const m = await startTestMaster();
  const store = new MemoryFrameworkIdStore();
  const rec1 = new Recorder(), rec2 = new Recorder();
  const first = newBackend(m, store);
  rec1.onStatus = (s) =>
    s.uuid && first.acknowledge([{ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid }]);
  const second = newBackend(m, store);
  rec2.onStatus = (s) =>
    s.uuid && second.acknowledge([{ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid }]);
  try {
    first.start(rec1.sink);
    const host = (await rec1.waitFor((e) => e.kind === "host-up", "a host")) as { host: HostInfo };
    const spec = makeSpec(host.host, "sleep 30");
    first.launch([spec]);
    await rec1.waitState(spec.taskId, "TASK_RUNNING");
    await first.stop();
    assert.ok(!m.calls.some((c) => (c as { type: string }).type === "TEARDOWN"));
    second.start(rec2.sink);
    second.reconcile([spec.taskId, "never-launched-0-1"]);
    const s = await rec2.waitFor(
      (e) => e.kind === "task-status" && e.status.taskId === spec.taskId,
      "the recovered task",
    );
    assert.equal(s.kind === "task-status" && s.status.state, "TASK_RUNNING");
    assert.equal(second.client.frameworkId, store.id);
    const unknown = await rec2.waitFor(
      (e) => e.kind === "task-status" && e.status.taskId === "never-launched-0-1",
      "unknown",
    );
    assert.equal(unknown.kind === "task-status" && unknown.status.state, "TASK_UNKNOWN");
  } finally {
    await first.stop();
    await second.stop();
    await m.stop();
  }
});

Deno.test("MesosBackend: health checks travel as Mesos HealthCheck; results come back as healthy updates", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const check = { initialIntervalSecs: 0, intervalSecs: 0.05, timeoutSecs: 1, maxConsecutiveFailures: 2 };
    const good = makeSpec(hosts[0], "sleep 30", {
      env: { GREETING: "hi" },
      healthCheck: { type: "COMMAND", command: 'test "$GREETING" = hi', ...check },
    });
    const bad = makeSpec(hosts[1], "sleep 30", {
      healthCheck: { type: "COMMAND", command: "exit 1", ...check },
    });
    backend.launch([good, bad]);
    const healthy = await rec.waitFor(
      (e) => e.kind === "task-status" && e.status.taskId === good.taskId && e.status.healthy === true,
      "a healthy update",
    );
    assert.equal(
      healthy.kind === "task-status" && healthy.status.reason,
      "REASON_TASK_HEALTH_CHECK_STATUS_UPDATED",
    );
    const killed = await rec.waitState(bad.taskId, "TASK_KILLED");
    assert.equal(killed.healthy, false);
    assert.equal(killed.reason, "REASON_TASK_HEALTH_CHECK_STATUS_UPDATED");
    const accept = m.calls.find((c) => JSON.stringify(c).includes(good.taskId)) as {
      accept: { operations: { launch: { task_infos: TaskInfo[] } }[] };
    };
    const info = accept.accept.operations[0].launch.task_infos[0];
    // Peloton's `populateHealthCheck`: the check carries the task's environment (its own, ports, PELOTON_*).
    assert.deepEqual(info.health_check, {
      type: "COMMAND",
      delay_seconds: 0,
      interval_seconds: 0.05,
      timeout_seconds: 1,
      consecutive_failures: 2,
      grace_period_seconds: 0,
      command: { shell: true, value: 'test "$GREETING" = hi', environment: info.command!.environment },
    });
    assert.deepEqual(info.command!.environment!.variables.map((v) => v.name), [
      "GREETING",
      "PELOTON_JOB_ID",
      "PELOTON_INSTANCE_ID",
      "PELOTON_TASK_ID",
    ]);
  }));

Deno.test("MesosBackend: revocable cpus are reported as host-slack and revocable tasks run on them", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const h = hosts.find((x) => x.hostname === "agent-0")!;
    assert.equal(h.resources.cpuMilli, 4000, "revocable cpus are not capacity");
    const slack = await rec.waitFor((e) => e.kind === "host-slack", "host-slack");
    assert.deepEqual(slack, {
      kind: "host-slack",
      hostname: "agent-0",
      slack: { cpuMilli: 2000, memMb: 0, diskMb: 0, gpuMilli: 0 },
    });
    const spec = makeSpec(h, "echo revocable", {
      revocable: true,
      resources: { cpuMilli: 1500, memMb: 32, diskMb: 0, gpuMilli: 0 },
    });
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    const accept = m.calls.find((c) => JSON.stringify(c).includes(spec.taskId)) as {
      accept: {
        operations: { launch: { task_infos: { resources: { name: string; revocable?: unknown }[] }[] } }[];
      };
    };
    const cpus = accept.accept.operations[0].launch.task_infos[0].resources.find((r) => r.name === "cpus");
    assert.deepEqual(cpus?.revocable, {});
  }, { master: { agents: [{ revocableCpus: 2 }, {}] } }));

Deno.test("MesosBackend: held offers are DECLINEd with a filter after the hold time; implicit RECONCILE repeats", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const declines = () =>
      m.calls.filter((c) => (c as { type: string }).type === "DECLINE") as {
        decline: { offer_ids: { value: string }[]; filters?: { refuse_seconds?: number } };
      }[];
    const first = await eventually("a DECLINE", () => declines()[0]);
    assert.equal(first.decline.filters?.refuse_seconds, 0.5);
    assert.ok(first.decline.offer_ids.length >= 1);
    const held = [...backend.heldOffers().values()].flat();
    for (const id of first.decline.offer_ids) assert.ok(!held.includes(id.value), `${id.value} still held`);
    // The master offers the resources again once the filter lapses; the launch uses them.
    const spec = makeSpec(hosts[0], "echo again");
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    assert.equal(await backend.logs(spec.taskId, "stdout"), "again\n");
    // Implicit reconciliation (no task list) goes out again and again, not only on subscription.
    const implicit = () =>
      m.calls.filter((c) =>
        (c as { type: string }).type === "RECONCILE" &&
        !(c as { reconcile: { tasks?: unknown[] } }).reconcile.tasks?.length
      ).length;
    await eventually("two implicit RECONCILEs", () => implicit() >= 2 ? true : undefined);
  }, { backend: { offerHoldMs: 100, declineRefuseSeconds: 0.5, implicitReconcileIntervalMs: 150 } }));

Deno.test("an operator call to a master that stopped answering fails after httpTimeoutMs, not when TCP notices", async () => {
  const hung = Promise.withResolvers<Response>();
  const master = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => hung.promise);
  const backend = new MesosBackend({ masterUrl: `http://127.0.0.1:${master.addr.port}`, httpTimeoutMs: 200 });
  try {
    const outcome = await orWithin(
      backend.operator({ type: "GET_MAINTENANCE_STATUS" }).then(() => "answered", (e) => `failed: ${e.name}`),
      20_000,
      "still waiting",
    );
    assert.equal(outcome, "failed: TimeoutError");
  } finally {
    hung.resolve(new Response("late"));
    await master.shutdown();
  }
});

/** Peloton's minicluster agents (`tools/minicluster`): part of each resource reserved for the role. */
const MINICLUSTER_AGENT =
  "cpus(peloton):0.5;cpus(*):3.5;mem(peloton):1024;mem(*):1024;disk(*):20000;ports(peloton):[31000-32000]";

Deno.test("MesosBackend: reserved resources are capacity, and a task takes them as offered (role, allocation)", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const h = hosts.find((x) => x.hostname === "agent-0")!;
    assert.deepEqual(h.resources, { cpuMilli: 4000, memMb: 2048, diskMb: 20000, gpuMilli: 0 });
    assert.deepEqual(h.portRanges, [[31000, 32000]]);
    // More cpus and memory than are unreserved, and a port only the reservation holds.
    const spec = makeSpec(h, "echo reserved", {
      resources: { cpuMilli: 3800, memMb: 1500, diskMb: 10, gpuMilli: 0 },
      ports: { http: 31005 },
    });
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_FINISHED");
    const accept = m.calls.find((c) => JSON.stringify(c).includes(spec.taskId)) as {
      accept: { operations: { launch: { task_infos: TaskInfo[] } }[] };
    };
    const allocation_info = { role: "peloton" };
    assert.deepEqual(accept.accept.operations[0].launch.task_infos[0].resources, [
      { name: "cpus", type: "SCALAR", scalar: { value: 3.3 }, role: "*", allocation_info },
      { name: "cpus", type: "SCALAR", scalar: { value: 0.5 }, role: "peloton", allocation_info },
      { name: "mem", type: "SCALAR", scalar: { value: 476 }, role: "*", allocation_info },
      { name: "mem", type: "SCALAR", scalar: { value: 1024 }, role: "peloton", allocation_info },
      { name: "disk", type: "SCALAR", scalar: { value: 10 }, role: "*", allocation_info },
      {
        name: "ports",
        type: "RANGES",
        ranges: { range: [{ begin: 31005, end: 31005 }] },
        role: "peloton",
        allocation_info,
      },
    ]);
  }, {
    master: {
      agents: [
        { resources: MINICLUSTER_AGENT },
        { resources: MINICLUSTER_AGENT.replace("[31000-32000]", "[32001-33000]") },
      ],
    },
  }));

Deno.test("MesosBackend: an ACCEPT the master refuses gives its offers back; a task refused alone fails", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const h = hosts[0];
    // Secret data that is not base64 in a volume of the task's own container (Peloton passes a Mesos
    // ContainerInfo through as given): the master cannot convert the call and refuses it whole (400).
    const bad = makeSpec(h, "true", {
      container: {
        type: "MESOS",
        volumes: [{
          containerPath: "/etc/key",
          mode: "RO",
          source: { type: "SECRET", secret: { type: "VALUE", value: { data: "not base64!" } } },
        }],
      } as unknown as LaunchSpec["container"],
    });
    const good = makeSpec(h, "echo good");
    backend.launch([bad, good]);
    const failed = await rec.waitState(bad.taskId, "TASK_ERROR");
    assert.equal(failed.reason, "REASON_TASK_INVALID");
    assert.match(failed.message ?? "", /HTTP 400 .*is not valid base64/);
    await rec.waitState(good.taskId, "TASK_FINISHED");
    const accepts = m.calls.filter((c) => (c as { type: string }).type === "ACCEPT") as {
      accept: { offer_ids: { value: string }[]; operations: { launch: { task_infos: TaskInfo[] } }[] };
    }[];
    const tasks = (a: (typeof accepts)[number]) =>
      a.accept.operations[0].launch.task_infos.map((t) => t.task_id.value);
    // Both in one refused ACCEPT, then each in its own.
    assert.deepEqual(accepts.map(tasks), [[bad.taskId, good.taskId], [bad.taskId], [good.taskId]]);
    // The refused calls' offers were declined at once (not held until the re-subscription).
    const declined = m.calls.filter((c) => (c as { type: string }).type === "DECLINE") as {
      decline: { offer_ids: { value: string }[]; filters?: { refuse_seconds?: number } };
    }[];
    for (const refused of accepts.slice(0, 2)) {
      assert.ok(
        declined.some((d) =>
          JSON.stringify(d.decline.offer_ids) === JSON.stringify(refused.accept.offer_ids) &&
          d.decline.filters?.refuse_seconds === 0
        ),
        `offers of a refused ACCEPT declined: ${JSON.stringify(refused.accept.offer_ids)}`,
      );
    }
  }));

Deno.test("MesosBackend: inverse offers are forgotten when the subscription ends", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const spec = makeSpec(hosts[0], "sleep 30");
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    const schedule = {
      windows: [{
        machine_ids: [{ hostname: hosts[0].hostname, ip: "127.0.0.1" }],
        unavailability: { start: { nanoseconds: 1.9e18 } },
      }],
    };
    assert.equal(m.master.core.maintenance.updateSchedule(schedule), undefined);
    const first = await eventually("an inverse offer", () => backend.inverseOffers()[0]?.id.value);
    const subscribes = () => m.calls.filter((c) => (c as { type: string }).type === "SUBSCRIBE").length;
    const before = subscribes();
    m.master.dropStreams();
    await eventually("a re-subscription", () => subscribes() > before || undefined);
    // The master discarded it: only the one it sends to the new subscription is outstanding.
    const again = await eventually(
      "a new inverse offer",
      () => backend.inverseOffers().find((io) => io.id.value !== first),
    );
    assert.deepEqual(backend.inverseOffers().map((io) => io.id.value), [again.id.value]);
    assert.deepEqual(backend.inverseOffersOn(hosts[0].hostname), [again.id.value]);
    backend.kill([{ taskId: spec.taskId, agentId: hosts[0].agentId, gracePeriodMs: 0 }]);
    await rec.waitState(spec.taskId, "TASK_KILLED");
  }));

Deno.test("MesosBackend: a framework the master removed (TEARDOWN) reports its tasks gone and subscribes anew", () =>
  withBackend(async ({ m, backend, rec, hosts, store }) => {
    const spec = makeSpec(hosts[0], "sleep 30");
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    const old = store.id!;
    await backend.client.teardown();
    const gone = await rec.waitState(spec.taskId, "TASK_GONE");
    assert.equal(gone.reason, "REASON_FRAMEWORK_REMOVED");
    assert.match(gone.message ?? "", new RegExp(`removed framework ${old}`));
    assert.equal(gone.hostname, hosts[0].hostname);
    assert.equal(gone.uuid, undefined);
    await eventually(
      "a new framework",
      () => backend.client.subscribed && backend.client.frameworkId !== old,
    );
    assert.equal(store.id, backend.client.frameworkId, "the removed id forgotten, the new one stored");
    assert.equal(m.master.core.framework(old), undefined, "the old framework is gone at the master");
    assert.equal(backend.fatalError(), undefined);
    // The hosts stay, and take work again under the new framework.
    assert.ok(!rec.events.some((e) => e.kind === "host-lost"));
    const next = makeSpec(hosts[0], "echo again");
    backend.launch([next]);
    await rec.waitState(next.taskId, "TASK_FINISHED");
  }));

Deno.test("MesosBackend: a framework removed by its failover timeout while away heals the same way", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const spec = makeSpec(hosts[0], "sleep 30");
    backend.launch([spec]);
    await rec.waitState(spec.taskId, "TASK_RUNNING");
    const old = backend.client.frameworkId;
    // The master restarts and recovers for longer than the framework's failover timeout.
    m.master.restart({ keepState: true, recoveryMs: 600 });
    const gone = await rec.waitState(spec.taskId, "TASK_GONE");
    assert.equal(gone.reason, "REASON_FRAMEWORK_REMOVED");
    await eventually(
      "a new framework",
      () => backend.client.subscribed && backend.client.frameworkId !== old,
    );
    const next = makeSpec(hosts[1], "echo again");
    backend.launch([next]);
    await rec.waitState(next.taskId, "TASK_FINISHED");
  }, { backend: { framework: { failover_timeout: 0.1 } } }));

Deno.test("MesosBackend: any other ERROR stops it for good: every host lost, launches refused, fatalError says why", () =>
  withBackend(async ({ m, backend, rec, hosts }) => {
    const id = backend.client.frameworkId!;
    // Another scheduler takes the framework over: this one's stream gets ERROR "Framework failed over".
    const other = await RawSubscription.open(m.url, {
      type: "SUBSCRIBE",
      framework_id: { value: id },
      subscribe: { framework_info: { ...frameworkInfo(), id: { value: id } } },
    });
    try {
      await other.nextOf("SUBSCRIBED");
      const lost = await eventually("every host lost", () => {
        const l = rec.events.flatMap((e) => e.kind === "host-lost" ? [e] : []);
        return l.length === hosts.length ? l : undefined;
      });
      for (const e of lost) {
        assert.match(e.reason, /the Mesos master stopped this scheduler \(Framework failed over\)/);
      }
      assert.equal(backend.fatalError(), "Framework failed over");
      const spec = makeSpec(hosts[0], "true");
      backend.launch([spec]);
      const dropped = await rec.waitState(spec.taskId, "TASK_DROPPED");
      assert.match(dropped.message ?? "", /Framework failed over/);
    } finally {
      await other.close();
    }
  }));

Deno.test("MesosBackend: a new backend announces every registered agent, a full one (no offers) included", async () => {
  // agent-0 is filled by one task: the master offers nothing of it, so only the operator API names it.
  const m = await startTestMaster({ agents: [{ cpus: 1, memMb: 64 }, {}] });
  const store = new MemoryFrameworkIdStore();
  const rec1 = new Recorder(), rec2 = new Recorder();
  const first = newBackend(m, store), second = newBackend(m, store);
  rec1.onStatus = (s) =>
    s.uuid && first.acknowledge([{ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid }]);
  rec2.onStatus = (s) =>
    s.uuid && second.acknowledge([{ taskId: s.taskId, agentId: s.agentId, uuid: s.uuid }]);
  try {
    first.start(rec1.sink);
    const up = (await rec1.waitFor(
      (e) => e.kind === "host-up" && e.host.hostname === "agent-0",
      "agent-0 up",
    )) as { host: HostInfo };
    const spec = makeSpec(up.host, "sleep 30", {
      resources: { cpuMilli: 1000, memMb: 64, diskMb: 0, gpuMilli: 0 },
    });
    first.launch([spec]);
    await rec1.waitState(spec.taskId, "TASK_RUNNING");
    // The leader goes; its successor subscribes with the framework's id.
    await first.stop();
    second.start(rec2.sink);
    second.reconcile([spec.taskId]);
    const again = (await rec2.waitFor(
      (e) => e.kind === "host-up" && e.host.hostname === "agent-0",
      "the full agent announced to the new backend",
      5000,
    )) as { host: HostInfo };
    assert.equal(again.host.agentId, up.host.agentId);
    assert.deepEqual(again.host.resources, up.host.resources, "its whole total, the task's share included");
    assert.deepEqual(again.host.portRanges, up.host.portRanges);
    assert.equal(again.host.attributes.rack, up.host.attributes.rack);
    await rec2.waitStatus(
      (s) => s.taskId === spec.taskId && s.state === "TASK_RUNNING" && s.hostname === "agent-0",
      "the task reconciled on it",
    );
    second.kill([{ taskId: spec.taskId, agentId: up.host.agentId, gracePeriodMs: 0 }]);
    await rec2.waitState(spec.taskId, "TASK_KILLED");
  } finally {
    await first.stop();
    await second.stop();
    await m.stop();
  }
});
