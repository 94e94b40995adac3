import assert from "node:assert/strict";
import type { RmTask } from "../messages.ts";
import { resources } from "../model/resources.ts";
import type { TaskState } from "../model/states.ts";
import { makePorts, makeRespoolConfig, makeRmTask, type PoolAmount } from "../testing/harness.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "./resmgr.ts";
import { ROOT_ID } from "./respool_tree.ts";

const REVOKE = "PREEMPTION_REASON_REVOKE_RESOURCES";

/** Pools a (cpu reservation `aCpu.reservation`) and b on 4 cores; preemption after 3 checks. */
function setup(
  aCpu: PoolAmount = { reservation: 1, limit: 4 },
  bCpu: PoolAmount = { reservation: 3, limit: 4 },
) {
  const ports = makePorts();
  const config = {
    ...DEFAULT_RESMGR_CONFIG,
    preemption: { ...DEFAULT_RESMGR_CONFIG.preemption, periodMs: 1_000, sustainedOverAllocationCount: 3 },
  };
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, config);
  for (const [id, cpu] of [["a", aCpu], ["b", bCpu]] as const) {
    assert.ok(rm.tree.create(id, ROOT_ID, makeRespoolConfig(id, { cpu, memory: 100_000 })).ok);
  }
  const a = rm.tree.get("a")!, b = rm.tree.get("b")!;
  const capacity = () =>
    rm.receive({
      kind: "cluster-capacity",
      reqId: 0,
      capacity: { physical: resources(4000, 200_000), slack: resources(0, 0) },
    });
  /** One gang of `n` one-core tasks of job `jobId` (instances 0..n-1, `minInstances` n); the task ids. */
  const gang = (jobId: string, pool: string, n: number, extra: Partial<RmTask> = {}) => {
    const tasks = Array.from(
      { length: n },
      (_, i) =>
        makeRmTask({ jobId, instanceId: i, respoolId: pool, preemptible: true, minInstances: n, ...extra }),
    );
    rm.receive({ kind: "enqueue-gangs", gangs: [{ tasks }] });
    return tasks.map((t) => t.taskId);
  };
  /** Tasks of their own (one-task gangs). */
  const singles = (jobId: string, pool: string, n: number, extra: Partial<RmTask> = {}) => {
    const tasks = Array.from(
      { length: n },
      (_, i) => makeRmTask({ jobId: `${jobId}${i}`, respoolId: pool, preemptible: true, ...extra }),
    );
    rm.receive({ kind: "enqueue-gangs", gangs: tasks.map((t) => ({ tasks: [t] })) });
    return tasks.map((t) => t.taskId);
  };
  const update = (taskId: string, state: TaskState, timeMs = 0) =>
    rm.receive({ kind: "task-updates", updates: [{ taskId, state, hostname: "h", timeMs }] });
  const state = (taskId: string) => rm.tasks.get(taskId)?.state;
  let reqId = 0;
  const dequeue = () => {
    rm.receive({ kind: "dequeue-gangs", reqId: ++reqId, replyTo: "placement", limit: 100, timeoutMs: 0 });
    return ports.transport.take("gangs", "placement").flatMap((r) => r.gangs);
  };
  const placements = (limit = 100) => {
    rm.receive({ kind: "get-placements", reqId: ++reqId, replyTo: "jobmgr", limit, timeoutMs: 0 });
    return ports.transport.takeOne("placements", "jobmgr");
  };
  /** Places each task on a host of its own. */
  const place = (ids: string[]) =>
    rm.receive({
      kind: "set-placements",
      placements: ids.map((taskId, i) => ({
        leaseId: `l${i}`,
        hostname: `h${i}`,
        agentId: `a${i}`,
        tasks: [{ taskId, ports: {} }],
      })),
      failed: [],
    });
  const preempt = () => {
    for (let i = 0; i < 3; i++) rm.preempt();
  };
  return { ...ports, rm, a, b, capacity, gang, singles, update, state, dequeue, placements, place, preempt };
}

Deno.test("preempting a running gang takes every member, not just enough of them to cover the excess", () => {
  const s = setup();
  const g = s.gang("g", "a", 3);
  s.capacity();
  s.rm.schedule();
  g.forEach((id, i) => s.update(id, "RUNNING", i + 1));
  // b wants its reservation of 3: a's entitlement drops to 1, 2 cores over it.
  s.singles("b", "b", 3);
  s.capacity();
  assert.deepEqual([s.a.entitlement.cpu, s.b.entitlement.cpu], [1, 3]);
  s.preempt();
  assert.deepEqual(g.map(s.state), ["PREEMPTING", "PREEMPTING", "PREEMPTING"], "no member is left running");
  assert.deepEqual([s.rm.preempted.running, s.a.preempted], [3, 3]);
  assert.deepEqual(
    s.placements().preemptions?.map((p) => p.taskId).sort(),
    [...g].sort(),
  );
  // Their exits count as freed: nothing more is taken while they go.
  s.preempt();
  assert.equal(s.rm.preempted.running, 3);
});

Deno.test("a gang's members all count toward what is freed: the gang alone covers the excess", () => {
  const s = setup({ reservation: 1, limit: 4 }, { reservation: 2, limit: 4 });
  const old = s.singles("old", "a", 2);
  const g = s.gang("g", "a", 2);
  s.capacity();
  s.rm.schedule();
  // The gang started at 2 s and 6 s, the other tasks at 4 s and 5 s: the gang, whole since 6 s, goes first
  // and frees 2 cores, the whole excess (task by task: its member of 6 s, then the task of 5 s).
  s.update(g[0], "RUNNING", 2_000);
  s.update(old[0], "RUNNING", 4_000);
  s.update(old[1], "RUNNING", 5_000);
  s.update(g[1], "RUNNING", 6_000);
  s.singles("b", "b", 2);
  s.capacity();
  assert.equal(s.a.entitlement.cpu, 2, "2 cores over");
  s.preempt();
  assert.deepEqual([...g, ...old].map(s.state), ["PREEMPTING", "PREEMPTING", "RUNNING", "RUNNING"]);
  assert.equal(s.rm.preempted.running, 2);
});

Deno.test("a gang ranks as one task: by priority, then as started when its last member started", () => {
  const s = setup({ reservation: 1, limit: 4 }, { reservation: 1, limit: 4 });
  // The gang's members started at 1 s and 4 s, the other task at 3 s: the gang (4 s) goes first.
  const g = s.gang("g", "a", 2);
  const [single] = s.singles("s", "a", 1);
  s.capacity();
  s.rm.schedule();
  s.update(g[0], "RUNNING", 1_000);
  s.update(single, "RUNNING", 3_000);
  s.update(g[1], "RUNNING", 4_000);
  s.singles("b", "b", 2);
  s.capacity();
  assert.equal(s.a.entitlement.cpu, 2, "1 core over");
  s.preempt();
  assert.deepEqual([...g, single].map(s.state), ["PREEMPTING", "PREEMPTING", "RUNNING"]);
  // A gang of higher priority than the other task is taken after it, whatever its start.
  const t = setup({ reservation: 1, limit: 4 }, { reservation: 1, limit: 4 });
  const high = t.gang("g", "a", 2, { priority: 5 });
  const [low] = t.singles("s", "a", 1);
  t.capacity();
  t.rm.schedule();
  high.forEach((id) => t.update(id, "RUNNING", 9_000));
  t.update(low, "RUNNING", 1_000);
  t.singles("b", "b", 2);
  t.capacity();
  t.preempt();
  assert.deepEqual([...high, low].map(t.state), ["RUNNING", "RUNNING", "PREEMPTING"]);
});

Deno.test("a gang with a non-preemptible member is never preempted: other tasks go instead", () => {
  const s = setup({ reservation: 0, limit: 4 }, { reservation: 2, limit: 4 });
  const single = s.singles("s", "a", 2);
  s.capacity();
  s.rm.schedule();
  single.forEach((id) => s.update(id, "RUNNING", 1_000));
  // The gang's preemptible member started last (tracked at 10 s): alone, it would be the first victim.
  s.clock.set(10_000);
  const tasks = [0, 1].map((i) =>
    makeRmTask({ jobId: "g", instanceId: i, respoolId: "a", preemptible: i === 0, minInstances: 2 })
  );
  s.rm.receive({ kind: "track-tasks", tasks: tasks.map((task) => ({ task, state: "RUNNING" as const })) });
  s.singles("b", "b", 2);
  s.capacity();
  s.preempt();
  assert.deepEqual(tasks.map((t) => s.state(t.taskId)), ["RUNNING", "RUNNING"]);
  assert.deepEqual(single.map(s.state), ["PREEMPTING", "PREEMPTING"]);
});

Deno.test("a waiting gang preempted goes back to its queue as one gang", () => {
  const s = setup();
  const g = s.gang("g", "a", 3);
  s.capacity();
  s.rm.schedule();
  // One PLACING attempt out, the others READY: split across states, still one gang.
  assert.equal(s.dequeue().length, 1);
  s.singles("b", "b", 3);
  s.capacity();
  s.preempt();
  assert.deepEqual(g.map(s.state), ["PENDING", "PENDING", "PENDING"]);
  assert.deepEqual([...s.a.pending].map((q) => q.rows.length), [3], "one gang of 3, not 3 of one");
  assert.equal(s.rm.preempted.waiting, 3);
});

Deno.test("a gang partly launched is preempted whole: a placed member's preemption goes with its placement", () => {
  const s = setup();
  const g = s.gang("g", "a", 3);
  s.capacity();
  s.rm.schedule();
  assert.deepEqual(s.dequeue().map((x) => x.tasks.length), [3]);
  s.place(g);
  // The job manager's poll takes two of the three placements; the third stays PLACED here.
  assert.equal(s.placements(2).placements.length, 2);
  s.update(g[0], "RUNNING", 1);
  assert.deepEqual(g.map(s.state), ["RUNNING", "LAUNCHING", "PLACED"]);
  s.singles("b", "b", 3);
  s.capacity();
  s.preempt();
  assert.deepEqual(g.map(s.state), ["PREEMPTING", "PREEMPTING", "PREEMPTING"]);
  // A reply with no room for placements: the launched members' preemptions only. The job manager would
  // skip one of a task it has not launched, so the placed member's waits for its placement.
  const first = s.placements(0);
  assert.deepEqual([first.placements, first.preemptions?.map((p) => [p.taskId, p.reason])], [[], [
    [g[0], REVOKE],
    [g[1], REVOKE],
  ]]);
  const second = s.placements(1);
  assert.deepEqual(second.placements.map((p) => p.tasks[0].taskId), [g[2]]);
  assert.deepEqual(second.preemptions?.map((p) => [p.taskId, p.reason]), [[g[2], REVOKE]]);
});
