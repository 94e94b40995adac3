import assert from "node:assert/strict";
import { resources } from "../model/resources.ts";
import { hostmgrRig } from "./testing.ts";

Deno.test("host slack is reported as cluster slack and lent to revocable work as cpu only", () => {
  const rig = hostmgrRig([["a", { cpu: 4 }], ["b", { cpu: 4 }]]);
  rig.backend.emit({ kind: "host-slack", hostname: "a", slack: resources(3000, 1024) });
  rig.backend.emit({ kind: "host-slack", hostname: "b", slack: resources(500, 0) });
  const cap = rig.transport.take("cluster-capacity", "resmgr").at(-1)!.capacity;
  assert.deepEqual(cap.slack, resources(3500, 1024));
  assert.deepEqual(cap.physical.cpuMilli, 8000);
  // A revocable 2-cpu task fits only where free slack covers its cpu.
  const r = rig.acquire({ minResources: resources(2000, 128), revocable: true });
  assert.deepEqual(r.leases.map((l) => [l.hostname, l.freeSlack.cpuMilli]), [["a", 3000]]);
  assert.deepEqual(r.rejections, { "insufficient revocable cpu": 1 });
  rig.hm.receive({ kind: "release-hosts", leaseIds: r.leases.map((l) => l.leaseId) });
  rig.launch("rev-0-1", "a", 2, { revocable: true });
  const a = rig.hm.host("a")!;
  assert.equal(a.free.cpuMilli, 4000, "revocable cpu comes from slack, not from the regular free cpu");
  assert.equal(a.free.memMb, 8192 - 128, "memory is regular");
  const [again] = rig.acquire({ minResources: resources(1000, 128), revocable: true }).leases;
  assert.equal(again.freeSlack.cpuMilli, 1000);
});

Deno.test("a revocable launch beyond the free slack is LOST", () => {
  const rig = hostmgrRig([["a", { cpu: 4 }]]);
  rig.backend.emit({ kind: "host-slack", hostname: "a", slack: resources(1000, 0) });
  rig.transport.drain();
  rig.launch("rev-0-1", "a", 2, { revocable: true });
  assert.deepEqual(rig.backend.launched, []);
  assert.match(rig.transport.takeOne("task-statuses").statuses[0].message!, /no longer fits/);
});
