import assert from "node:assert/strict";
import { resources } from "../model/resources.ts";
import { finished, hostmgrRig, spec } from "./testing.ts";

function reserve(rig: ReturnType<typeof hostmgrRig>, taskId: string, cpu: number, reservationId = "r1") {
  rig.hm.receive({
    kind: "reserve-host",
    reqId: 7,
    replyTo: "placement",
    taskId,
    reservationId,
    filter: rig.filter({ minResources: resources(cpu * 1000, 128), maxHosts: 1, tasks: 1 }),
  });
  return rig.transport.takeOne("host-reserved", "placement");
}

Deno.test("a reserved host goes to no one else; once its tasks end it is leased to the waiting task", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 8 }]]);
  rig.launch("s-0-1", "a", 7);
  rig.launch("s-1-1", "b", 5);
  rig.launch("s-2-1", "b", 1);
  assert.equal(reserve(rig, "big-0-1", 8).hostname, "b", "b has the most room already");
  const seen = rig.acquire({ minResources: resources(1000, 128), maxHosts: 5 });
  assert.deepEqual(seen.leases.map((l) => l.hostname), ["a"]);
  assert.deepEqual(seen.rejections, { "host reserved for a large task": 1 });
  rig.hm.receive({ kind: "release-hosts", leaseIds: seen.leases.map((l) => l.leaseId) });
  rig.backend.emit(finished("s-1-1", "b"));
  assert.deepEqual(rig.transport.take("reservation-update"), [], "still short of 8 cpus");
  assert.deepEqual(rig.acquire({ minResources: resources(1000, 128), requiredHost: "b" }).rejections, {
    "host reserved for a large task": 1,
  });
  rig.backend.emit(finished("s-2-1", "b"));
  const [done] = rig.transport.take("reservation-update", "placement");
  assert.deepEqual(
    [done.taskId, done.reservationId, done.lease!.hostname, done.lease!.free.cpuMilli],
    ["big-0-1", "r1", "b", 8000],
  );
  assert.equal(rig.hm.host("b")!.reservedFor, undefined);
  assert.ok(rig.hm.host("b")!.leaseId, "leased to the engine, not back in the pool");
});

Deno.test("the reserved host is the one closest to fitting", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 8 }], ["c", { cpu: 8 }]]);
  rig.launch("x-0-1", "a", 7);
  rig.launch("y-0-1", "b", 3);
  rig.launch("z-0-1", "c", 5);
  assert.equal(reserve(rig, "big-0-1", 8).hostname, "b");
});

Deno.test("no host whose total could hold the task: the reservation is refused with the reason", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }]]);
  const r = reserve(rig, "huge-0-1", 64);
  assert.equal(r.hostname, undefined);
  assert.match(r.reason!, /no ready host could ever hold cpu 64/);
});

Deno.test("cancelling a reservation returns the host; maintenance or the host's loss ends it with a reason", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 8 }]]);
  rig.launch("x-0-1", "a", 4);
  rig.launch("y-0-1", "b", 4);
  reserve(rig, "big-0-1", 8);
  rig.hm.receive({ kind: "cancel-reservation", taskId: "big-0-1", reservationId: "r1" });
  rig.hm.receive({ kind: "cancel-reservation", taskId: "big-0-1", reservationId: "r1" });
  assert.equal(rig.acquire({ maxHosts: 5 }).leases.length, 2);
  const again = hostmgrRig([["a", { cpu: 8 }]]);
  again.launch("x-0-1", "a", 4);
  reserve(again, "big-0-1", 8);
  again.hm.startMaintenance("a");
  const [end] = again.transport.take("reservation-update", "placement");
  assert.deepEqual([end.reservationId, end.lease, end.reason], [
    "r1",
    undefined,
    "host a reserved for the task went into maintenance",
  ]);
  const lost = hostmgrRig([["a", { cpu: 8 }]]);
  lost.launch("x-0-1", "a", 4);
  reserve(lost, "big-0-1", 8, "r2");
  lost.backend.emit({ kind: "host-lost", hostname: "a", agentId: "agent-a", reason: "agent removed" });
  const gone = lost.transport.takeOne("reservation-update", "placement");
  assert.deepEqual([gone.reservationId, gone.reason], [
    "r2",
    "host a reserved for the task was lost: agent removed",
  ]);
  assert.equal(lost.hm.reservations.size, 0);
});

Deno.test("a host that already has room completes the reservation at once", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }]]);
  assert.equal(reserve(rig, "t-0-1", 2).hostname, "a");
  assert.equal(rig.transport.takeOne("reservation-update", "placement").lease!.hostname, "a");
});

Deno.test("a reservation is named by its id: a new one replaces the task's old one, and a late cancel of the old leaves it", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 8 }]]);
  rig.launch("x-0-1", "a", 6);
  rig.launch("y-0-1", "b", 4);
  assert.equal(reserve(rig, "big-0-1", 8, "r1").hostname, "b");
  // The engine cancelled r1 and reserved again; the second request overtook the cancel.
  assert.equal(reserve(rig, "big-0-1", 8, "r2").hostname, "b");
  assert.equal(rig.hm.reservations.size, 1, "one reservation per task");
  rig.hm.receive({ kind: "cancel-reservation", taskId: "big-0-1", reservationId: "r1" });
  assert.equal(rig.hm.host("b")!.reservedFor, "big-0-1", "r2 stays");
  assert.deepEqual(rig.acquire({ maxHosts: 5 }).rejections, { "host reserved for a large task": 1 });
  rig.transport.drain();
  rig.hm.receive({ kind: "release-hosts", leaseIds: [rig.hm.host("a")!.leaseId!] });
  rig.backend.emit(finished("y-0-1", "b"));
  const done = rig.transport.takeOne("reservation-update", "placement");
  assert.deepEqual([done.reservationId, done.lease!.hostname], ["r2", "b"]);
  // The same request again (a retry) keeps its host, though another is better now.
  const again = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 8 }]]);
  again.launch("x-0-1", "a", 4);
  again.launch("y-0-1", "b", 5);
  assert.equal(reserve(again, "big-0-1", 8, "r1").hostname, "a");
  again.backend.emit(finished("y-0-1", "b"));
  assert.equal(reserve(again, "big-0-1", 8, "r1").hostname, "a");
  assert.deepEqual(again.transport.take("reservation-update"), []);
});

Deno.test("a task's own reserved host counts by what it lacks, not as reserved for a large task", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 8 }], ["c", { cpu: 8 }]]);
  rig.launch("x-0-1", "a", 4);
  rig.launch("y-0-1", "b", 5);
  rig.launch("z-0-1", "c", 6);
  assert.equal(reserve(rig, "big-0-1", 8).hostname, "a");
  const big = { minResources: resources(8000, 128), maxHosts: 1 };
  assert.deepEqual(rig.acquire({ ...big, reservedFor: "big-0-1" }).rejections, { "insufficient cpu": 3 });
  assert.deepEqual(rig.acquire(big).rejections, {
    "insufficient cpu": 2,
    "host reserved for a large task": 1,
  }, "another task's filter");
  assert.deepEqual(rig.acquire({ ...big, reservedFor: "big-0-1", requiredHost: "a" }).rejections, {
    "insufficient cpu": 1,
  });
});

Deno.test("a placement engine that is gone leaves no host reserved for its tasks", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 8 }]]);
  rig.launch("x-0-1", "a", 4);
  rig.launch("y-0-1", "b", 4);
  assert.equal(reserve(rig, "big-0-1", 8).hostname, "a");
  rig.hm.receive({
    kind: "reserve-host",
    reqId: 8,
    replyTo: "placement@2",
    taskId: "big-1-1",
    reservationId: "other/1",
    filter: rig.filter({ minResources: resources(8000, 128), maxHosts: 1, tasks: 1 }),
  });
  assert.equal(rig.hm.host("b")!.reservedFor, "big-1-1");
  rig.hm.receive({ kind: "peer-changed", role: "placement", gone: "placement" });
  assert.equal(rig.hm.reservations.size, 1, "another engine's reservation stays");
  assert.equal(rig.hm.host("a")!.reservedFor, undefined);
  assert.deepEqual(rig.acquire({ maxHosts: 5 }).leases.map((l) => l.hostname), ["a"]);
});

Deno.test("a reserve request that comes after its own cancel is refused and leaves the task's newer reservation", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 8 }]]);
  rig.launch("x-0-1", "a", 6);
  rig.launch("y-0-1", "b", 4);
  // The engine asked r1, cancelled it and asked r2; r2 and the cancel of r1 overtook r1's request.
  assert.equal(reserve(rig, "big-0-1", 8, "r2").hostname, "b");
  rig.hm.receive({ kind: "cancel-reservation", taskId: "big-0-1", reservationId: "r1" });
  const stale = reserve(rig, "big-0-1", 8, "r1");
  assert.equal(stale.hostname, undefined);
  assert.match(stale.reason!, /reservation r1 has ended already/);
  assert.equal(rig.hm.reservations.of("big-0-1")?.id, "r2");
  assert.equal(rig.hm.host("b")!.reservedFor, "big-0-1");
  rig.backend.emit(finished("y-0-1", "b"));
  const done = rig.transport.takeOne("reservation-update", "placement");
  assert.deepEqual([done.reservationId, done.lease!.hostname], ["r2", "b"]);
});

Deno.test("a reserve request delivered again after its reservation completed reserves no host", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 8 }]]);
  rig.launch("x-0-1", "a", 4);
  rig.launch("y-0-1", "b", 6);
  assert.equal(reserve(rig, "big-0-1", 8, "r1").hostname, "a");
  rig.backend.emit(finished("x-0-1", "a"));
  const done = rig.transport.takeOne("reservation-update", "placement");
  rig.hm.receive({
    kind: "launch-tasks",
    leaseId: done.lease!.leaseId,
    hostname: "a",
    tasks: [spec("big-0-1", "a", 8)],
  });
  // The same request again (a POST retried after its timeout): the engine has placed the task, and would
  // never cancel a second reservation, so it must not hold b for a task that already runs.
  const again = reserve(rig, "big-0-1", 8, "r1");
  assert.equal(again.hostname, undefined);
  assert.match(again.reason!, /reservation r1/);
  assert.equal(rig.hm.reservations.size, 0);
  assert.equal(rig.hm.host("b")!.reservedFor, undefined);
  assert.deepEqual(
    rig.acquire({ minResources: resources(1000, 128), maxHosts: 5 }).leases.map((l) => l.hostname),
    [
      "b",
    ],
  );
});
