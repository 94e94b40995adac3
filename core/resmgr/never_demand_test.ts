import assert from "node:assert/strict";
import type { RmTask } from "../messages.ts";
import type { RespoolConfig } from "../model/config_types.ts";
import { type Resources, resources } from "../model/resources.ts";
import { makePorts, makeRespoolConfig, makeRmTask } from "../testing/harness.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "./resmgr.ts";
import { ROOT_ID } from "./respool_tree.ts";

function setup() {
  const ports = makePorts();
  const config = {
    ...DEFAULT_RESMGR_CONFIG,
    preemption: { ...DEFAULT_RESMGR_CONFIG.preemption, periodMs: 1_000, sustainedOverAllocationCount: 3 },
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
  const capacity = (cpu: number) =>
    rm.receive({
      kind: "cluster-capacity",
      reqId: 0,
      capacity: { physical: resources(cpu * 1000, 200_000), slack: resources(0, 0) },
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
  return { rm, pool, setLimit, capacity, gang, run, kill };
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
