/**
 * Maintenance across a host manager restart with the Mesos backend, verified against an emulator of the
 * documented protocol: a machine down for maintenance has no agent, so only the store and the master's
 * maintenance status know it after the restart.
 */
import assert from "node:assert/strict";
import { DEFAULT_HOSTMGR_CONFIG, HostManager } from "../../core/hostmgr/hostmgr.ts";
import type { ApiReply } from "../../core/messages.ts";
import { noMetrics } from "../../core/ports/metrics.ts";
import type { Store } from "../../core/ports/store.ts";
import { CaptureTransport } from "../../core/testing/harness.ts";
import { MemoryStore } from "../../sim/memory_store.ts";
import { SystemClock } from "../clock.ts";
import { eventually, makeSpec, startTestMaster, type TestMaster } from "./_testing.ts";
import { MemoryFrameworkIdStore } from "./framework_id_store.ts";
import { MesosMaintenance } from "./maintenance_sync.ts";
import { MesosBackend } from "./mesos_backend.ts";

const HOST = "peloton.api.v0.host.svc.HostService";

/** A host manager with the Mesos backend and the maintenance sync, started as a new leader does. */
async function startHostmgr(
  m: TestMaster,
  store: Store,
  ids: MemoryFrameworkIdStore,
  log?: (msg: string, fields?: Record<string, unknown>) => void,
) {
  const backend = new MesosBackend({
    masterUrl: m.url,
    idStore: ids,
    client: { heartbeatMisses: 3, backoffMinMs: 20, backoffMaxMs: 200, random: () => 0.5 },
  });
  const clock = new SystemClock();
  const transport = new CaptureTransport();
  // Both managers handled each status batch (as the job and resource managers answer), so updates are acked.
  const send = transport.send.bind(transport);
  transport.send = (to, msg) => {
    send(to, msg);
    const ackToken = msg.kind === "task-statuses" ? msg.ackToken : undefined;
    if (ackToken === undefined) return;
    queueMicrotask(() => {
      hm.receive({ kind: "statuses-processed", ackToken });
      hm.receive({ kind: "statuses-processed", ackToken });
    });
  };
  const hm = new HostManager({
    clock,
    transport,
    backend,
    metrics: noMetrics,
    store,
    self: "hostmgr",
    jobmgr: "jobmgr",
    resmgr: "resmgr",
  }, { ...DEFAULT_HOSTMGR_CONFIG, clusterMaintenance: true });
  hm.recover(await store.hostMaintenance());
  hm.start();
  const sync = new MesosMaintenance(backend, hm, log);
  sync.start(20);
  let reqId = 0;
  const api = async (method: string, body: unknown): Promise<ApiReply> => {
    const id = ++reqId;
    hm.receive({ kind: "api", reqId: id, replyTo: "cli", procedure: `${HOST}::${method}`, body });
    return await eventually(
      `${method} answered`,
      () => transport.take("api-reply", "cli").find((r) => r.reqId === id),
    );
  };
  const states = async () => {
    const body = (await api("QueryHosts", {})).body as { hostInfos: { hostname: string; state: string }[] };
    return Object.fromEntries(body.hostInfos.map((h) => [h.hostname, h.state]));
  };
  return {
    hm,
    transport,
    api,
    states,
    /** No more passes: what the host manager changes from now on does not reach the master. */
    pauseSync: () => sync.stop(),
    async stop() {
      await sync.stop();
      await backend.stop();
      clock.cancelAll();
    },
  };
}

type MaintenanceStatus = ReturnType<TestMaster["master"]["core"]["maintenance"]["status"]>;

function status(m: TestMaster): MaintenanceStatus {
  return m.master.core.maintenance.status();
}

const isDown = (m: TestMaster, host: string) =>
  status(m).down_machines?.some((d) => d.hostname === host) ?? false;

/** Puts `host` into maintenance through the API and waits until its machine is down, as Peloton shows it. */
async function takeDown(hm: Awaited<ReturnType<typeof startHostmgr>>, m: TestMaster, host: string) {
  assert.deepEqual((await hm.api("StartMaintenance", { hostname: host })).body, { hostname: host });
  await eventually(`${host} down at the master`, () => isDown(m, host));
  await eventually(`${host} DOWN in Peloton`, async () => (await hm.states())[host] === "HOST_STATE_DOWN");
}

/** Completes `host`'s maintenance and waits until the master brought it up and its agent registered again. */
async function bringUp(hm: Awaited<ReturnType<typeof startHostmgr>>, m: TestMaster, host: string) {
  assert.deepEqual((await hm.api("CompleteMaintenance", { hostname: host })).body, { hostname: host });
  await eventually(`${host} up at the master`, () => {
    const s = status(m);
    return !s.down_machines?.length && !s.draining_machines?.length &&
      !m.master.core.maintenance.schedule().windows?.length;
  });
  await eventually(`${host} registered UP`, async () => (await hm.states())[host] === "HOST_STATE_UP");
}

/** A host manager of `hosts` (hostname and state) with no maintenance stored, recording machines gone down. */
function fakeHostmgr(hosts: { info: { hostname: string }; state: string }[], wentDown: string[] = []) {
  return {
    hosts,
    unregisteredInMaintenance: () => [],
    adoptMaintenance: () => {},
    completedMaintenance: () => [],
    completionCarried: () => {},
    machineWentDown: (hostname: string) => wentDown.push(hostname),
  };
}

Deno.test("MesosMaintenance: after a host manager restart a down machine is listed DOWN and completing brings it up", async () => {
  const m = await startTestMaster({ agents: 2 });
  const store = new MemoryStore(queueMicrotask);
  const ids = new MemoryFrameworkIdStore();
  let hm = await startHostmgr(m, store, ids);
  try {
    await eventually("two hosts", () => hm.hm.hosts.length === 2);
    await takeDown(hm, m, "agent-1");
    // Stored DOWN once its machine is: a restart that never sees its agent again knows it is down.
    await eventually(
      "DOWN stored",
      async () =>
        (await store.hostMaintenance()).map((r) => `${r.hostname} ${r.state}`).join() ===
          "agent-1 HOST_STATE_DOWN",
    );

    // A new leader: agent-1 has no agent, so it never registers; the stored maintenance lists it.
    await hm.stop();
    hm = await startHostmgr(m, store, ids);
    await eventually("agent-0 registered", () => hm.hm.host("agent-0") !== undefined);
    assert.deepEqual(await hm.states(), { "agent-0": "HOST_STATE_UP", "agent-1": "HOST_STATE_DOWN" });
    const again = await hm.api("StartMaintenance", { hostname: "agent-1" });
    assert.equal(again.error?.code, "failed-precondition");
    assert.match(again.error!.message, /it is HOST_STATE_DOWN/);
    await bringUp(hm, m, "agent-1");
    assert.deepEqual(await store.hostMaintenance(), []);
  } finally {
    await hm.stop();
    await m.stop();
  }
});

Deno.test("MesosMaintenance: a new leader with nothing stored adopts the master's down machines", async () => {
  const m = await startTestMaster({ agents: 2 });
  const ids = new MemoryFrameworkIdStore();
  let hm = await startHostmgr(m, new MemoryStore(queueMicrotask), ids);
  try {
    await eventually("two hosts", () => hm.hm.hosts.length === 2);
    await takeDown(hm, m, "agent-1");
    // A store without the record (a database from before maintenance was stored): the master's status has it.
    await hm.stop();
    const store = new MemoryStore(queueMicrotask);
    hm = await startHostmgr(m, store, ids);
    await eventually("agent-1 adopted", async () => (await hm.states())["agent-1"] === "HOST_STATE_DOWN");
    await eventually(
      "the adoption stored",
      async () => (await store.hostMaintenance()).some((r) => r.state === "HOST_STATE_DOWN"),
    );
    await bringUp(hm, m, "agent-1");
    assert.deepEqual(await store.hostMaintenance(), []);
  } finally {
    await hm.stop();
    await m.stop();
  }
});

Deno.test("MesosMaintenance: a host put back into maintenance keeps its machine up until its tasks are drained", async () => {
  const m = await startTestMaster({ agents: 2 });
  const store = new MemoryStore(queueMicrotask);
  const ids = new MemoryFrameworkIdStore();
  let hm = await startHostmgr(m, store, ids);
  try {
    await eventually("two hosts", () => hm.hm.hosts.length === 2);
    const host = hm.hm.host("agent-1")!.info;
    const spec = makeSpec(host, "sleep 30");
    const [lease] = hm.hm.acquire([{
      minResources: spec.resources,
      numPorts: 0,
      maxHosts: 1,
      gpu: false,
      requiredHost: "agent-1",
    }]).leases;
    hm.hm.receive({ kind: "launch-tasks", leaseId: lease.leaseId, hostname: "agent-1", tasks: [spec] });
    const running = () => m.master.core.tasksOn(host.agentId).some((t) => t.state === "TASK_RUNNING");
    await eventually("the task running", running);
    assert.deepEqual((await hm.api("StartMaintenance", { hostname: "agent-1" })).body, {
      hostname: "agent-1",
    });
    assert.equal((await hm.states())["agent-1"], "HOST_STATE_DRAINING");

    // A new leader hears of the task only when a job manager hands it back: agent-1 looks DRAINED until then.
    await hm.stop();
    hm = await startHostmgr(m, store, ids);
    await eventually("agent-1 registered", () => hm.hm.host("agent-1") !== undefined);
    assert.equal((await hm.states())["agent-1"], "HOST_STATE_DRAINED");
    await new Promise((r) => setTimeout(r, 300)); // many sync periods
    assert.ok(!isDown(m, "agent-1") && running(), "the machine stays up while our task runs there");

    hm.hm.receive({ kind: "reconcile-tasks", tasks: [spec] });
    assert.equal((await hm.states())["agent-1"], "HOST_STATE_DRAINING");
    assert.deepEqual(hm.transport.take("drain-tasks", "resmgr").map((d) => d.taskIds), [[spec.taskId]]);
    // The resource manager preempts it; the job manager kills it.
    hm.hm.receive({
      kind: "kill-tasks",
      tasks: [{ taskId: spec.taskId, gracePeriodMs: 0, hostname: "agent-1" }],
    });
    await eventually("agent-1 down at the master", () => isDown(m, "agent-1"));
    await eventually("agent-1 DOWN", async () => (await hm.states())["agent-1"] === "HOST_STATE_DOWN");
    await bringUp(hm, m, "agent-1");
  } finally {
    await hm.stop();
    await m.stop();
  }
});

Deno.test("MesosMaintenance: a completion answered just before a crash is carried to the master after the restart, not adopted back", async () => {
  const m = await startTestMaster({ agents: 2 });
  const store = new MemoryStore(queueMicrotask);
  const ids = new MemoryFrameworkIdStore();
  let hm = await startHostmgr(m, store, ids);
  try {
    await eventually("two hosts", () => hm.hm.hosts.length === 2);
    await takeDown(hm, m, "agent-1");

    // The operator completes agent-1 and is answered; the host manager dies before its sync tells the master.
    await hm.pauseSync();
    assert.deepEqual((await hm.api("CompleteMaintenance", { hostname: "agent-1" })).body, {
      hostname: "agent-1",
    });
    assert.ok(isDown(m, "agent-1"), "the master still has the machine down");
    await hm.stop();

    // The new leader finds the machine down at the master: the completion wins, and is carried there.
    hm = await startHostmgr(m, store, ids);
    await eventually("agent-1 up at the master", () => {
      const s = status(m);
      return !s.down_machines?.length && !s.draining_machines?.length &&
        !m.master.core.maintenance.schedule().windows?.length;
    });
    await eventually("agent-1 registered UP", async () => (await hm.states())["agent-1"] === "HOST_STATE_UP");
    await eventually(
      "the completion forgotten once carried",
      async () => (await store.hostMaintenance()).length === 0,
    );
    await new Promise((r) => setTimeout(r, 100)); // several sync periods
    assert.deepEqual(await hm.states(), { "agent-0": "HOST_STATE_UP", "agent-1": "HOST_STATE_UP" });
    assert.ok(!isDown(m, "agent-1"));
  } finally {
    await hm.stop();
    await m.stop();
  }
});

Deno.test("MesosMaintenance: a machine scheduled whose machine-down failed is taken out of the schedule when completed before a retry", async () => {
  const m = await startTestMaster({ agents: 2 });
  const store = new MemoryStore(queueMicrotask);
  const ids = new MemoryFrameworkIdStore();
  let hm = await startHostmgr(m, store, ids);
  try {
    await eventually("two hosts", () => hm.hm.hosts.length === 2);
    // agent-1 runs nothing, so it is DRAINED at once: the sync schedules it, then START_MAINTENANCE fails.
    m.master.failOperatorCalls("START_MAINTENANCE", Infinity);
    assert.deepEqual((await hm.api("StartMaintenance", { hostname: "agent-1" })).body, {
      hostname: "agent-1",
    });
    await eventually(
      "machine down tried and failed",
      () => m.master.failedOperatorCalls("START_MAINTENANCE") >= 1,
    );
    assert.deepEqual(status(m).draining_machines?.map((d) => d.id.hostname), ["agent-1"]);
    // Its machine not down, the host is DRAINED, which Peloton does not complete.
    assert.equal((await hm.states())["agent-1"], "HOST_STATE_DRAINED");
    assert.match(
      (await hm.api("CompleteMaintenance", { hostname: "agent-1" })).error?.message ?? "",
      /it is HOST_STATE_DRAINED, its machine is not down yet; complete it once it is HOST_STATE_DOWN/,
    );

    // Its agent lost meanwhile, it is DOWN; completed before the step is retried: the machine leaves the
    // master's schedule.
    const agentId = hm.hm.host("agent-1")!.info.agentId;
    m.master.loseAgent(agentId, { partition: true });
    await eventually("agent-1 DOWN", async () => (await hm.states())["agent-1"] === "HOST_STATE_DOWN");
    assert.deepEqual((await hm.api("CompleteMaintenance", { hostname: "agent-1" })).body, {
      hostname: "agent-1",
    });
    m.master.failOperatorCalls("START_MAINTENANCE", 0);
    await eventually("agent-1 out of maintenance at the master", () => {
      const s = status(m);
      return !s.down_machines?.length && !s.draining_machines?.length &&
        !m.master.core.maintenance.schedule().windows?.length;
    });

    // A new leader finds nothing to adopt: agent-1 stays up.
    m.master.healAgent(agentId);
    await hm.stop();
    hm = await startHostmgr(m, store, ids);
    await eventually("two hosts again", () => hm.hm.hosts.length === 2);
    await new Promise((r) => setTimeout(r, 100)); // several sync periods
    assert.deepEqual(await hm.states(), { "agent-0": "HOST_STATE_UP", "agent-1": "HOST_STATE_UP" });
  } finally {
    await hm.stop();
    await m.stop();
  }
});

Deno.test("MesosMaintenance: a machine the master already brought up is done, and holds up no later host", async () => {
  const m = await startTestMaster({ agents: 3 });
  const store = new MemoryStore(queueMicrotask);
  const hm = await startHostmgr(m, store, new MemoryFrameworkIdStore());
  try {
    await eventually("three hosts", () => hm.hm.hosts.length === 3);
    await takeDown(hm, m, "agent-1");
    // An operator brings the machine up at the master directly, behind the host manager's back.
    assert.equal(
      m.master.core.maintenance.stopMaintenance([{ hostname: "agent-1", ip: "127.0.0.1" }]),
      undefined,
    );
    assert.deepEqual((await hm.api("CompleteMaintenance", { hostname: "agent-1" })).body, {
      hostname: "agent-1",
    });
    assert.deepEqual((await hm.api("StartMaintenance", { hostname: "agent-2" })).body, {
      hostname: "agent-2",
    });
    // The refused STOP_MAINTENANCE (already up) counts as done, and agent-2 goes down meanwhile.
    await eventually("agent-2 down at the master", () => isDown(m, "agent-2"));
    await eventually("agent-2 DOWN", async () => (await hm.states())["agent-2"] === "HOST_STATE_DOWN");
    await eventually("agent-1 registered UP", async () => (await hm.states())["agent-1"] === "HOST_STATE_UP");
    await eventually(
      "agent-1's completion carried",
      async () => (await store.hostMaintenance()).every((r) => r.hostname !== "agent-1"),
    );
    const stops = m.calls.length;
    await new Promise((r) => setTimeout(r, 200)); // many sync periods
    assert.ok(
      !m.calls.slice(stops).some((c) => (c as { type?: string }).type === "STOP_MAINTENANCE"),
      "no STOP_MAINTENANCE retried for agent-1",
    );
  } finally {
    await hm.stop();
    await m.stop();
  }
});

Deno.test("MesosMaintenance: each host is carried on its own: one refused does not hold up the next", async () => {
  const downs: string[] = [];
  const backend = {
    client: { frameworkId: "fw" },
    machineOf: (hostname: string) => Promise.resolve({ hostname, ip: "10.0.0.1" }),
    inverseOffersOn: () => [],
    operator: (call: { type: string; start_maintenance?: { machines: { hostname: string }[] } }) => {
      const host = call.start_maintenance?.machines[0].hostname;
      if (host === "a") return Promise.reject(new Error("START_MAINTENANCE: HTTP 503"));
      if (host) downs.push(host);
      return Promise.resolve({});
    },
  } as unknown as MesosBackend;
  const wentDown: string[] = [];
  const logged: string[] = [];
  const hm = fakeHostmgr([
    { info: { hostname: "a" }, state: "HOST_STATE_DRAINED" },
    { info: { hostname: "b" }, state: "HOST_STATE_DRAINED" },
  ], wentDown);
  const sync = new MesosMaintenance(backend, hm, (msg, f) => logged.push(`${msg} ${JSON.stringify(f)}`));
  await sync.sync();
  assert.deepEqual(downs, ["b"]);
  assert.deepEqual(wentDown, ["b"], "b is DOWN although a's machine-down failed before it");
  await sync.sync();
  assert.equal(logged.filter((l) => /failed for the host/.test(l)).length, 1, "a's failure said once");
});

Deno.test("MesosMaintenance: a machine already scheduled and already down at the master is done", async () => {
  const calls: string[] = [];
  const a = { hostname: "a", ip: "10.0.0.1" };
  let statuses = 0;
  const backend = {
    client: { frameworkId: "fw" },
    machineOf: () => Promise.resolve(a),
    inverseOffersOn: () => [],
    operator: (call: { type: string }) => {
      calls.push(call.type);
      switch (call.type) {
        case "GET_MAINTENANCE_STATUS":
          // Nothing at the first look (the recovery); down by the time the sync asks again.
          return Promise.resolve({
            get_maintenance_status: { status: statuses++ ? { down_machines: [a] } : {} },
          });
        case "GET_MAINTENANCE_SCHEDULE":
          return Promise.resolve({
            get_maintenance_schedule: {
              schedule: { windows: [{ machine_ids: [a], unavailability: { start: { nanoseconds: 1 } } }] },
            },
          });
        case "START_MAINTENANCE":
          return Promise.reject(
            new Error("START_MAINTENANCE: HTTP 400 Machine 'a (10.0.0.1)' is not in DRAINING mode"),
          );
        default:
          return Promise.resolve({});
      }
    },
  } as unknown as MesosBackend;
  const wentDown: string[] = [];
  const hm = fakeHostmgr([{ info: { hostname: "a" }, state: "HOST_STATE_DRAINED" }], wentDown);
  const sync = new MesosMaintenance(backend, hm);
  await sync.sync();
  assert.ok(!calls.includes("UPDATE_MAINTENANCE_SCHEDULE"), `already scheduled: ${calls.join()}`);
  assert.deepEqual(wentDown, ["a"], "already down at the master: DOWN");
  calls.length = 0;
  await sync.sync();
  assert.ok(!calls.includes("START_MAINTENANCE"), `not tried again: ${calls.join()}`);
});

Deno.test("MesosMaintenance: a stop lets the host being carried finish and carries no other", async () => {
  const calls: string[] = [];
  const gate = Promise.withResolvers<void>();
  const scheduling = Promise.withResolvers<void>();
  // Two hosts going into maintenance; the master answers the first schedule change only when let.
  const backend = {
    machineOf: (hostname: string) => Promise.resolve({ hostname }),
    inverseOffersOn: () => [],
    operator: async (call: { type: string; update_maintenance_schedule?: unknown }) => {
      calls.push(call.type);
      if (call.type === "UPDATE_MAINTENANCE_SCHEDULE") {
        scheduling.resolve();
        await gate.promise;
      }
      return {};
    },
  } as unknown as MesosBackend;
  const hm = fakeHostmgr([
    { info: { hostname: "a" }, state: "HOST_STATE_DRAINING" },
    { info: { hostname: "b" }, state: "HOST_STATE_DRAINING" },
  ]);
  const sync = new MesosMaintenance(backend, hm);
  const pass = sync.sync();
  await scheduling.promise;
  const stopped = sync.stop();
  gate.resolve();
  await stopped;
  await pass;
  assert.deepEqual(calls, [
    "GET_MAINTENANCE_STATUS",
    "GET_MAINTENANCE_SCHEDULE",
    "UPDATE_MAINTENANCE_SCHEDULE",
  ]);
});

Deno.test("MesosMaintenance: a DRAINED host is DOWN once the master has its machine down, not before", async () => {
  const calls: string[] = [];
  let failDown = true;
  const backend = {
    client: { frameworkId: "fw" },
    machineOf: (hostname: string) => Promise.resolve({ hostname }),
    inverseOffersOn: () => [],
    operator: (call: { type: string }) => {
      calls.push(call.type);
      if (call.type === "START_MAINTENANCE" && failDown) return Promise.reject(new Error("503"));
      return Promise.resolve({});
    },
  } as unknown as MesosBackend;
  const wentDown: string[] = [];
  const hm = fakeHostmgr([
    { info: { hostname: "a" }, state: "HOST_STATE_DRAINED" },
    { info: { hostname: "b" }, state: "HOST_STATE_DRAINING" },
  ], wentDown);
  const sync = new MesosMaintenance(backend, hm);
  await sync.sync();
  assert.ok(calls.includes("START_MAINTENANCE"), calls.join());
  assert.deepEqual(wentDown, [], "the machine-down call failed: still DRAINED");
  failDown = false;
  await sync.sync();
  assert.deepEqual(wentDown, ["a"], "DOWN once the master took the machine down; b is still draining");
  // The host manager has it DOWN now: nothing more to carry or say.
  hm.hosts[0].state = "HOST_STATE_DOWN";
  calls.length = 0;
  await sync.sync();
  assert.deepEqual(wentDown, ["a"]);
  assert.ok(!calls.includes("START_MAINTENANCE"), calls.join());
});

Deno.test("MesosMaintenance: a machine is scheduled only once its agent's IP is known (Mesos matches both)", async () => {
  const m = await startTestMaster({ agents: 2 });
  // No GET_AGENTS answer from the start: hosts come from offers, and no agent's IP is known.
  m.master.failOperatorCalls("GET_AGENTS", Infinity);
  const logged: string[] = [];
  const hm = await startHostmgr(
    m,
    new MemoryStore(queueMicrotask),
    new MemoryFrameworkIdStore(),
    (msg, fields) => logged.push(`${msg} ${JSON.stringify(fields)}`),
  );
  try {
    await eventually("two hosts", () => hm.hm.hosts.length === 2);
    // A task keeps agent-1 DRAINING, so that its machine is to be scheduled, not yet taken down.
    const host = hm.hm.host("agent-1")!.info;
    const spec = makeSpec(host, "sleep 30");
    const [lease] = hm.hm.acquire([{
      minResources: spec.resources,
      numPorts: 0,
      maxHosts: 1,
      gpu: false,
      requiredHost: "agent-1",
    }]).leases;
    hm.hm.receive({ kind: "launch-tasks", leaseId: lease.leaseId, hostname: "agent-1", tasks: [spec] });
    await eventually(
      "the task running",
      () => m.master.core.tasksOn(host.agentId).some((t) => t.state === "TASK_RUNNING"),
    );
    assert.deepEqual((await hm.api("StartMaintenance", { hostname: "agent-1" })).body, {
      hostname: "agent-1",
    });
    await eventually(
      "the sync waiting for the IP",
      () => logged.find((l) => /waits for the agent's IP/.test(l)),
    );
    // A machine named by its host name alone would be no agent's: nothing is scheduled yet.
    assert.deepEqual(m.master.core.maintenance.schedule().windows, []);

    m.master.failOperatorCalls("GET_AGENTS", 0);
    await eventually("agent-1 scheduled", () => status(m).draining_machines?.length ? true : undefined);
    assert.deepEqual(status(m).draining_machines?.map((d) => d.id), [{
      hostname: "agent-1",
      ip: "127.0.0.1",
    }]);
    hm.hm.receive({
      kind: "kill-tasks",
      tasks: [{ taskId: spec.taskId, gracePeriodMs: 0, hostname: "agent-1" }],
    });
    await eventually("agent-1 DOWN", async () => (await hm.states())["agent-1"] === "HOST_STATE_DOWN");
    // The machine id named the agent: it is gone from the master.
    assert.deepEqual(m.master.agentIds().length, 1);
    assert.equal(logged.filter((l) => /waits for the agent's IP/.test(l)).length, 1, "said once");
  } finally {
    await hm.stop();
    await m.stop();
  }
});
