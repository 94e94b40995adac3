import assert from "node:assert/strict";
import type { Message, RmTask } from "../messages.ts";
import { makeQueuedGang, makeRespoolConfig } from "../testing/harness.ts";
import { dequeueGangs } from "./admission.ts";
import { admissionWaits } from "./admission_waits.ts";
import type { QueuedGang } from "./queued_gang.ts";
import { RespoolNode } from "./respool_node.ts";
import { scalar } from "./scalar.ts";
import { TaskTable } from "./task_table.ts";

/**
 * Pool /a: cpu reservation 4, limit 10; memory 100,000 MB; gpu reservation and limit 2; controller limit
 * 50%; slack limit 50%; entitlement 8 cores and 1 GPU, slack entitlement 2 cores and 10,000 MB.
 */
function pool(): RespoolNode {
  const config = makeRespoolConfig("a", {
    cpu: { reservation: 4, limit: 10 },
    memory: 100_000,
    gpu: 2,
  }, { controllerLimit: { maxPercent: 50 }, slackLimit: { maxPercent: 50 } });
  const node = new RespoolNode("a", "/a", config);
  node.nonSlackEntitlement = scalar({ cpu: 8, memory: 100_000, gpu: 1 });
  node.slackEntitlement = scalar({ cpu: 2, memory: 10_000 });
  return node;
}

const table = new TaskTable();
/** Queues a gang of `n` tasks of `cpu` cores and 128 MB each (preemptible unless told). */
function enqueue(node: RespoolNode, n: number, cpu = 1, extra: Partial<RmTask> = {}): QueuedGang {
  const resources = { cpuMilli: cpu * 1000, memMb: 128, diskMb: 0, gpuMilli: 0 };
  const gang = makeQueuedGang(table, node, n, { resources, ...extra });
  node.enqueue(gang);
  return gang;
}

const admitAll = (node: RespoolNode, preemption = true) => dequeueGangs(node, 1000, preemption, []);
const queues = (node: RespoolNode, preemption = true) => admissionWaits(node, preemption, true).queues;
const LIMIT = { cpu: 10, memory: 100_000, disk: 0, gpu: 2 };

Deno.test("a pool whose first gangs can be admitted has no waits; a full one says what is used and asked", () => {
  const a = pool();
  assert.deepEqual(admissionWaits(a, true, true), { path: "/a", limit: LIMIT, preemption: true, queues: {} });
  enqueue(a, 8);
  assert.deepEqual(queues(a), {}, "it fits: admitted at the next pass");
  admitAll(a);
  enqueue(a, 2, 0.5);
  assert.deepEqual(queues(a), {
    pending: "resource pool /a has no room in its entitlement for the first gang in line (2 tasks): " +
      "cpu 8 of 8 in use; it asks for cpu 1, memory 256 MB",
  });
  // Before the cluster has reported any capacity, every entitlement is 0: said so.
  assert.deepEqual(admissionWaits(a, true, false).queues, {
    pending: "resource pool /a has no entitlement: the cluster has reported no capacity (no host is up)",
  });
});

Deno.test("a first gang over the pool's limit is passed over: the queue says it never admits it, then what holds the rest", () => {
  const a = pool();
  enqueue(a, 1, 12);
  enqueue(a, 1, 1);
  const never =
    "resource pool /a can never admit the first task in line: it asks for cpu 12, more than its " +
    "limit of 10";
  assert.deepEqual(queues(a), { pending: never }, "the task behind it fits: admitted at the next pass");
  // Peloton's pending queue stopped at it for good; here the one behind is admitted.
  assert.equal(admitAll(a), 1);
  enqueue(a, 1, 9);
  assert.deepEqual(queues(a), {
    pending: `${never}; resource pool /a has no room in its entitlement for the next task in line: cpu 1 ` +
      "of 8 in use; it asks for cpu 9, memory 128 MB",
  });
});

Deno.test("a gang of tasks each within the limit but over it together is said never to be admitted", () => {
  const a = pool();
  // Three tasks of one GPU each; the pool's gpu limit is 2.
  enqueue(a, 3, 1, { resources: { cpuMilli: 1000, memMb: 128, diskMb: 0, gpuMilli: 1000 } });
  assert.deepEqual(queues(a), {
    pending: "resource pool /a can never admit the first gang in line (3 tasks): it asks for gpu 3, more " +
      "than its limit of 2",
  });
  assert.equal(admitAll(a), 0);
});

Deno.test("a gang over a bound of its admitters is said never to be admitted, whichever admitter refuses it first", () => {
  const a = pool();
  // Non-preemptible, 9 cores: within the limit of 10, over the entitlement of 8 and the reservation of 4.
  enqueue(a, 1, 9, { preemptible: false });
  // Passed over where it is, in the pending queue: moved aside, it would hold up its side queue for good.
  assert.deepEqual(queues(a), {
    pending: "resource pool /a can never admit the first task in line: it asks for cpu 9, more than " +
      "its reservation of 4",
  });
  // Without preemption the reservation holds nothing: only the entitlement does, which may grow.
  assert.deepEqual(queues(a, false), {
    pending:
      "resource pool /a has no room in its entitlement for the first task in line: cpu 0 of 8 in use; " +
      "it asks for cpu 9, memory 128 MB",
  });
});

Deno.test("a never-admissible gang stays first in the pending queue, which then says what holds the next one", () => {
  const a = pool();
  // Non-preemptible, 3 GPUs (the limit is 2): passed over at the head of the pending queue, it stays there.
  enqueue(a, 1, 1, {
    preemptible: false,
    resources: { cpuMilli: 1000, memMb: 128, diskMb: 0, gpuMilli: 3000 },
  });
  enqueue(a, 8);
  admitAll(a);
  enqueue(a, 1);
  assert.deepEqual(queues(a), {
    pending: "resource pool /a can never admit the first task in line: it asks for gpu 3, more than " +
      "its limit of 2; resource pool /a has no room in its entitlement for the next task in line: cpu 8 of 8 " +
      "in use; it asks for cpu 1, memory 128 MB",
  });
});

Deno.test("a refused gang the pending queue moves aside speaks for its side queue, not for the pending queue", () => {
  const a = pool();
  // Non-preemptible, 6 cores against a 4-core reservation: never admitted, passed over where it is.
  enqueue(a, 1, 6, { preemptible: false });
  enqueue(a, 1);
  const never = "resource pool /a can never admit the first task in line: it asks for cpu 6, more than its " +
    "reservation of 4";
  assert.deepEqual(queues(a), { pending: never }, "before the pass: the plain task is not held");
  assert.equal(admitAll(a), 1, "the plain task is admitted");
  assert.deepEqual(queues(a), { pending: never }, "after it: the same");
  // A non-preemptible gang that fits the reservation but not the entitlement left moves aside, and speaks
  // for its side queue.
  a.nonSlackEntitlement = scalar({ cpu: 3, memory: 100_000 });
  enqueue(a, 1, 3, { preemptible: false });
  assert.equal(admitAll(a), 0);
  assert.deepEqual(queues(a), {
    pending: never,
    nonPreemptible:
      "resource pool /a has no room in its entitlement for the first task in line: cpu 1 of 3 " +
      "in use; it asks for cpu 3, memory 128 MB",
  });
});

Deno.test("a kind over the cap is named even when the first gang asks for none of it", () => {
  const a = pool();
  // Two GPUs in use against an entitlement that has since shrunk to one (preemption would take one back).
  enqueue(a, 1, 1, { resources: { cpuMilli: 1000, memMb: 128, diskMb: 0, gpuMilli: 2000 } });
  a.nonSlackEntitlement = scalar({ cpu: 8, memory: 100_000, gpu: 2 });
  admitAll(a);
  a.nonSlackEntitlement = scalar({ cpu: 8, memory: 100_000, gpu: 1 });
  enqueue(a, 1);
  assert.equal(
    queues(a).pending,
    "resource pool /a has no room in its entitlement for the first task in line: gpu 2 of 1 in use; it asks " +
      "for cpu 1, memory 128 MB",
  );
});

Deno.test("a gang emptied while queued is skipped: the gang behind it is the one that speaks", () => {
  const a = pool();
  const emptied = enqueue(a, 1, 12);
  a.dropQueuedTask(emptied, emptied.rows[0]);
  enqueue(a, 8);
  admitAll(a);
  enqueue(a, 1);
  assert.match(
    queues(a).pending!,
    /^resource pool \/a has no room in its entitlement .*: cpu 8 of 8 in use;/,
  );
});

Deno.test("controller, reservation and slack waits come from the first gang of their own queues", () => {
  const a = pool();
  // Controller tasks may hold 50% of the 4-core reservation: 2 cores.
  enqueue(a, 1, 2, { controller: true });
  admitAll(a);
  enqueue(a, 1, 1, { controller: true });
  // Non-preemptible work may hold the 4-core reservation (with preemption on).
  enqueue(a, 1, 2, { preemptible: false });
  // Revocable work against the 2-core slack entitlement.
  enqueue(a, 1, 3, { revocable: true });
  admitAll(a);
  const waits = queues(a);
  assert.equal(
    waits.controller,
    "resource pool /a has no room in its controller limit (50% of its reservation) for the first task in " +
      "line: cpu 2 of 2 in use; it asks for cpu 1, memory 128 MB",
  );
  assert.equal(
    waits.revocable,
    "resource pool /a has no room in its slack entitlement (for revocable tasks) for the first task in " +
      "line: cpu 0 of 2 in use; it asks for cpu 3, memory 128 MB",
  );
  assert.equal(waits.pending, undefined);
  // The 2-core non-preemptible task was admitted: 2 of the 4 reserved cores are left, 3 are asked for.
  enqueue(a, 1, 3, { preemptible: false });
  admitAll(a);
  assert.equal(
    queues(a).nonPreemptible,
    "resource pool /a has no room in its reservation (which non-preemptible tasks may not exceed) for the " +
      "first task in line: cpu 2 of 4 in use; it asks for cpu 3, memory 128 MB",
  );
  assert.equal(
    queues(a, false).nonPreemptible,
    undefined,
    "without preemption the reservation holds nothing",
  );

  // What the caps can never reach: the reservation, the controller limit, the slack limit.
  const b = pool();
  enqueue(b, 1, 5, { preemptible: false });
  enqueue(b, 1, 3, { controller: true });
  enqueue(b, 1, 1, { revocable: true, resources: { cpuMilli: 1000, memMb: 60_000, diskMb: 0, gpuMilli: 0 } });
  admitAll(b);
  // All three are passed over in the pending queue, which names the first.
  assert.equal(admitAll(b), 0);
  assert.deepEqual(queues(b), {
    pending: "resource pool /a can never admit the first task in line: it asks for cpu 5, more than " +
      "its reservation of 4",
  });
  assert.deepEqual([...b.pending].map((g) => g.rows.length), [1, 1, 1]);
});

Deno.test("GetAdmissionWaits over the resource pool API: a leaf's waits; the root, non-leaf and unknown pools are errors", async () => {
  const { ResourceManager } = await import("./resmgr.ts");
  const { makePorts } = await import("../testing/harness.ts");
  const ports = makePorts();
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" });
  rm.recover([
    { id: "p", path: "/p", parentId: "root", config: makeRespoolConfig("p", { cpu: 10, memory: 1000 }) },
    { id: "c", path: "/p/c", parentId: "p", config: makeRespoolConfig("c", { cpu: 5, memory: 500 }) },
  ]);
  const ask = (id: string) => {
    rm.receive({
      kind: "api",
      reqId: 1,
      replyTo: "api/1",
      procedure: "peloton.api.respool.ResourceManager::GetAdmissionWaits",
      body: { id: { value: id } },
    });
    const [reply] = ports.transport.take("api-reply", "api/1") as Extract<Message, { kind: "api-reply" }>[];
    return reply.body;
  };
  assert.deepEqual(ask("c"), {
    waits: { path: "/p/c", limit: { cpu: 5, memory: 500, disk: 0, gpu: 0 }, preemption: true, queues: {} },
  });
  // Peloton's ResourcePoolIsNotLeaf and ResourcePoolNotFound name the pool by id.
  const error = (kind: string, id: string, message: string) => ({
    error: { [kind]: { id: { value: id }, message } },
  });
  assert.deepEqual(ask("p"), error("isNotLeaf", "p", "resource pool /p is not a leaf pool"));
  assert.deepEqual(ask("root"), error("isNotLeaf", "root", "resource pool / is not a leaf pool"));
  assert.deepEqual(ask("x"), error("notFound", "x", "resource pool x not found"));
});

Deno.test("GetAdmissionWaits names a gang bigger than its pool's limit whose every task is within it", async () => {
  const { ResourceManager } = await import("./resmgr.ts");
  const { makePorts, makeRmTask } = await import("../testing/harness.ts");
  const ports = makePorts();
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" });
  rm.recover([{
    id: "g",
    path: "/G",
    parentId: "root",
    config: makeRespoolConfig("G", {
      cpu: 12,
      memory: 24_576,
      disk: { reservation: 1000, limit: 61_440 },
      gpu: 4,
    }),
  }]);
  // minimumRunningInstances 5: one gang of 5 tasks of one core and one GPU each, 5 GPUs in all. Preemptible:
  // it has no side queue to go to, and is passed over in the pending queue.
  const tasks = Array.from({ length: 5 }, (_, i) =>
    makeRmTask({
      jobId: "j",
      instanceId: i,
      respoolId: "g",
      minInstances: 5,
      preemptible: true,
      resources: { cpuMilli: 1000, memMb: 128, diskMb: 0, gpuMilli: 1000 },
    }));
  rm.receive({ kind: "enqueue-gangs", gangs: [{ tasks }] });
  rm.schedule();
  rm.receive({
    kind: "api",
    reqId: 1,
    replyTo: "api/1",
    procedure: "peloton.api.respool.ResourceManager::GetAdmissionWaits",
    body: { id: { value: "g" } },
  });
  const [reply] = ports.transport.take("api-reply", "api/1") as Extract<Message, { kind: "api-reply" }>[];
  assert.deepEqual((reply.body as { waits: { queues: unknown } }).waits.queues, {
    pending: "resource pool /G can never admit the first gang in line (5 tasks): it asks for gpu 5, more " +
      "than its limit of 4",
  });
});

Deno.test("a gang over the whole cluster, within its pool's limit, waits for hosts to be added, and says so", () => {
  const a = pool();
  // Within the limit (cpu 10), beyond what the pool is entitled to and beyond all the cluster's hosts (cpu 6).
  enqueue(a, 3, 3);
  const cluster = { cpuMilli: 6_000, memMb: 64_000, diskMb: 0, gpuMilli: 0 };
  assert.deepEqual(admissionWaits(a, true, true, cluster).queues, {
    pending: "resource pool /a has no room in its entitlement for the first gang in line (3 tasks): " +
      "cpu 0 of 8 in use; it asks for cpu 9, memory 384 MB; more than the whole cluster has (cpu 6): it " +
      "waits for hosts to be added",
  });
  // A cluster big enough: only the room it waits for is said.
  const big = { ...cluster, cpuMilli: 32_000 };
  assert.doesNotMatch(admissionWaits(a, true, true, big).queues.pending ?? "", /whole cluster/);
});
