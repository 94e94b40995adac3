import assert from "node:assert/strict";
import type { RmTask } from "../messages.ts";
import type { RespoolConfig } from "../model/config_types.ts";
import { makeQueuedGang, makeRespoolConfig } from "../testing/harness.ts";
import { canAdmit, dequeueGangs, fits, neverAdmits } from "./admission.ts";
import { admissionWaits } from "./admission_waits.ts";
import { RespoolNode } from "./respool_node.ts";
import type { QueuedGang } from "./queued_gang.ts";
import { TaskTable } from "./task_table.ts";
import { scalar } from "./scalar.ts";

/** Pool /a: cpu reservation 4, limit 10; memory 100,000; controller limit 50% of the reservation. */
function pool(overrides: Partial<RespoolConfig> = {}): RespoolNode {
  const config = makeRespoolConfig("a", { cpu: { reservation: 4, limit: 10 }, memory: 100_000 }, {
    controllerLimit: { maxPercent: 50 },
    ...overrides,
  });
  const node = new RespoolNode("a", "/a", config);
  node.nonSlackEntitlement = scalar({ cpu: 8, memory: 100_000 });
  node.slackEntitlement = scalar({ cpu: 2, memory: 10_000 });
  return node;
}

/** The gangs' tasks, in pool `home`; admission only looks at the pool it is given. */
const table = new TaskTable();
const home = pool();
/** A queued gang of `n` one-core, 128 MB tasks (preemptible unless told). */
const gang = (n: number, extra: Partial<RmTask> = {}): QueuedGang => makeQueuedGang(table, home, n, extra);

function run(node: RespoolNode, { limit = 1000, preemption = true } = {}): QueuedGang[] {
  const out: QueuedGang[] = [];
  dequeueGangs(node, limit, preemption, out);
  return out;
}

const jobs = (gangs: Iterable<QueuedGang>) => [...gangs].map((g) => table.task[g.rows[0]]!.jobId);

Deno.test("gangs are admitted whole against the non-slack entitlement; demand becomes allocation by type", () => {
  const a = pool();
  const first = gang(3), second = gang(3), third = gang(3);
  for (const g of [first, second, third]) a.enqueue(g);
  assert.equal(a.demand.cpuMilli, 9000);
  assert.equal(a.queuedTasks, 9);
  assert.deepEqual(
    run(a),
    [first, second],
    "6 cores fit in 8; 9 do not, and none of the third gang is taken",
  );
  assert.equal(a.pending.peek(), third);
  assert.equal(a.demand.cpuMilli, 3000);
  assert.equal(a.queuedTasks, 3);
  const al = a.allocation;
  assert.deepEqual([al.total.cpuMilli, al.nonSlack.cpuMilli, al.slack.cpuMilli], [6000, 6000, 0]);
  assert.deepEqual([al.nonPreemptible.cpuMilli, al.controller.cpuMilli], [0, 0]);
  assert.equal(al.total.memMb, 6 * 128);
});

Deno.test("revocable gangs are admitted against the slack entitlement and slack allocation only", () => {
  const a = pool();
  const rev = () => gang(1, { revocable: true });
  const r1 = rev(), r2 = rev(), r3 = rev(), plain = gang(8);
  for (const g of [r1, r2, r3, plain]) a.enqueue(g);
  assert.equal(a.slackDemand.cpuMilli, 3000, "revocable work is slack demand");
  assert.equal(a.demand.cpuMilli, 8000);
  const out = run(a);
  assert.deepEqual(out, [r1, r2, plain], "a third revocable core exceeds slack 2 and waits aside");
  assert.deepEqual(jobs(a.revocable), jobs([r3]));
  assert.equal(a.allocation.slack.cpuMilli, 2000);
  assert.equal(
    a.allocation.nonSlack.cpuMilli,
    8000,
    "slack allocation does not use the non-slack entitlement",
  );
  assert.equal(a.slackDemand.cpuMilli, 1000);
});

Deno.test("a gang the pending queue cannot admit moves aside (non-preemptible, controller, revocable) or stops it", () => {
  const a = pool({ controllerLimit: { maxPercent: 25 } });
  a.nonSlackEntitlement = scalar({ cpu: 3, memory: 100_000 });
  const filler = gang(3), np = gang(1, { preemptible: false }), ctl = gang(1, { controller: true });
  const rev = gang(3, { revocable: true }), blocker = gang(1), behind = gang(1);
  for (const g of [filler, np, ctl, rev, blocker, behind]) a.enqueue(g);
  assert.deepEqual(run(a), [filler]);
  assert.deepEqual(jobs(a.nonPreemptible), jobs([np]));
  assert.deepEqual(jobs(a.controller), jobs([ctl]));
  assert.deepEqual(jobs(a.revocable), jobs([rev]));
  assert.deepEqual(jobs(a.pending), jobs([blocker, behind]), "a plain gang that does not fit stops its pool");
  assert.equal(a.demand.cpuMilli, 4000, "moving between queues keeps the demand");
  assert.equal(a.slackDemand.cpuMilli, 3000);
});

Deno.test("with preemption off a non-preemptible gang that does not fit blocks the pending queue", () => {
  const a = pool();
  a.nonSlackEntitlement = scalar({ cpu: 1, memory: 100_000 });
  const np = gang(2, { preemptible: false }), small = gang(1);
  a.enqueue(np);
  a.enqueue(small);
  assert.deepEqual(run(a, { preemption: false }), []);
  assert.equal(a.nonPreemptible.size, 0);
  assert.deepEqual(jobs(a.pending), jobs([np, small]));
});

Deno.test("queues are admitted non-preemptible, controller, revocable, then pending", () => {
  const a = pool();
  const p = gang(1), r = gang(1, { revocable: true }), c = gang(1, { controller: true });
  const n = gang(1, { preemptible: false });
  a.enqueue(p);
  for (const [g, kind] of [[r, "revocable"], [c, "controller"], [n, "nonPreemptible"]] as const) {
    a.enqueue(g);
    a.queue(kind).push(a.pending.remove((x) => x === g)!);
  }
  assert.deepEqual(run(a), [n, c, r, p]);
});

Deno.test("within a queue higher priority goes first, FIFO within a priority", () => {
  const a = pool();
  const low1 = gang(1, { priority: 1 }), high = gang(1, { priority: 7 }), low2 = gang(1, { priority: 1 });
  for (const g of [low1, high, low2]) a.enqueue(g);
  assert.deepEqual(run(a), [high, low1, low2]);
});

Deno.test("controller gangs stay within reservation × controllerLimit.maxPercent", () => {
  const a = pool(); // 4 cores reserved, 50% → 2 cores for controllers
  const c1 = gang(1, { controller: true }), c2 = gang(1, { controller: true });
  const c3 = gang(1, { controller: true }), plain = gang(1);
  for (const g of [c1, c2, c3, plain]) a.enqueue(g);
  assert.deepEqual(run(a), [c1, c2, plain]);
  assert.deepEqual(jobs(a.controller), jobs([c3]));
  assert.equal(a.allocation.controller.cpuMilli, 2000);
  const two = gang(2, { controller: true });
  assert.equal(two.controller, false, "only a one-task gang is a controller gang");
  assert.ok(canAdmit(a, two, true));
  const unlimited = pool({ controllerLimit: undefined });
  unlimited.allocation.controller.cpuMilli = 100_000;
  assert.ok(canAdmit(unlimited, gang(1, { controller: true }), true), "no controller limit set: no check");
});

Deno.test("non-preemptible gangs may not use elastic resources beyond the reservation, when preemption is on", () => {
  const on = pool(), off = pool();
  for (const node of [on, off]) for (let i = 0; i < 6; i++) node.enqueue(gang(1, { preemptible: false }));
  assert.equal(run(on).length, 4, "4 cores reserved; the entitlement (8) is not what limits them");
  assert.equal(on.allocation.nonPreemptible.cpuMilli, 4000);
  assert.equal(on.nonPreemptible.size, 2);
  assert.equal(
    run(off, { preemption: false }).length,
    6,
    "with preemption off the entitlement alone decides",
  );
});

Deno.test("admission within Peloton's epsilon counts as fitting", () => {
  const need = { cpuMilli: 1000, memMb: 0, diskMb: 0, gpuMilli: 0 };
  const none = { cpuMilli: 0, memMb: 0, diskMb: 0, gpuMilli: 0 };
  assert.ok(fits(none, need, scalar({ cpu: 0.9992 })));
  assert.ok(!fits(none, need, scalar({ cpu: 0.999 })));
  assert.ok(!fits(none, { ...none, gpuMilli: 1000 }, scalar({ cpu: 10 })), "every dimension is checked");
});

Deno.test("the limit counts admitted gangs and moves aside, per pass", () => {
  const a = pool();
  a.nonSlackEntitlement = scalar({ cpu: 100, memory: 100_000 });
  for (let i = 0; i < 5; i++) a.enqueue(gang(1));
  assert.equal(run(a, { limit: 2 }).length, 2);
  assert.equal(a.pending.size, 3);
});

Deno.test("each queue gets the limit less the gangs admitted so far: a head that cannot go does not use up the next queue's", () => {
  const a = pool();
  const first = gang(2, { preemptible: false }), np = gang(3, { preemptible: false });
  a.enqueue(first);
  a.enqueue(np);
  assert.deepEqual(run(a, { limit: 1 }), [first]);
  assert.deepEqual(run(a, { limit: 1 }), [], "5 non-preemptible cores are over the reservation of 4");
  assert.equal(a.queue("nonPreemptible").peek(), np, "moved to its side queue");
  const small = gang(1);
  a.enqueue(small);
  // Peloton's DequeueGangs: left = limit - len(admitted) for each queue in turn.
  assert.deepEqual(
    run(a, { limit: 1 }),
    [small],
    "the side queue's head failed; the pending queue still has 1",
  );
  assert.equal(a.queue("nonPreemptible").peek(), np);
});

Deno.test("a gang whose tasks were all dropped is discarded; a partly dropped gang keeps its place", () => {
  const a = pool();
  a.nonSlackEntitlement = scalar({ cpu: 2, memory: 100_000 });
  const big = gang(3), gone = gang(1), small = gang(1);
  for (const g of [gone, big, small]) a.enqueue(g);
  a.dropQueuedTask(gone, gone.rows[0]);
  a.dropQueuedTask(big, big.rows[2]);
  assert.equal(big.resources.cpuMilli, 2000);
  assert.equal(a.demand.cpuMilli, 3000);
  assert.equal(a.queuedTasks, 3);
  assert.deepEqual(run(a), [big], "the shrunk gang is still ahead of the one behind it, and now fits");
  assert.equal(a.pending.size, 1);
});

Deno.test("a gang over the pool's limit keeps its place at the head without holding up the gangs behind it", () => {
  const a = pool();
  // 11 cores: more than the limit of 10, so never admitted; 1 GPU of a pool that lists none (limit 0).
  const tooBig = gang(11),
    gpu = gang(1, { resources: { cpuMilli: 1000, memMb: 128, diskMb: 0, gpuMilli: 1000 } });
  const small = gang(2), over = gang(7), after = gang(1);
  for (const g of [tooBig, gpu, small, over, after]) a.enqueue(g);
  assert.ok(neverAdmits(a, tooBig) && neverAdmits(a, gpu) && !neverAdmits(a, over));
  // `over` fits the limit but not the entitlement left (8 - 2): Peloton's FIFO, it holds up `after`.
  assert.deepEqual(run(a), [small]);
  assert.deepEqual([...a.pending], [tooBig, gpu, over, after], "the passed-over gangs are still first");
  assert.equal(a.queuedTasks, 11 + 1 + 7 + 1);
  // They are no demand for entitlement: nothing would be preempted elsewhere for them.
  assert.deepEqual([a.neverDemand.cpuMilli, a.admissibleDemand().cpuMilli], [12_000, 8_000]);
  // Admission waits name the first gang that never will be admitted, then what holds the queue up.
  const waits = admissionWaits(a, true, true);
  assert.match(
    waits.queues.pending!,
    /^resource pool \/a can never admit the first gang in line \(11 tasks\): it asks for cpu 11, more than its limit of 10; resource pool \/a has no room in its entitlement for the next gang in line \(7 tasks\)/,
  );
});

Deno.test("a non-preemptible gang the pool can never admit stays in the pending queue, blocking no side queue", () => {
  const a = pool();
  a.nonSlackEntitlement = scalar({ cpu: 3, memory: 100_000 });
  // 11 non-preemptible cores: over the limit of 10, never admitted.
  const never = gang(11, { preemptible: false });
  // Non-preemptible and within the reservation, but not within the entitlement left: moved aside.
  const filler = gang(3), np = gang(1, { preemptible: false });
  for (const g of [never, filler, np]) a.enqueue(g);
  assert.deepEqual(run(a), [filler]);
  assert.deepEqual([...a.pending], [never], "passed over, not moved to the non-preemptible queue");
  assert.deepEqual([...a.nonPreemptible], [np]);
  // Room again: the non-preemptible task is admitted from its side queue, with the never-admissible gang
  // still waiting (before, it headed that queue and held it up for good).
  a.nonSlackEntitlement = scalar({ cpu: 8, memory: 100_000 });
  assert.deepEqual(run(a), [np]);
  assert.deepEqual([...a.pending], [never]);
});

Deno.test("a never-admissible gang already at a side queue's head is passed over there too", () => {
  const a = pool();
  const never = gang(11, { preemptible: false }), np = gang(1, { preemptible: false });
  // As a queue restored, or a limit lowered, may leave it: first in the non-preemptible queue.
  a.nonPreemptible.push(never);
  a.nonPreemptible.push(np);
  assert.deepEqual(run(a), [np]);
  assert.deepEqual([...a.nonPreemptible], [never]);
  const waits = admissionWaits(a, true, true);
  assert.match(
    waits.queues.nonPreemptible!,
    /^resource pool \/a can never admit the first gang in line \(11 tasks\): it asks for cpu 11, more than its limit of 10$/,
  );
});
