import assert from "node:assert/strict";
import { resources } from "../model/resources.ts";
import { finished, hostmgrRig } from "./testing.ts";

function reserve(rig: ReturnType<typeof hostmgrRig>, taskId: string, cpu: number) {
  rig.hm.receive({
    kind: "reserve-host",
    reqId: 7,
    replyTo: "placement",
    taskId,
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
  assert.deepEqual([done.taskId, done.lease!.hostname, done.lease!.free.cpuMilli], ["big-0-1", "b", 8000]);
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

Deno.test("cancelling a reservation returns the host; maintenance ends it with a reason", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }], ["b", { cpu: 8 }]]);
  rig.launch("x-0-1", "a", 4);
  rig.launch("y-0-1", "b", 4);
  reserve(rig, "big-0-1", 8);
  rig.hm.receive({ kind: "cancel-reservation", taskId: "big-0-1" });
  rig.hm.receive({ kind: "cancel-reservation", taskId: "big-0-1" });
  assert.equal(rig.acquire({ maxHosts: 5 }).leases.length, 2);
  const again = hostmgrRig([["a", { cpu: 8 }]]);
  again.launch("x-0-1", "a", 4);
  reserve(again, "big-0-1", 8);
  again.hm.startMaintenance("a");
  const [end] = again.transport.take("reservation-update", "placement");
  assert.deepEqual([end.lease, end.reason], [undefined, "host a went into maintenance"]);
});

Deno.test("a host that already has room completes the reservation at once", () => {
  const rig = hostmgrRig([["a", { cpu: 8 }]]);
  assert.equal(reserve(rig, "t-0-1", 2).hostname, "a");
  assert.equal(rig.transport.takeOne("reservation-update", "placement").lease!.hostname, "a");
});
