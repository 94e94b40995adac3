/** What separate daemons rely on: a lease shared by job managers, a dead engine's hosts, tasks recovered early. */
import assert from "node:assert/strict";
import type { HostLease } from "../messages.ts";
import { makeHost } from "../testing/harness.ts";
import { hostmgrRig, spec } from "./testing.ts";

function setup(trackLeases = false) {
  const r = hostmgrRig([["h1", { cpu: 4 }]], { trackLeases });
  let reqId = 0;
  /** Leases through the message path, as a placement engine does. */
  const lease = (engine: string): HostLease[] => {
    r.hm.receive({ kind: "acquire-hosts", reqId: ++reqId, replyTo: engine, filters: [r.filter()] });
    return r.transport.takeOne("hosts-acquired", engine).leases;
  };
  const launch = (leaseId: string, taskId: string, parts?: number) =>
    r.hm.receive({ kind: "launch-tasks", leaseId, hostname: "h1", tasks: [spec(taskId, "h1")], parts });
  return { ...r, lease, launch };
}

Deno.test("a lease split in parts stays valid until every part launched", () => {
  const r = setup();
  const [l] = r.lease("placement@1");
  r.launch(l.leaseId, "j1-0-1", 2);
  r.launch(l.leaseId, "j2-0-1", 2);
  assert.deepEqual(r.backend.launched.flat().map((s) => s.taskId), ["j1-0-1", "j2-0-1"]);
  // Used up now: a third launch with it is refused (TASK_LOST for the job manager).
  r.launch(l.leaseId, "j3-0-1", 2);
  assert.equal(r.backend.launched.flat().length, 2);
  const lost = r.transport.take("task-statuses", "jobmgr").flatMap((m) => m.statuses);
  assert.deepEqual(lost.map((s) => [s.taskId, s.state]), [["j3-0-1", "TASK_LOST"]]);
});

Deno.test("hosts leased to a placement engine that is gone are free again at once", () => {
  const r = setup(true);
  assert.equal(r.lease("placement@1").length, 1);
  assert.equal(r.lease("placement@2").length, 0, "leased to the first engine");
  r.hm.receive({ kind: "peer-changed", role: "placement", gone: "placement@1" });
  assert.equal(r.lease("placement@2").length, 1);
});

Deno.test("a reserved host leased to a placement engine that is gone is free again at once", () => {
  const r = setup(true);
  r.launch(r.lease("placement@1")[0].leaseId, "small-0-1");
  r.hm.receive({
    kind: "reserve-host",
    reqId: 9,
    replyTo: "placement@1",
    taskId: "big-0-1",
    reservationId: "placement@1@0/1",
    filter: r.filter({ minResources: { cpuMilli: 4000, memMb: 128, diskMb: 0, gpuMilli: 0 }, maxHosts: 1 }),
  });
  r.backend.emit({
    kind: "task-status",
    status: { taskId: "small-0-1", state: "TASK_FINISHED", hostname: "h1", agentId: "agent-h1", timeMs: 1 },
  });
  assert.ok(r.transport.takeOne("reservation-update", "placement@1").lease, "leased to the engine");
  // The engine dies before it places the task there: no one will launch on the lease or give it back.
  r.hm.receive({ kind: "peer-changed", role: "placement", gone: "placement@1" });
  assert.equal(r.lease("placement@2").length, 1);
});

Deno.test("a recovered task that ends before its host registers is not accounted on the host", () => {
  const r = hostmgrRig([["h1", { cpu: 4 }]]);
  r.hm.receive({ kind: "reconcile-tasks", tasks: [spec("gone-0-1", "h2", 3)] });
  r.backend.emit({
    kind: "task-status",
    status: { taskId: "gone-0-1", state: "TASK_GONE", hostname: "", agentId: "", timeMs: 1 },
  });
  r.backend.emit({ kind: "host-up", host: makeHost("h2", { cpu: 4 }) });
  assert.equal(r.hm.host("h2")!.tasks.size, 0);
  assert.equal(r.hm.host("h2")!.free.cpuMilli, 4000);
});
