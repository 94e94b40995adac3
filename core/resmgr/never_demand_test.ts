import assert from "node:assert/strict";
import type { RmTask } from "../messages.ts";
import type { RespoolConfig } from "../model/config_types.ts";
import { type Resources, resources } from "../model/resources.ts";
import { makePorts, makeRespoolConfig, makeRmTask, type PoolAmount } from "../testing/harness.ts";
import { admissionWaits } from "./admission_waits.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "./resmgr.ts";
import { ROOT_ID } from "./respool_tree.ts";

function setup(preemption = true) {
  const ports = makePorts();
  const config = {
    ...DEFAULT_RESMGR_CONFIG,
    preemption: {
      ...DEFAULT_RESMGR_CONFIG.preemption,
      enabled: preemption,
      periodMs: 1_000,
      sustainedOverAllocationCount: 3,
    },
  };
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, config);
  const poolConfig = (id: string, cpuLimit: number): RespoolConfig =>
    makeRespoolConfig(id, { cpu: { reservation: 5, limit: cpuLimit }, memory: 100_000 });
  const pool = (id: string, cpuLimit = 10) => {
    const res = rm.tree.create(id, ROOT_ID, poolConfig(id, cpuLimit));
    assert.ok(res.ok);
    return res.value;
  };
  const setLimit = (id: string, cpuLimit: number) =>
    assert.ok(rm.tree.update(id, poolConfig(id, cpuLimit)).ok);
  /** A pool of its own config: cpu as given, 100,000 MB of memory reserved unless told. */
  const poolOf = (
    id: string,
    cpu: PoolAmount,
    extra: Partial<RespoolConfig> = {},
    memory: PoolAmount = 100_000,
  ) => {
    const res = rm.tree.create(id, ROOT_ID, makeRespoolConfig(id, { cpu, memory }, extra));
    assert.ok(res.ok);
    return res.value;
  };
  const update = (
    id: string,
    cpu: PoolAmount,
    extra: Partial<RespoolConfig> = {},
    memory: PoolAmount = 100_000,
  ) => assert.ok(rm.tree.update(id, makeRespoolConfig(id, { cpu, memory }, extra)).ok);
  const capacity = (cpu: number, slackCpu = 0) =>
    rm.receive({
      kind: "cluster-capacity",
      reqId: 0,
      capacity: { physical: resources(cpu * 1000, 200_000), slack: resources(slackCpu * 1000, 0) },
    });
  let seq = 0;
  /** Enqueues one gang of `n` one-core, 128 MB tasks of a new job in `pool`; returns their ids. */
  const gang = (pool: string, n: number, extra: Partial<RmTask> = {}) => {
    const jobId = `${pool}${++seq}`;
    const tasks = Array.from(
      { length: n },
      (_, i) =>
        makeRmTask({ jobId, instanceId: i, respoolId: pool, preemptible: true, minInstances: n, ...extra }),
    );
    rm.receive({ kind: "enqueue-gangs", gangs: [{ tasks }] });
    return tasks.map((t) => t.taskId);
  };
  const run = (ids: string[]) =>
    rm.receive({
      kind: "task-updates",
      updates: ids.map((taskId) => ({ taskId, state: "RUNNING" as const, hostname: "h", timeMs: 0 })),
    });
  const kill = (ids: string[]) => rm.receive({ kind: "drop-tasks", taskIds: ids });
  /** Waits as the admission waits say them (what `task list` shows for a PENDING task). */
  const waits = (pool: string) => admissionWaits(rm.tree.get(pool)!, preemption, true).queues;
  return { rm, pool, poolOf, update, setLimit, capacity, gang, run, kill, waits };
}

const cores = (r: Resources) => r.cpuMilli / 1000;

Deno.test("a gang over its pool's limit is no demand for entitlement: no other pool's task is preempted for it", () => {
  const { rm, pool, capacity, gang, run } = setup();
  const a = pool("a"), b = pool("b");
  capacity(10);
  const running = Array.from({ length: 10 }, () => gang("b", 1)).flat();
  rm.schedule();
  run(running);
  // 11 tasks of one core, admitted whole or not at all, in a pool whose cpu limit is 10: never admitted.
  gang("a", 11);
  assert.deepEqual([cores(a.demand), cores(a.neverDemand), cores(a.admissibleDemand())], [11, 11, 0]);
  capacity(10);
  assert.deepEqual([a.entitlement.cpu, b.entitlement.cpu], [0, 10]);
  for (let i = 0; i < 5; i++) rm.preempt();
  assert.equal(rm.preempted.running, 0, "b keeps its cores: nothing a could use them for");
  assert.equal(a.queuedTasks, 11, "still queued, and listed as such");
});

Deno.test("a task asking for a kind its pool has no limit for is no demand for entitlement", () => {
  const { rm, pool, capacity, gang, run } = setup();
  const a = pool("a"), b = pool("b");
  capacity(10);
  const running = Array.from({ length: 10 }, () => gang("b", 1)).flat();
  rm.schedule();
  run(running);
  // The pool lists no gpu: its gpu limit is 0.
  gang("a", 1, { resources: { cpuMilli: 1000, memMb: 128, diskMb: 0, gpuMilli: 1000 } });
  gang("a", 1, { resources: { cpuMilli: 1000, memMb: 128, diskMb: 0, gpuMilli: 1000 } });
  assert.deepEqual([cores(a.demand), cores(a.neverDemand)], [2, 2]);
  capacity(10);
  assert.deepEqual([a.entitlement.cpu, b.entitlement.cpu], [0, 10]);
  for (let i = 0; i < 5; i++) rm.preempt();
  assert.equal(rm.preempted.running, 0);
});

Deno.test("never-admissible demand stays exact as gangs arrive, lose tasks, are admitted or leave, and as the limit moves", () => {
  const { rm, pool, setLimit, capacity, gang, kill } = setup();
  const a = pool("a");
  capacity(100);
  const demand = (): number[] => [cores(a.demand), cores(a.neverDemand), cores(a.admissibleDemand())];
  // Over the cpu limit of 10: 12 tasks of one core, and 3 of four cores.
  const big = gang("a", 12);
  const wide = gang("a", 3, { resources: { cpuMilli: 4000, memMb: 128, diskMb: 0, gpuMilli: 0 } });
  assert.deepEqual(demand(), [24, 24, 0]);
  setLimit("a", 12);
  assert.deepEqual(demand(), [24, 0, 24], "a limit raised to 12 makes both admissible: they count again");
  setLimit("a", 11);
  assert.deepEqual(demand(), [24, 24, 0], "lowered to 11: both stop counting");
  kill(big.slice(0, 1));
  assert.deepEqual(demand(), [23, 12, 11], "a gang that lost a task and fits the limit now counts");
  kill(wide.slice(0, 1));
  assert.deepEqual(demand(), [19, 0, 19]);
  setLimit("a", 9);
  assert.deepEqual(demand(), [19, 11, 8], "11 cores are over 9, 8 are not");
  rm.schedule();
  assert.deepEqual(demand(), [11, 11, 0], "the gang of 8 cores admitted: out of demand");
  assert.equal(cores(a.allocation.nonSlack), 8);
  kill(big.slice(1, 2));
  assert.deepEqual(demand(), [10, 10, 0], "still over the limit after losing one: it still does not count");
  kill(big.slice(2));
  assert.deepEqual(demand(), [0, 0, 0], "every queued task gone: nothing left over");
  assert.equal(a.queuedTasks, 0);
});

/** Pools a and b: cpu reservation 2, limit 4, on 4 cores; b runs 4 tasks, borrowing a's share. */
function borrowed(aExtra: Partial<RespoolConfig> = {}, preemption = true) {
  const s = setup(preemption);
  const a = s.poolOf("a", { reservation: 2, limit: 4 }, aExtra);
  const b = s.poolOf("b", { reservation: 2, limit: 4 });
  s.capacity(4);
  const running = Array.from({ length: 4 }, () => s.gang("b", 1)).flat();
  s.rm.schedule();
  s.run(running);
  return { ...s, a, b };
}

const controllerOf = (cpu: number): Partial<RmTask> => ({
  controller: true,
  resources: { cpuMilli: cpu * 1000, memMb: 128, diskMb: 0, gpuMilli: 0 },
});

Deno.test("a controller task over its pool's controller limit is no demand for entitlement: no task is preempted for it", () => {
  const { rm, a, b, gang, capacity, update, waits } = borrowed({ controllerLimit: { maxPercent: 50 } });
  gang("a", 1, controllerOf(2));
  assert.equal(
    waits("a").controller ?? waits("a").pending,
    "resource pool /a can never admit the first task in line: it asks for cpu 2, more than its controller " +
      "limit (50% of its reservation) of 1",
  );
  assert.deepEqual([cores(a.demand), cores(a.neverDemand), cores(a.admissibleDemand())], [2, 2, 0]);
  capacity(4);
  assert.deepEqual([a.entitlement.cpu, b.entitlement.cpu], [0, 4]);
  for (let i = 0; i < 5; i++) rm.preempt();
  assert.equal(rm.preempted.running, 0, "b keeps its cores: nothing a could use them for");
  // The controller limit raised to the whole reservation (2 cores): it can be admitted, and counts again.
  update("a", { reservation: 2, limit: 4 }, { controllerLimit: { maxPercent: 100 } });
  assert.deepEqual([cores(a.neverDemand), cores(a.admissibleDemand())], [0, 2]);
  capacity(4);
  assert.deepEqual([a.entitlement.cpu, b.entitlement.cpu], [2, 2]);
  // Lowered again, and then the limit removed: no controller limit, no bound.
  update("a", { reservation: 2, limit: 4 }, { controllerLimit: { maxPercent: 25 } });
  assert.deepEqual([cores(a.neverDemand), cores(a.admissibleDemand())], [2, 0]);
  update("a", { reservation: 2, limit: 4 }, { controllerLimit: undefined });
  assert.deepEqual([cores(a.neverDemand), cores(a.admissibleDemand())], [0, 2]);
});

Deno.test("a non-preemptible gang over its pool's reservation is no demand for entitlement, until the reservation covers it", () => {
  const { rm, a, b, gang, capacity, update, waits, kill } = borrowed();
  const np = gang("a", 3, { preemptible: false });
  assert.equal(
    waits("a").nonPreemptible ?? waits("a").pending,
    "resource pool /a can never admit the first gang in line (3 tasks): it asks for cpu 3, more than its " +
      "reservation of 2",
  );
  assert.deepEqual([cores(a.demand), cores(a.neverDemand), cores(a.admissibleDemand())], [3, 3, 0]);
  capacity(4);
  assert.deepEqual([a.entitlement.cpu, b.entitlement.cpu], [0, 4]);
  for (let i = 0; i < 5; i++) rm.preempt();
  assert.equal(rm.preempted.running, 0, "b keeps its cores: a's gang could never run on them");
  // A reservation raised to 3 covers it: it is a's demand again, and b gives back what a is owed.
  update("a", { reservation: 3, limit: 4 });
  assert.deepEqual([cores(a.neverDemand), cores(a.admissibleDemand())], [0, 3]);
  capacity(4);
  assert.deepEqual([a.entitlement.cpu, b.entitlement.cpu], [3, 2], "a's reservation first, then b's");
  // Back to 2, then a task of the gang killed: 2 cores fit the reservation of 2.
  update("a", { reservation: 2, limit: 4 });
  assert.deepEqual([cores(a.neverDemand), cores(a.admissibleDemand())], [3, 0]);
  kill(np.slice(0, 1));
  assert.deepEqual([cores(a.demand), cores(a.neverDemand), cores(a.admissibleDemand())], [2, 0, 2]);
  kill(np.slice(1));
  assert.deepEqual([cores(a.demand), cores(a.neverDemand)], [0, 0]);
});

Deno.test("with preemption off, non-preemptible work is not held to the reservation: it is demand", () => {
  const { a, gang, capacity } = borrowed({}, false);
  gang("a", 3, { preemptible: false });
  assert.deepEqual([cores(a.neverDemand), cores(a.admissibleDemand())], [0, 3]);
  capacity(4);
  assert.equal(a.entitlement.cpu, 2, "its reservation, as its demand asks for more");
});

Deno.test("revocable work over its pool's slack limit is no demand for slack entitlement", () => {
  const { rm, poolOf, gang, capacity, waits } = setup();
  // Memory reservations of 1,000 MB: a slack limit (20%) of 200 MB.
  const a = poolOf("a", { reservation: 2, limit: 4 }, {}, { reservation: 1_000, limit: 100_000 });
  const b = poolOf("b", { reservation: 2, limit: 4 }, {}, { reservation: 1_000, limit: 100_000 });
  const over = { revocable: true, resources: { cpuMilli: 2000, memMb: 500, diskMb: 0, gpuMilli: 0 } };
  gang("a", 1, over);
  assert.match(
    waits("a").revocable ?? waits("a").pending ?? "",
    /can never admit .*more than its slack limit/,
  );
  assert.deepEqual([a.slackDemand.memMb, a.neverSlackDemand.memMb, a.admissibleSlackDemand().cpuMilli], [
    500,
    500,
    0,
  ]);
  const small = { revocable: true, resources: { cpuMilli: 1000, memMb: 10, diskMb: 0, gpuMilli: 0 } };
  const ids = Array.from({ length: 4 }, () => gang("b", 1, small)).flat();
  capacity(4, 4);
  assert.equal(a.slackEntitlement.cpu, 0);
  assert.ok(b.slackEntitlement.cpu > 3.999, "b gets the slack a never uses (to Peloton's float error)");
  rm.schedule();
  assert.deepEqual(ids.map((id) => rm.tasks.get(id)!.state), ["READY", "READY", "READY", "READY"]);
});
