import assert from "node:assert/strict";
import type { RmTask } from "../messages.ts";
import type { RespoolConfig } from "../model/config_types.ts";
import { resources } from "../model/resources.ts";
import type { TaskState } from "../model/states.ts";
import { makePorts, makeRespoolConfig, makeRmTask, type PoolAmount } from "../testing/harness.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "./resmgr.ts";
import { ROOT_ID } from "./respool_tree.ts";

const PERIOD = 1_000;

function setup(
  preemption: Partial<typeof DEFAULT_RESMGR_CONFIG.preemption> = {},
  extra: Partial<typeof DEFAULT_RESMGR_CONFIG> = {},
) {
  const ports = makePorts();
  const config = {
    ...DEFAULT_RESMGR_CONFIG,
    ...extra,
    placementRetryBackoffMs: 0,
    preemption: {
      ...DEFAULT_RESMGR_CONFIG.preemption,
      periodMs: PERIOD,
      sustainedOverAllocationCount: 3,
      ...preemption,
    },
  };
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, config);
  const pool = (
    id: string,
    amounts: Partial<Record<"cpu" | "memory", PoolAmount>>,
    extra: Partial<RespoolConfig> = {},
  ) => {
    const res = rm.tree.create(id, ROOT_ID, makeRespoolConfig(id, { memory: 100_000, ...amounts }, extra));
    assert.ok(res.ok);
    return res.value;
  };
  const capacity = (cpu: number, memMb = 200_000, slackCpu = 0) =>
    rm.receive({
      kind: "cluster-capacity",
      reqId: 0,
      capacity: { physical: resources(cpu * 1000, memMb), slack: resources(slackCpu * 1000, 0) },
    });
  let seq = 0;
  /** Enqueues `n` single-task gangs of one core in `pool`; returns their task ids. */
  const enqueue = (pool: string, n: number, extra: Partial<RmTask> = {}) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const task = makeRmTask({ jobId: `${pool}${++seq}`, respoolId: pool, preemptible: true, ...extra });
      rm.receive({ kind: "enqueue-gangs", gangs: [{ tasks: [task] }] });
      ids.push(task.taskId);
    }
    return ids;
  };
  const update = (taskId: string, state: TaskState, timeMs = ports.clock.now()) =>
    rm.receive({ kind: "task-updates", updates: [{ taskId, state, hostname: "h", timeMs }] });
  const state = (taskId: string) => rm.tasks.get(taskId)?.state;
  let reqId = 0;
  const dequeue = (limit = 100) => {
    rm.receive({ kind: "dequeue-gangs", reqId: ++reqId, replyTo: "placement", limit, timeoutMs: 0 });
    return ports.transport.take("gangs", "placement").flatMap((r) => r.gangs.flatMap((g) => g.tasks));
  };
  const placements = () => {
    rm.receive({ kind: "get-placements", reqId: ++reqId, replyTo: "jobmgr", limit: 100, timeoutMs: 0 });
    return ports.transport.takeOne("placements", "jobmgr");
  };
  return { ...ports, rm, pool, capacity, enqueue, update, state, dequeue, placements };
}

/** Pools a and b (cpu reservation 2, limit 4) on 4 cores; a runs 4 tasks started at 1..4 s, then b wants 2. */
function contended(preemption = {}, extra: Partial<typeof DEFAULT_RESMGR_CONFIG> = {}) {
  const s = setup(preemption, extra);
  const a = s.pool("a", { cpu: { reservation: 2, limit: 4 } });
  const b = s.pool("b", { cpu: { reservation: 2, limit: 4 } });
  const aIds = s.enqueue("a", 4);
  s.capacity(4); // an entitlement cycle with only a's demand: a may borrow b's share
  s.rm.schedule();
  aIds.forEach((id, i) => s.update(id, "RUNNING", (i + 1) * 1000));
  const bIds = s.enqueue("b", 2);
  s.capacity(4); // the next entitlement cycle sees b's demand
  return { ...s, a, b, aIds, bIds };
}

Deno.test("a pool over its entitlement for N checks has its latest-started running tasks preempted, once", () => {
  const { rm, a, b, aIds, bIds, state, update, placements } = contended();
  assert.deepEqual([a.entitlement.cpu, b.entitlement.cpu], [2, 2]);
  rm.schedule();
  assert.deepEqual(bIds.map(state), ["READY", "READY"], "b is admitted within its entitlement at once");
  rm.preempt();
  rm.preempt();
  assert.equal(a.overAllocatedChecks, 2);
  assert.equal(rm.preempted.running, 0, "not before the over-allocation is sustained");
  rm.preempt();
  assert.equal(a.overAllocatedChecks, 0, "reset after the pool is processed");
  assert.deepEqual(aIds.map(state), ["RUNNING", "RUNNING", "PREEMPTING", "PREEMPTING"]);
  assert.deepEqual([rm.preempted.running, a.preempted], [2, 2]);
  const reply = placements();
  assert.deepEqual(reply.preemptions, [
    { taskId: aIds[3], reason: "PREEMPTION_REASON_REVOKE_RESOURCES" },
    { taskId: aIds[2], reason: "PREEMPTION_REASON_REVOKE_RESOURCES" },
  ]);
  update(aIds[3], "RUNNING");
  assert.equal(state(aIds[3]), "PREEMPTING", "a status while the kill is under way does not undo it");
  for (let i = 0; i < 3; i++) rm.preempt();
  assert.equal(rm.preempted.running, 2, "victims still exiting count as freed: no second round");
  update(aIds[2], "KILLED");
  update(aIds[3], "KILLED");
  assert.equal(a.allocation.total.cpuMilli, 2000, "back at its entitlement");
  for (let i = 0; i < 3; i++) rm.preempt();
  assert.equal(rm.preempted.running, 2);
});

Deno.test("the over-allocation count resets when a check finds the pool within its entitlement", () => {
  const { rm, a, aIds, update } = contended();
  rm.preempt();
  rm.preempt();
  update(aIds[0], "SUCCEEDED");
  update(aIds[1], "SUCCEEDED");
  rm.preempt();
  assert.equal(a.overAllocatedChecks, 0);
  update(aIds[2], "RUNNING");
  rm.receive({
    kind: "track-tasks",
    tasks: [{ task: makeRmTask({ jobId: "x", respoolId: "a", preemptible: true }), state: "RUNNING" }],
  });
  rm.preempt();
  rm.preempt();
  assert.equal(rm.preempted.running, 0);
  rm.preempt();
  assert.equal(rm.preempted.running, 1);
});

/** Advances `ms` a period at a time, the host manager answering each capacity request at once (4 cores). */
function advanceAnswering(s: ReturnType<typeof setup>, ms: number): void {
  for (let t = 0; t < ms; t += PERIOD) {
    s.clock.advance(Math.min(PERIOD, ms - t));
    if (s.transport.take("get-cluster-capacity", "hostmgr").length) s.capacity(4);
  }
}

Deno.test("the preemption timer runs every period when enabled, and not at all when disabled", () => {
  for (const enabled of [true, false]) {
    const s = contended({ enabled });
    s.rm.start();
    advanceAnswering(s, 3 * PERIOD);
    assert.equal(s.rm.preempted.running, enabled ? 2 : 0);
    s.rm.stop();
  }
});

Deno.test("a check at the entitlement period's moment waits for its capacity: it counts against that entitlement", () => {
  // a holds 4 cores with only its own demand; b's demand comes after the last entitlement cycle.
  const s = setup({}, { entitlementPeriodMs: PERIOD });
  s.pool("a", { cpu: { reservation: 2, limit: 4 } });
  s.pool("b", { cpu: { reservation: 2, limit: 4 } });
  const aIds = s.enqueue("a", 4);
  s.capacity(4);
  s.rm.schedule();
  aIds.forEach((id, i) => s.update(id, "RUNNING", (i + 1) * 1000));
  s.enqueue("b", 2);
  s.rm.start();
  s.transport.take("get-cluster-capacity", "hostmgr");
  s.clock.advance(PERIOD);
  assert.equal(
    s.transport.take("get-cluster-capacity", "hostmgr").length,
    1,
    "the entitlement cycle's request",
  );
  assert.equal(s.rm.preempted.running, 0, "no check before the answer");
  // The answer brings an entitlement with b's demand: this period's check counts a as over it.
  s.capacity(4);
  advanceAnswering(s, 2 * PERIOD);
  assert.equal(s.rm.preempted.running, 2, "three checks, each on its moment's entitlement");
  s.rm.stop();
});

Deno.test("a check whose capacity never comes is made at the next period; one off the entitlement's moment at once", () => {
  const s = contended({}, { entitlementPeriodMs: PERIOD });
  s.rm.start();
  s.clock.advance(3 * PERIOD);
  assert.equal(
    s.rm.preempted.running,
    0,
    "the first two periods' checks, each a period late; the third waits",
  );
  s.clock.advance(PERIOD);
  assert.equal(s.rm.preempted.running, 2);
  s.rm.stop();
  // With the entitlement every 2 periods, a check between its moments runs at once.
  const t = contended({}, { entitlementPeriodMs: 2 * PERIOD });
  t.rm.start();
  t.clock.advance(PERIOD);
  t.clock.advance(PERIOD); // waits for the answer
  t.clock.advance(PERIOD); // the one before, late; then this one, at once
  assert.equal(t.rm.preempted.running, 2);
  t.rm.stop();
});

Deno.test("a PREEMPTING task that does not exit is RUNNING again after the timeout and can be chosen again", () => {
  const s = contended({ preemptingTimeoutMs: 5_000 });
  const { rm, aIds, state, placements } = s;
  rm.start();
  advanceAnswering(s, 3 * PERIOD);
  assert.equal(state(aIds[3]), "PREEMPTING");
  placements();
  advanceAnswering(s, 5_000);
  assert.equal(state(aIds[3]), "RUNNING");
  assert.equal(rm.preempted.running, 2, "meanwhile the victims in flight count as freed");
  advanceAnswering(s, 3 * PERIOD);
  assert.equal(rm.preempted.running, 4, "chosen again");
  rm.stop();
});

Deno.test("waiting victims go back to PENDING: READY first, then PLACING; a late placement for them is dropped", () => {
  const s = setup();
  const a = s.pool("a", { cpu: { reservation: 0, limit: 4 } });
  s.pool("b", { cpu: { reservation: 2, limit: 4 } });
  const [run1, run2, placing, ready] = s.enqueue("a", 4);
  s.capacity(4);
  s.rm.schedule();
  assert.deepEqual(s.dequeue(2).map((t) => t.taskId), [run1, run2]);
  s.update(run1, "RUNNING", 1);
  s.update(run2, "RUNNING", 2);
  assert.deepEqual(s.dequeue(1).map((t) => t.taskId), [placing]);
  s.placements();
  s.enqueue("b", 2);
  s.capacity(4);
  for (let i = 0; i < 3; i++) s.rm.preempt();
  assert.deepEqual([s.state(ready), s.state(placing), s.state(run1), s.state(run2)], [
    "PENDING",
    "PENDING",
    "RUNNING",
    "RUNNING",
  ]);
  assert.equal(s.rm.preempted.waiting, 2);
  assert.equal(a.allocation.total.cpuMilli, 2000, "their allocation is released at once");
  assert.equal(a.demand.cpuMilli, 2000, "and they are demand again");
  const reply = s.placements();
  assert.deepEqual(reply.changes.map((c) => [c.taskId, c.state, c.reason]), [
    [ready, "PENDING", "PREEMPTION_REASON_REVOKE_RESOURCES"],
    [placing, "PENDING", "PREEMPTION_REASON_REVOKE_RESOURCES"],
  ]);
  assert.equal(reply.preemptions, undefined);
  assert.deepEqual(
    s.dequeue().map((t) => t.taskId).filter((id) => id === ready),
    [],
    "not offered from READY",
  );
  // The engine answers the attempt made before the preemption: that placement does not launch the task.
  const p = { leaseId: "l", hostname: "h1", agentId: "a1", tasks: [{ taskId: placing, ports: {} }] };
  s.rm.receive({ kind: "set-placements", placements: [p], failed: [] });
  assert.equal(s.state(placing), "PENDING");
  assert.deepEqual(
    s.placements().placements,
    [{ ...p, tasks: [] }],
    "the lease still goes back with the launch",
  );
});

Deno.test("an answer to a preempted attempt is not taken for the task's next attempt", () => {
  const s = setup();
  s.pool("a", { cpu: { reservation: 0, limit: 4 } });
  s.pool("b", { cpu: { reservation: 2, limit: 4 } });
  const ids = s.enqueue("a", 4);
  s.capacity(4);
  s.rm.schedule();
  assert.equal(s.dequeue().length, 4);
  s.enqueue("b", 2);
  s.capacity(4);
  for (let i = 0; i < 3; i++) s.rm.preempt();
  const back = ids.filter((id) => s.state(id) === "PENDING");
  assert.equal(back.length, 2);
  // b finishes; a may have its tasks back, and they are offered again before the old answer arrives.
  for (const [id, e] of s.rm.tasks) if (e.pool.id === "b") s.update(id, "SUCCEEDED");
  s.capacity(4);
  s.rm.schedule();
  assert.deepEqual(s.dequeue().map((t) => t.taskId).sort(), [...back].sort());
  s.rm.receive({
    kind: "set-placements",
    placements: [],
    failed: [{ taskId: back[0], reason: "stale answer" }],
  });
  assert.equal(s.state(back[0]), "PLACING", "the stale failure was used up, the new attempt still waits");
  s.rm.receive({ kind: "set-placements", placements: [], failed: [{ taskId: back[0], reason: "no host" }] });
  assert.equal(s.state(back[0]), "READY");
});

Deno.test("non-preemptible tasks are never preempted, even when their pool is over its entitlement", () => {
  const s = setup();
  const a = s.pool("a", { cpu: { reservation: 0, limit: 4 } });
  s.pool("b", { cpu: { reservation: 4, limit: 4 } });
  s.capacity(4);
  const tasks = [1, 2, 3].map((i) => ({
    task: makeRmTask({ jobId: `np${i}`, respoolId: "a", preemptible: false }),
    state: "RUNNING" as const,
  }));
  s.rm.receive({ kind: "track-tasks", tasks });
  s.enqueue("b", 4);
  s.capacity(4);
  assert.ok(a.allocation.nonSlack.cpuMilli / 1000 > a.nonSlackEntitlement.cpu);
  for (let i = 0; i < 6; i++) s.rm.preempt();
  assert.equal(s.rm.preempted.running + s.rm.preempted.waiting, 0);
});

/** Pool a: cpu 4/8, memory 1000/1000, slack limit 50% (500 MB for revocable work), on 8 cores with slack. */
function withSlack(slackCpu: number) {
  const s = setup();
  const a = s.pool("a", { cpu: { reservation: 4, limit: 8 }, memory: 1000 }, {
    slackLimit: { maxPercent: 50 },
  });
  s.capacity(8, 1000, slackCpu);
  const mem = (memMb: number) => ({ resources: { cpuMilli: 1000, memMb, diskMb: 0, gpuMilli: 0 } });
  return { ...s, a, mem };
}

Deno.test("revocable gangs are admitted against the slack entitlement that ClusterCapacity.slack feeds", () => {
  const { rm, a, enqueue, state, capacity, mem } = withSlack(1);
  const rev = enqueue("a", 3, { revocable: true, ...mem(100) });
  capacity(8, 1000, 1);
  rm.schedule();
  assert.equal(a.slackEntitlement.cpu, 1);
  assert.deepEqual(rev.map(state), ["READY", "PENDING", "PENDING"], "one slack core, one revocable task");
  assert.deepEqual([a.allocation.slack.cpuMilli, a.allocation.nonSlack.cpuMilli], [1000, 0]);
  assert.equal(a.slackDemand.cpuMilli, 2000, "the rest is slack demand, not demand");
  assert.equal(a.demand.cpuMilli, 0);
  assert.equal(a.revocable.size, 2, "waiting in the revocable queue, not blocking the pending queue");
  capacity(8, 1000, 3);
  rm.schedule();
  assert.deepEqual(rev.map(state), ["READY", "READY", "READY"], "more slack, more revocable work");
});

Deno.test("when the slack entitlement shrinks below the slack allocation, revocable tasks go first", () => {
  const { rm, a, enqueue, update, state, capacity, mem } = withSlack(4);
  const rev = enqueue("a", 2, { revocable: true, ...mem(200) });
  capacity(8, 1000, 4);
  rm.schedule();
  rev.forEach((id, i) => update(id, "RUNNING", i + 1));
  assert.equal(a.allocation.slack.memMb, 400);
  // Non-revocable work arrives and claims the pool's memory: less is left for revocable tasks.
  const plain = enqueue("a", 3, mem(250));
  capacity(8, 1000, 4);
  assert.ok(a.slackEntitlement.memory < 400, `slack memory entitlement ${a.slackEntitlement.memory}`);
  rm.schedule();
  plain.forEach((id) => update(id, "RUNNING", 10));
  for (let i = 0; i < 3; i++) rm.preempt();
  assert.deepEqual(rev.map(state), ["RUNNING", "PREEMPTING"], "the latest revocable task frees the 150 MB");
  assert.deepEqual(plain.map(state), ["RUNNING", "RUNNING", "RUNNING"]);
});

Deno.test("losing slack cpus alone preempts nothing: Peloton keeps a pool's slack cpu entitlement at its use", () => {
  const { rm, a, enqueue, update, capacity, mem } = withSlack(4);
  const rev = enqueue("a", 2, { revocable: true, ...mem(100) });
  capacity(8, 1000, 4);
  rm.schedule();
  rev.forEach((id) => update(id, "RUNNING"));
  capacity(8, 1000, 0);
  assert.equal(a.slackEntitlement.cpu, 2);
  for (let i = 0; i < 3; i++) rm.preempt();
  assert.equal(rm.preempted.running, 0);
});
