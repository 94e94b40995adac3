/** Several job managers on one resource manager: each gets its own tasks' placements and changes back. */
import assert from "node:assert/strict";
import type { Gang, HostPlacement } from "../messages.ts";
import { makeRmTask } from "../testing/harness.ts";
import { resmgrWithPool } from "../testing/resmgr_pool.ts";
import { DEFAULT_RESMGR_CONFIG } from "./resmgr.ts";

function setup() {
  const base = resmgrWithPool();
  const gang = (jobId: string): Gang => ({ tasks: [makeRmTask({ jobId, instanceId: 0, respoolId: "a" })] });
  const place = (engine: string, lease: string): HostPlacement => {
    const tasks = base.dequeue(engine).flatMap((g) => g.tasks).map((t) => ({ taskId: t.taskId, ports: {} }));
    return { leaseId: lease, hostname: "h1", agentId: "a1", tasks };
  };
  return { ...base, gang, place };
}

Deno.test("placements and changes go to the job manager that enqueued the tasks", () => {
  const { rm, clock, gang, place, poll } = setup();
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("j1")], owner: "jobmgr@a" });
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("j2")], owner: "jobmgr@b" });
  rm.schedule();
  clock.advance(0);
  // One lease holding tasks of both owners is split in two parts that share it.
  const p = place("placement@1", "lease-1");
  rm.receive({ kind: "set-placements", placements: [p], failed: [] });
  const a = poll("jobmgr@a"), b = poll("jobmgr@b");
  assert.deepEqual(a.placements.map((x) => [x.leaseId, x.parts, x.tasks.map((t) => t.taskId)]), [
    ["lease-1", 2, ["j1-0-1"]],
  ]);
  assert.deepEqual(b.placements.map((x) => [x.leaseId, x.parts, x.tasks.map((t) => t.taskId)]), [
    ["lease-1", 2, ["j2-0-1"]],
  ]);
  assert.ok(a.changes.every((c) => c.taskId.startsWith("j1-")) && a.changes.length > 0);
  assert.ok(b.changes.every((c) => c.taskId.startsWith("j2-")) && b.changes.length > 0);
});

Deno.test("a job manager that takes a task over gets its changes; a gone one's leases are released", () => {
  const { rm, transport, gang, place, poll } = setup();
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("j1")], owner: "jobmgr@a" });
  rm.schedule();
  rm.receive({ kind: "set-placements", placements: [place("placement@1", "lease-1")], failed: [] });
  // jobmgr@a dies before it polls: its placement's lease goes back to the host manager.
  rm.receive({ kind: "peer-changed", role: "jobmgr", gone: "jobmgr@a" });
  assert.deepEqual(transport.takeOne("release-hosts", "hostmgr").leaseIds, ["lease-1"]);
  // jobmgr@b adopts the job and registers the launched task as its own.
  rm.receive({
    kind: "track-tasks",
    tasks: [{ task: makeRmTask({ jobId: "j1", instanceId: 0, respoolId: "a" }), state: "RUNNING" }],
    owner: "jobmgr@b",
  });
  assert.equal(rm.tasks.get("j1-0-1")?.owner, "jobmgr@b");
  assert.deepEqual(poll("jobmgr@a").placements, []);
});

Deno.test("tasks a gone placement engine held are offered for placement again at once", () => {
  const { rm, clock, gang, place } = setup();
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("j1")], owner: "jobmgr@a" });
  rm.schedule();
  place("placement@1", "lease-1");
  assert.equal(rm.tasks.get("j1-0-1")?.state, "PLACING");
  rm.receive({ kind: "peer-changed", role: "placement", gone: "placement@1" });
  assert.equal(rm.tasks.get("j1-0-1")?.state, "READY");
  clock.advance(DEFAULT_RESMGR_CONFIG.placementRetryBackoffMs);
  rm.schedule();
  assert.equal(place("placement@2", "lease-2").tasks.length, 1);
});

Deno.test("placements a gone job manager was handed but had not launched go to the next one at once", () => {
  const { rm, transport, gang, place, poll } = setup();
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("j1")], owner: "jobmgr@a" });
  rm.schedule();
  rm.receive({ kind: "set-placements", placements: [place("placement@1", "lease-1")], failed: [] });
  assert.deepEqual(poll("jobmgr@a").placements.map((p) => p.leaseId), ["lease-1"]);
  // jobmgr@a dies between the hand-over and the launch: the job's next owner gets the placement and its
  // lease now, not after the launching timeout with the hosts leased all the while.
  rm.receive({ kind: "peer-changed", role: "jobmgr", gone: "jobmgr@a" });
  assert.deepEqual(transport.take("release-hosts", "hostmgr"), []);
  const b = poll("jobmgr@b");
  assert.deepEqual(b.placements.map((p) => [p.leaseId, p.tasks.map((t) => t.taskId)]), [["lease-1", [
    "j1-0-1",
  ]]]);
  // The task's changes go to whichever job manager asks until one takes its job over.
  assert.equal(rm.tasks.get("j1-0-1")?.owner, undefined);
  assert.deepEqual(poll("jobmgr@b").placements, []);
});

Deno.test("a gone job manager's placement goes to the job manager that already took its task over", () => {
  const { rm, transport, gang, place, poll } = setup();
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("j1")], owner: "jobmgr@a" });
  rm.schedule();
  rm.receive({ kind: "set-placements", placements: [place("placement@1", "lease-1")], failed: [] });
  poll("jobmgr@a");
  rm.receive({
    kind: "track-tasks",
    tasks: [{ task: makeRmTask({ jobId: "j1", instanceId: 0, respoolId: "a" }), state: "LAUNCHING" }],
    owner: "jobmgr@b",
  });
  rm.receive({ kind: "peer-changed", role: "jobmgr", gone: "jobmgr@a" });
  assert.deepEqual(transport.take("release-hosts", "hostmgr"), []);
  assert.deepEqual(poll("jobmgr@c").placements, []);
  assert.deepEqual(poll("jobmgr@b").placements.map((p) => p.leaseId), ["lease-1"]);
});

Deno.test("a gone job manager's placement whose tasks were sent again meanwhile returns its lease", () => {
  const { rm, transport, gang, place, poll } = setup();
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("j1")], owner: "jobmgr@a" });
  rm.schedule();
  rm.receive({ kind: "set-placements", placements: [place("placement@1", "lease-1")], failed: [] });
  poll("jobmgr@a");
  // jobmgr@b took the job over first and queued the unlaunched task again: no one will launch on lease-1.
  rm.receive({ kind: "enqueue-gangs", gangs: [gang("j1")], owner: "jobmgr@b" });
  rm.receive({ kind: "peer-changed", role: "jobmgr", gone: "jobmgr@a" });
  assert.deepEqual(transport.takeOne("release-hosts", "hostmgr").leaseIds, ["lease-1"]);
  assert.deepEqual(poll("jobmgr@b").placements, []);
});
