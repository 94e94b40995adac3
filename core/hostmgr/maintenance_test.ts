import assert from "node:assert/strict";
import { StoreUnavailableError } from "../ports/store.ts";
import type { ApiReply } from "../messages.ts";
import { makeHost } from "../testing/harness.ts";
import { finished, hostmgrRig, spec } from "./testing.ts";
import { REREGISTER_GRACE_MS } from "./hostmgr.ts";

const HOST = "peloton.api.v0.host.svc.HostService";

/** An API call answered: maintenance is answered once stored, so the store is made durable first. */
function api(rig: ReturnType<typeof hostmgrRig>, method: string, body: unknown): ApiReply {
  rig.hm.receive({ kind: "api", reqId: 1, replyTo: "cli", procedure: `${HOST}::${method}`, body });
  rig.store.settle();
  return rig.transport.takeOne("api-reply", "cli");
}

function hostStates(rig: ReturnType<typeof hostmgrRig>): Record<string, string> {
  const body = api(rig, "QueryHosts", {}).body as { hostInfos: { hostname: string; state: string }[] };
  return Object.fromEntries(body.hostInfos.map((h) => [h.hostname, h.state]));
}

Deno.test("StartMaintenance drains a host: no new leases, DRAINING until its tasks end, then DOWN with no machine to take down", () => {
  const rig = hostmgrRig([["h1"], ["h2"]], {}, { machines: false });
  rig.launch("a-0-1", "h1", 1);
  assert.deepEqual(api(rig, "StartMaintenance", { hostname: "h1" }).body, { hostname: "h1" });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DRAINING");
  const r = rig.acquire({ maxHosts: 5 });
  assert.deepEqual(r.leases.map((l) => l.hostname), ["h2"]);
  assert.deepEqual(r.rejections, { "host in maintenance": 1 });
  rig.backend.emit(finished("a-0-1", "h1"));
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DOWN");
  const down = api(rig, "QueryHosts", { hostStates: ["HOST_STATE_DOWN"] }).body as {
    hostInfos: { hostname: string }[];
  };
  assert.deepEqual(down.hostInfos.map((h) => h.hostname), ["h1"]);
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostname: "h1" }).body, { hostname: "h1" });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_UP");
  rig.hm.receive({ kind: "release-hosts", leaseIds: r.leases.map((l) => l.leaseId) });
  assert.equal(rig.acquire({ maxHosts: 5 }).leases.length, 2, "an UP host takes work again");
});

Deno.test("a lease taken before maintenance cannot launch on the host", () => {
  const rig = hostmgrRig([["h1"]]);
  const [lease] = rig.acquire().leases;
  rig.hm.startMaintenance("h1");
  rig.hm.receive({
    kind: "launch-tasks",
    leaseId: lease.leaseId,
    hostname: "h1",
    tasks: [spec("x-0-1", "h1")],
  });
  assert.deepEqual(rig.backend.launched, []);
  const [lost] = rig.transport.take("task-statuses", "jobmgr");
  assert.match(lost.statuses[0].message!, /host h1 is in maintenance/);
});

Deno.test("maintenance requests name the host; unknown hosts are not found, the deprecated list is accepted", () => {
  const rig = hostmgrRig([["h1"], ["h2"]], {}, { machines: false });
  assert.equal(api(rig, "StartMaintenance", { hostname: "nope" }).error?.code, "not-found");
  assert.equal(api(rig, "StartMaintenance", {}).error?.code, "invalid-argument");
  assert.equal(api(rig, "CompleteMaintenance", { hostname: "h1" }).error?.code, "invalid-argument");
  assert.deepEqual(api(rig, "StartMaintenance", { hostnames: ["h1", "h2"] }).body, {
    hostnames: ["h1", "h2"],
  });
  const states = (api(rig, "QueryHosts", {}).body as { hostInfos: { state: string }[] }).hostInfos.map((h) =>
    h.state
  );
  assert.deepEqual(
    states,
    ["HOST_STATE_DOWN", "HOST_STATE_DOWN"],
    "empty hosts drain, and are down, at once",
  );
});

Deno.test("a host lost while in maintenance is DOWN; the job manager hears about host changes", () => {
  const rig = hostmgrRig([["h1"]]);
  rig.hm.startMaintenance("h1");
  rig.hm.receive({ kind: "api", reqId: 2, replyTo: "cli", procedure: `${HOST}::QueryHosts`, body: {} });
  rig.transport.take("api-reply");
  const inv = rig.transport.take("host-inventory", "jobmgr");
  assert.deepEqual(inv.map((m) => m.hosts.map((h) => h.state)), [["HOST_STATE_DRAINED"]]);
  rig.backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "powered off" });
  const body = api(rig, "QueryHosts", { hostStates: ["HOST_STATE_DOWN"] }).body as { hostInfos: unknown[] };
  assert.equal(body.hostInfos.length, 1);
  assert.deepEqual(
    rig.transport.take("host-inventory", "jobmgr").flatMap((m) => m.hosts.map((h) => h.state)),
    ["LOST"],
  );
});

Deno.test("StartMaintenance refuses a DRAINED or DOWN host, naming its state; a DRAINING one keeps draining", () => {
  const rig = hostmgrRig([["h1"], ["h2"], ["h3"]]);
  rig.launch("a-0-1", "h2", 1);
  assert.deepEqual(api(rig, "StartMaintenance", { hostname: "h1" }).body, { hostname: "h1" });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DRAINED");
  const again = api(rig, "StartMaintenance", { hostname: "h1" });
  assert.deepEqual(again.error, {
    code: "failed-precondition",
    message: "cannot start maintenance on host h1: it is HOST_STATE_DRAINED, already in maintenance; " +
      "complete its maintenance to bring it UP first",
  });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DRAINED", "unchanged");

  // Peloton drains a DRAINING host again: accepted, and it stays DRAINING until its task ends.
  api(rig, "StartMaintenance", { hostname: "h2" });
  rig.transport.take("drain-tasks");
  assert.deepEqual(api(rig, "StartMaintenance", { hostname: "h2" }).body, { hostname: "h2" });
  assert.equal(rig.hm.host("h2")!.state, "HOST_STATE_DRAINING");
  assert.deepEqual(rig.transport.take("drain-tasks"), [], "its tasks are not asked to drain twice");

  rig.backend.emit({ kind: "host-lost", hostname: "h2", agentId: "agent-h2", reason: "powered off" });
  assert.match(api(rig, "StartMaintenance", { hostname: "h2" }).error!.message, /it is HOST_STATE_DOWN/);

  // The deprecated list checks every host first: one refused, none goes into maintenance.
  const list = api(rig, "StartMaintenance", { hostnames: ["h3", "h1", "nope"] });
  assert.equal(list.error?.code, "failed-precondition");
  assert.equal(
    list.error!.message,
    "cannot start maintenance on host h1: it is HOST_STATE_DRAINED, already in maintenance; complete its " +
      "maintenance to bring it UP first; host nope is not registered",
  );
  assert.equal(rig.hm.host("h3")!.state, "HOST_STATE_UP", "h3 left alone");
  assert.equal(rig.store.maintenance.has("h3"), false);
  assert.deepEqual(api(rig, "StartMaintenance", { hostnames: ["h3", "h3"] }).body, {
    hostnames: ["h3", "h3"],
  });
  assert.equal(rig.hm.host("h3")!.state, "HOST_STATE_DRAINED");
  // Down (its agent left), completed, and back with its agent: UP, and can be put into maintenance again.
  rig.backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "machine down" });
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostname: "h1" }).body, { hostname: "h1" });
  rig.backend.emit({ kind: "host-up", host: makeHost("h1") });
  assert.deepEqual(api(rig, "StartMaintenance", { hostname: "h1" }).body, { hostname: "h1" }, "UP again");
});

Deno.test("maintenance is answered only once stored; CompleteMaintenance deletes the record", () => {
  const rig = hostmgrRig([["h1"], ["h2"]], {}, { machines: false });
  rig.clock.advance(1234);
  rig.hm.receive({
    kind: "api",
    reqId: 1,
    replyTo: "cli",
    procedure: `${HOST}::StartMaintenance`,
    body: { hostname: "h1" },
  });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DOWN", "no new work from the request on");
  assert.deepEqual(rig.transport.take("api-reply"), [], "not answered before the record is durable");
  rig.store.settle();
  assert.deepEqual(rig.transport.takeOne("api-reply", "cli").body, { hostname: "h1" });
  // Empty, with no machine to take down, it is DOWN at once, and stored so: a restart lists it DOWN.
  assert.deepEqual([...rig.store.maintenance.values()], [
    { hostname: "h1", state: "HOST_STATE_DOWN", startTimeMs: 1234 },
  ]);
  // Again on a DRAINING host: the record stays as it was.
  rig.launch("a-0-1", "h2", 1);
  api(rig, "StartMaintenance", { hostname: "h2" });
  rig.clock.advance(10);
  assert.deepEqual(api(rig, "StartMaintenance", { hostname: "h2" }).body, { hostname: "h2" });
  assert.equal(rig.store.maintenance.get("h2")!.startTimeMs, 1234);
  rig.backend.emit(finished("a-0-1", "h2"));
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostnames: ["h1", "h2"] }).body, {
    hostnames: ["h1", "h2"],
  });
  assert.equal(rig.store.maintenance.size, 0);
});

Deno.test("a maintenance write the store refuses is answered internal and undone", () => {
  const rig = hostmgrRig([["h1"]], {}, { machines: false });
  rig.store.failNextWrite(new Error("disk full"));
  const start = api(rig, "StartMaintenance", { hostname: "h1" });
  assert.deepEqual(start.error, {
    code: "internal",
    message: "storing the maintenance of host h1: disk full",
  });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_UP", "memory is back as the store has it");
  assert.equal(rig.acquire().leases.length, 1, "and the host takes work");

  const rig2 = hostmgrRig([["h1"]], {}, { machines: false });
  api(rig2, "StartMaintenance", { hostname: "h1" });
  rig2.store.failNextWrite(new Error("disk full"));
  assert.equal(api(rig2, "CompleteMaintenance", { hostname: "h1" }).error?.code, "internal");
  assert.equal(rig2.hm.host("h1")!.state, "HOST_STATE_DOWN", "still in maintenance, as stored");
  assert.equal(rig2.store.maintenance.size, 1);
});

Deno.test("a maintenance write that found the store out of reach is unavailable; a refused list writes nothing", () => {
  const rig = hostmgrRig([["h1"], ["h2"]]);
  rig.store.failNextWrite(new StoreUnavailableError("the store cannot be reached: connect ECONNREFUSED"));
  assert.deepEqual(api(rig, "StartMaintenance", { hostname: "h1" }).error, {
    code: "unavailable",
    message: "storing the maintenance of host h1: the store cannot be reached: connect ECONNREFUSED",
  });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_UP", "back as it was");
  // A host that is not there is refused before anything is written: calling again would not help.
  assert.deepEqual(api(rig, "StartMaintenance", { hostnames: ["h2", "nope"] }).error, {
    code: "not-found",
    message: "host nope is not registered",
  });
  assert.equal(rig.store.unsettled, 0, "nothing written");
  assert.equal(rig.hm.host("h2")!.state, "HOST_STATE_UP");
});

Deno.test("recovered maintenance: a host drains when it registers; one not registered keeps its stored state, then is DOWN until completed", () => {
  const rig = hostmgrRig([], {}, { machines: false });
  rig.clock.set(1_000);
  rig.hm.recover([
    { hostname: "h1", state: "HOST_STATE_DRAINING", startTimeMs: 5 },
    { hostname: "h2", state: "HOST_STATE_DRAINING", startTimeMs: 6 },
    { hostname: "gone", state: "HOST_STATE_DOWN", startTimeMs: 7 },
    { hostname: "late", state: "HOST_STATE_DRAINING", startTimeMs: 8 },
  ]);
  // h1 had a task running before the restart: the job manager hands it back before h1 registers.
  rig.hm.receive({ kind: "reconcile-tasks", tasks: [spec("a-0-1", "h1", 1)] });
  // Not registered yet, the draining hosts may still run tasks: as stored, and not to be completed.
  assert.deepEqual(hostStates(rig), {
    h1: "HOST_STATE_DRAINING",
    h2: "HOST_STATE_DRAINING",
    gone: "HOST_STATE_DOWN",
    late: "HOST_STATE_DRAINING",
  });
  const early = api(rig, "CompleteMaintenance", { hostname: "h2" }).error;
  assert.equal(early?.code, "failed-precondition");
  assert.equal(
    early?.message,
    "cannot complete maintenance on host h2: it is HOST_STATE_DRAINING, as stored before the host manager " +
      "restarted, and its agent has not registered since (its tasks may still run); it drains when it " +
      "registers, and is taken for DOWN if it has not by 1970-01-01T00:10:01.000Z; complete it once it is " +
      "HOST_STATE_DOWN",
  );
  assert.deepEqual(
    (api(rig, "QueryHosts", { hostStates: ["HOST_STATE_DRAINING"] }).body as {
      hostInfos: { hostname: string }[];
    })
      .hostInfos.map((h) => h.hostname),
    ["h1", "h2", "late"],
  );
  rig.backend.emit(
    { kind: "host-up", host: makeHost("h1") },
    { kind: "host-up", host: makeHost("h2") },
    { kind: "host-up", host: makeHost("h3") },
  );
  assert.deepEqual(hostStates(rig), {
    h1: "HOST_STATE_DRAINING",
    h2: "HOST_STATE_DOWN",
    h3: "HOST_STATE_UP",
    gone: "HOST_STATE_DOWN",
    late: "HOST_STATE_DRAINING",
  });
  // Mesos's agent re-registration timeout after the restart, one still not back is taken for DOWN.
  rig.clock.set(1_000 + REREGISTER_GRACE_MS - 1);
  assert.equal(api(rig, "CompleteMaintenance", { hostname: "late" }).error?.code, "failed-precondition");
  rig.clock.set(1_000 + REREGISTER_GRACE_MS);
  assert.equal(hostStates(rig).late, "HOST_STATE_DOWN");
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostname: "late" }).body, { hostname: "late" });
  assert.deepEqual(rig.transport.take("drain-tasks", "resmgr").map((m) => m.taskIds), [["a-0-1"]]);
  assert.deepEqual(rig.acquire({ maxHosts: 5 }).leases.map((l) => l.hostname), ["h3"], "no new work");
  rig.backend.emit(finished("a-0-1", "h1"));
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DOWN");

  // A host not registered: refused again, completed (its record deleted), then UP when it registers.
  assert.equal(api(rig, "StartMaintenance", { hostname: "gone" }).error?.code, "failed-precondition");
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostname: "gone" }).body, { hostname: "gone" });
  assert.equal(api(rig, "CompleteMaintenance", { hostname: "gone" }).error?.code, "not-found");
  // The hosts that went DOWN since the restart are stored so.
  assert.deepEqual(
    [...rig.store.maintenance.values()].map((m) => [m.hostname, m.state]),
    [["h2", "HOST_STATE_DOWN"], ["h1", "HOST_STATE_DOWN"]],
  );
  rig.backend.emit({ kind: "host-up", host: makeHost("gone") });
  assert.equal(rig.hm.host("gone")!.state, "HOST_STATE_UP");
});

Deno.test("a task reconciled onto a DOWN host drains it again", () => {
  const rig = hostmgrRig([["h1"]], {}, { machines: false });
  api(rig, "StartMaintenance", { hostname: "h1" });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DOWN");
  rig.hm.receive({ kind: "reconcile-tasks", tasks: [spec("a-0-1", "h1", 1)] });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DRAINING");
  assert.deepEqual(rig.transport.take("drain-tasks", "resmgr").map((m) => m.taskIds), [["a-0-1"]]);
});

Deno.test("a host the cluster manager has in maintenance is adopted: stored, and DOWN while not registered", () => {
  const rig = hostmgrRig([["h1"]], { clusterMaintenance: true });
  rig.hm.adoptMaintenance("h1", "HOST_STATE_DRAINING");
  rig.hm.adoptMaintenance("m9", "HOST_STATE_DOWN");
  rig.hm.adoptMaintenance("m9", "HOST_STATE_DRAINING");
  rig.store.settle();
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DRAINED", m9: "HOST_STATE_DOWN" });
  assert.deepEqual(
    [...rig.store.maintenance.values()].map((m) => [m.hostname, m.state]),
    [["h1", "HOST_STATE_DRAINING"], ["m9", "HOST_STATE_DOWN"]],
  );
});

Deno.test("a host the cluster manager has in maintenance is adopted though its agent is lost now", () => {
  const rig = hostmgrRig([["h1"], ["h2"]], { clusterMaintenance: true });
  rig.backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "agent removed" });
  rig.backend.emit({ kind: "host-lost", hostname: "h2", agentId: "agent-h2", reason: "unreachable" });
  // StartMaintenance refuses a lost host, but the master has these machines in maintenance already: a host
  // left UP here would have its machine brought up again by the sync, undoing the operator's maintenance.
  rig.hm.adoptMaintenance("h1", "HOST_STATE_DOWN");
  rig.hm.adoptMaintenance("h2", "HOST_STATE_DRAINING");
  rig.store.settle();
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DOWN", h2: "HOST_STATE_DOWN" });
  assert.deepEqual(
    [...rig.store.maintenance.values()].map((m) => [m.hostname, m.state]),
    [["h1", "HOST_STATE_DOWN"], ["h2", "HOST_STATE_DRAINING"]],
  );
  // Back with its agent, each is in maintenance still and takes no work: DRAINED until the sync has the
  // machine down.
  rig.backend.emit({ kind: "host-up", host: makeHost("h1") }, { kind: "host-up", host: makeHost("h2") });
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DRAINED", h2: "HOST_STATE_DRAINED" });
  assert.deepEqual(rig.acquire({ maxHosts: 5 }).leases, []);
});

Deno.test("CompleteMaintenance tells the resource manager room is free, though capacity is the same", () => {
  const rig = hostmgrRig([["h1"]], {}, { machines: false });
  api(rig, "StartMaintenance", { hostname: "h1" });
  rig.transport.drain();
  api(rig, "CompleteMaintenance", { hostname: "h1" });
  const [push] = rig.transport.take("cluster-capacity", "resmgr");
  assert.equal(push.roomFreed, true);
  assert.equal(push.capacity.physical.cpuMilli, rig.hm.capacity().cpuMilli);
});

Deno.test("a drain request the resource manager missed is sent again when it next asks for capacity", () => {
  const rig = hostmgrRig([["h1"], ["h2"]]);
  rig.launch("a-0-1", "h1", 1);
  rig.launch("b-0-1", "h2", 1);
  api(rig, "StartMaintenance", { hostname: "h1" });
  // The first request is lost: say, the resource manager restarted before it tracked the task.
  assert.deepEqual(rig.transport.take("drain-tasks", "resmgr").map((m) => m.taskIds), [["a-0-1"]]);
  rig.hm.receive({ kind: "get-cluster-capacity", reqId: 7, replyTo: "resmgr" });
  assert.equal(rig.transport.takeOne("cluster-capacity", "resmgr").reqId, 7);
  assert.deepEqual(rig.transport.take("drain-tasks", "resmgr").map((m) => m.taskIds), [["a-0-1"]]);
  // Once the host is drained there is nothing to ask for.
  rig.backend.emit(finished("a-0-1", "h1"));
  rig.hm.receive({ kind: "get-cluster-capacity", reqId: 8, replyTo: "resmgr" });
  assert.deepEqual(rig.transport.take("drain-tasks", "resmgr"), []);
});

Deno.test("StartMaintenance refuses a host that is lost (no agent now), naming its state; nothing changes", () => {
  const rig = hostmgrRig([["h1"], ["h2"]], {}, { machines: false });
  rig.backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "agent removed" });
  rig.transport.drain();
  const refused = api(rig, "StartMaintenance", { hostname: "h1" });
  assert.deepEqual(refused.error, {
    code: "failed-precondition",
    message: "cannot start maintenance on host h1: it is HOST_STATE_UNKNOWN, its agent is not registered; " +
      "only a registered agent can be put into maintenance",
  });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_UP", "unchanged");
  assert.equal(rig.store.maintenance.size, 0, "nothing stored");
  assert.deepEqual(rig.transport.take("host-inventory"), [], "no host changed");
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_UNKNOWN", h2: "HOST_STATE_UP" });

  // Back with an agent, it can be.
  rig.backend.emit({ kind: "host-up", host: makeHost("h1") });
  assert.deepEqual(api(rig, "StartMaintenance", { hostname: "h1" }).body, { hostname: "h1" });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DOWN");
});

Deno.test("CompleteMaintenance refuses a DRAINING host, naming its state; nothing changes until it is drained", () => {
  const rig = hostmgrRig([["h1"], ["h2"], ["h3"]], {}, { machines: false });
  rig.launch("a-0-1", "h1", 1);
  rig.launch("b-0-1", "h3", 1);
  api(rig, "StartMaintenance", { hostnames: ["h1", "h2", "h3"] });
  rig.transport.drain();
  const refused = api(rig, "CompleteMaintenance", { hostname: "h1" });
  assert.deepEqual(refused.error, {
    code: "failed-precondition",
    message: "cannot complete maintenance on host h1: it is HOST_STATE_DRAINING, 1 task(s) still to move " +
      "off; complete it once it is HOST_STATE_DOWN",
  });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DRAINING", "still draining");
  assert.ok(rig.store.maintenance.has("h1"), "its record kept");
  assert.deepEqual(rig.transport.take("cluster-capacity"), [], "no room announced");
  assert.deepEqual(rig.acquire({ maxHosts: 5 }).leases, [], "no host takes work");

  // A list with a host refused completes none of them.
  const list = api(rig, "CompleteMaintenance", { hostnames: ["h2", "h1"] });
  assert.equal(list.error?.code, "failed-precondition");
  assert.match(list.error!.message, /^cannot complete maintenance on host h1: it is HOST_STATE_DRAINING/);
  assert.deepEqual(hostStates(rig), {
    h1: "HOST_STATE_DRAINING",
    h2: "HOST_STATE_DOWN",
    h3: "HOST_STATE_DRAINING",
  });
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostname: "h2" }).body, { hostname: "h2" });

  // Drained (and down), it completes; a draining host whose agent is lost is DOWN, and completes too.
  rig.backend.emit(finished("a-0-1", "h1"));
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostname: "h1" }).body, { hostname: "h1" });
  rig.backend.emit({ kind: "host-lost", hostname: "h3", agentId: "agent-h3", reason: "powered off" });
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostname: "h3" }).body, { hostname: "h3" });
  assert.equal(rig.store.maintenance.size, 0);
});

Deno.test("with a cluster manager that keeps maintenance, a completion is stored until carried, and wins over adoption", () => {
  const rig = hostmgrRig([["h1"], ["h2"]], { clusterMaintenance: true });
  api(rig, "StartMaintenance", { hostnames: ["h1", "h2"] });
  rig.hm.machineWentDown("h1");
  rig.hm.machineWentDown("h2");
  rig.clock.advance(50);
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostname: "h1" }).body, { hostname: "h1" });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_UP", "UP at once");
  assert.deepEqual(rig.store.maintenance.get("h1"), {
    hostname: "h1",
    state: "HOST_STATE_UP",
    startTimeMs: 50,
  });
  assert.deepEqual(rig.hm.completedMaintenance(), ["h1"]);
  // The cluster manager still reports the machine draining (a new leader's first look): not adopted back.
  rig.hm.adoptMaintenance("h1", "HOST_STATE_DRAINING");
  rig.store.settle();
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_UP");
  assert.equal(rig.store.maintenance.get("h1")!.state, "HOST_STATE_UP");
  // Carried: the record goes.
  rig.hm.completionCarried("h1");
  rig.store.settle();
  assert.deepEqual(rig.hm.completedMaintenance(), []);
  assert.deepEqual([...rig.store.maintenance.keys()], ["h2"]);

  // Started again before it was carried: the new maintenance replaces the completion.
  api(rig, "CompleteMaintenance", { hostname: "h2" });
  assert.deepEqual(api(rig, "StartMaintenance", { hostname: "h2" }).body, { hostname: "h2" });
  assert.deepEqual(rig.hm.completedMaintenance(), []);
  assert.equal(rig.store.maintenance.get("h2")!.state, "HOST_STATE_DRAINING");
  rig.hm.completionCarried("h2");
  rig.store.settle();
  assert.equal(rig.store.maintenance.get("h2")!.state, "HOST_STATE_DRAINING", "not deleted");

  // A completion the store refuses is undone: still in maintenance (DRAINED until the sync has the machine
  // down again), nothing to carry.
  rig.hm.machineWentDown("h2");
  rig.store.failNextWrite(new Error("disk full"));
  assert.equal(api(rig, "CompleteMaintenance", { hostname: "h2" }).error?.code, "internal");
  assert.equal(rig.hm.host("h2")!.state, "HOST_STATE_DRAINED");
  assert.deepEqual(rig.hm.completedMaintenance(), []);
});

Deno.test("a stored completion outlives a restart to be carried; without a cluster manager keeping maintenance it is dropped", () => {
  const records = [
    { hostname: "h1", state: "HOST_STATE_UP", startTimeMs: 5 },
    { hostname: "m9", state: "HOST_STATE_UP", startTimeMs: 6 },
  ] as const;
  const rig = hostmgrRig([["h1"]], { clusterMaintenance: true });
  for (const r of records) rig.store.maintenance.set(r.hostname, { ...r });
  rig.hm.recover(records.map((r) => ({ ...r })));
  assert.deepEqual(rig.hm.completedMaintenance(), ["h1", "m9"]);
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_UP" }, "neither in maintenance nor listed DOWN");
  rig.hm.adoptMaintenance("m9", "HOST_STATE_DOWN");
  assert.deepEqual(rig.hm.unregisteredInMaintenance(), [], "the completion wins");
  assert.equal(rig.acquire({ maxHosts: 5 }).leases.length, 1, "h1 takes work");

  const plain = hostmgrRig([["h1"]]);
  for (const r of records) plain.store.maintenance.set(r.hostname, { ...r });
  plain.hm.recover(records.map((r) => ({ ...r })));
  plain.store.settle();
  assert.deepEqual(plain.hm.completedMaintenance(), []);
  assert.equal(plain.store.maintenance.size, 0);
  assert.deepEqual(hostStates(plain), { h1: "HOST_STATE_UP" });
});

Deno.test("a maintenance call without a host name or list says which it got and what was expected", () => {
  const rig = hostmgrRig([["h1"]]);
  assert.deepEqual(api(rig, "StartMaintenance", { hostnames: "h1" }).error, {
    code: "invalid-argument",
    message: 'hostnames: got "h1", expected a non-empty list of host names',
  });
  assert.deepEqual(api(rig, "StartMaintenance", { hostname: 5 }).error, {
    code: "invalid-argument",
    message: "hostname: got 5, expected a host name",
  });
  assert.deepEqual(api(rig, "CompleteMaintenance", {}).error, {
    code: "invalid-argument",
    message: "hostname: missing, expected a host name (or hostnames, a list)",
  });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_UP");
});

Deno.test("a DRAINED host's machine is taken down, DOWN once its agent left; completing it brings it up", () => {
  const rig = hostmgrRig([["h1"], ["h2"]]);
  rig.launch("a-0-1", "h1", 1);
  api(rig, "StartMaintenance", { hostname: "h1" });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DRAINING");
  assert.deepEqual(rig.machineCalls, [], "not while tasks run there");
  rig.backend.emit(finished("a-0-1", "h1"));
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DRAINED", h2: "HOST_STATE_UP" });
  assert.deepEqual(rig.machineCalls, ["down h1"]);

  // Peloton completes only a DOWN host.
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostname: "h1" }).error, {
    code: "failed-precondition",
    message: "cannot complete maintenance on host h1: it is HOST_STATE_DRAINED, its machine is not down " +
      "yet; complete it once it is HOST_STATE_DOWN",
  });
  assert.ok(rig.store.maintenance.has("h1"), "its record kept");

  rig.transport.drain();
  rig.backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "machine down" });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_DOWN");
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DOWN", h2: "HOST_STATE_UP" });
  assert.deepEqual(rig.machineCalls, ["down h1"], "asked once");

  // The machine comes up only once the completion is stored; the host is UP once its agent is back.
  rig.hm.receive({
    kind: "api",
    reqId: 1,
    replyTo: "cli",
    procedure: `${HOST}::CompleteMaintenance`,
    body: { hostname: "h1" },
  });
  assert.deepEqual(rig.machineCalls, ["down h1"], "not before the completion is durable");
  rig.store.settle();
  assert.deepEqual(rig.transport.takeOne("api-reply", "cli").body, { hostname: "h1" });
  assert.deepEqual(rig.machineCalls, ["down h1", "up h1"]);
  assert.deepEqual(
    hostStates(rig),
    { h1: "HOST_STATE_UNKNOWN", h2: "HOST_STATE_UP" },
    "its agent not back yet",
  );
  rig.backend.emit({ kind: "host-up", host: makeHost("h1") });
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_UP", h2: "HOST_STATE_UP" });
  assert.deepEqual(rig.acquire({ maxHosts: 5 }).leases.map((l) => l.hostname).sort(), ["h1", "h2"]);
});

Deno.test("with a backend that takes machines down, a maintenance the store refuses leaves the machine as it was", () => {
  // A start refused: the empty host's machine, being taken down already, comes back up.
  const started = hostmgrRig([["h1"]]);
  started.store.failNextWrite(new Error("disk full"));
  assert.equal(api(started, "StartMaintenance", { hostname: "h1" }).error?.code, "internal");
  assert.deepEqual(started.machineCalls, ["down h1", "up h1"]);
  started.backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "machine down" });
  started.backend.emit({ kind: "host-up", host: makeHost("h1") });
  assert.deepEqual(hostStates(started), { h1: "HOST_STATE_UP" });

  // A completion refused: the machine stays down.
  const rig = hostmgrRig([["h1"]]);
  api(rig, "StartMaintenance", { hostname: "h1" });
  rig.backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "machine down" });
  rig.store.failNextWrite(new Error("disk full"));
  assert.equal(api(rig, "CompleteMaintenance", { hostname: "h1" }).error?.code, "internal");
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DOWN" });
  assert.deepEqual(rig.machineCalls, ["down h1"], "not brought up");
});

Deno.test("after a restart, a host in maintenance is DOWN when its agent registers again, and its machine is taken down again", () => {
  const rig = hostmgrRig([]);
  rig.hm.recover([{ hostname: "h1", state: "HOST_STATE_DRAINING", startTimeMs: 5 }]);
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DRAINING" }, "as stored while not registered");
  // The minicluster of a restarted host manager starts every agent, this one too.
  rig.backend.emit({ kind: "host-up", host: makeHost("h1") });
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DOWN" }, "never DRAINED");
  assert.deepEqual(rig.machineCalls, ["down h1"]);
  assert.deepEqual(rig.acquire().leases, [], "no work");
  rig.backend.emit({ kind: "host-lost", hostname: "h1", agentId: "agent-h1", reason: "machine down" });
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DOWN" });

  // Its agent back while it is DOWN (not through a completion): its machine is taken down again.
  rig.backend.emit({ kind: "host-up", host: makeHost("h1") });
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DOWN" });
  assert.deepEqual(rig.machineCalls, ["down h1", "down h1"]);
});

Deno.test("with a cluster manager keeping maintenance, a DRAINED host is DOWN once its sync has the machine down", () => {
  const rig = hostmgrRig([["h1"], ["h2"]], { clusterMaintenance: true });
  api(rig, "StartMaintenance", { hostname: "h1" });
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DRAINED", h2: "HOST_STATE_UP" });
  assert.equal(api(rig, "CompleteMaintenance", { hostname: "h1" }).error?.code, "failed-precondition");
  rig.transport.drain();
  rig.hm.machineWentDown("h1");
  rig.hm.machineWentDown("h2");
  assert.deepEqual(hostStates(rig), { h1: "HOST_STATE_DOWN", h2: "HOST_STATE_UP" }, "an UP host left alone");
  assert.deepEqual(
    rig.transport.take("host-inventory", "jobmgr").flatMap((m) => m.hosts.map((h) => [h.hostname, h.state])),
    [["h1", "HOST_STATE_DOWN"]],
  );
  assert.deepEqual(api(rig, "CompleteMaintenance", { hostname: "h1" }).body, { hostname: "h1" });
  assert.equal(rig.hm.host("h1")!.state, "HOST_STATE_UP");
});

Deno.test("QueryHosts answers Peloton's HostInfo: ip as the backend reports it or the host is named, goalState DOWN once in maintenance", () => {
  const rig = hostmgrRig([["10.0.0.7"], ["h2", { ip: "10.0.0.2" }], ["h3"]], {}, { machines: false });
  rig.launch("a-0-1", "h2", 1);
  api(rig, "StartMaintenance", { hostname: "h2" });
  api(rig, "StartMaintenance", { hostname: "h3" });
  rig.hm.recover([{ hostname: "10.0.0.9", state: "HOST_STATE_DOWN", startTimeMs: 1 }]);
  type Info = { hostname: string; ip: string; state: string; goalState: string; reservedFor?: string };
  const infos = (api(rig, "QueryHosts", {}).body as { hostInfos: Info[] }).hostInfos;
  assert.deepEqual(infos.map((h) => [h.hostname, h.ip, h.state, h.goalState]), [
    ["10.0.0.7", "10.0.0.7", "HOST_STATE_UP", "HOST_STATE_UP"],
    ["h2", "10.0.0.2", "HOST_STATE_DRAINING", "HOST_STATE_DOWN"],
    ["h3", "", "HOST_STATE_DOWN", "HOST_STATE_DOWN"],
    ["10.0.0.9", "10.0.0.9", "HOST_STATE_DOWN", "HOST_STATE_DOWN"],
  ]);
  // HostInfo's fields, then ours the CLI and the UI show (agent, resources, tasks); nothing else.
  assert.deepEqual(Object.keys(infos[0]), [
    "hostname",
    "ip",
    "state",
    "goalState",
    "labels",
    "currentPool",
    "desiredPool",
    "agentId",
    "resources",
    "tasks",
  ]);
  api(rig, "CompleteMaintenance", { hostname: "h3" });
  const h3 = (api(rig, "QueryHosts", {}).body as { hostInfos: Info[] }).hostInfos.find((h) =>
    h.hostname === "h3"
  );
  assert.deepEqual([h3?.state, h3?.goalState], ["HOST_STATE_UP", "HOST_STATE_UP"]);
});
