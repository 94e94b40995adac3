/** The admission waits name the job whose gang holds each queue, so a task behind it is told it is behind. */
import assert from "node:assert/strict";
import { makeQueuedGang, makeRespoolConfig } from "../testing/harness.ts";
import { dequeueGangs } from "./admission.ts";
import { admissionWaits } from "./admission_waits.ts";
import { RespoolNode } from "./respool_node.ts";
import { scalar } from "./scalar.ts";
import { TaskTable } from "./task_table.ts";

function pool(): RespoolNode {
  const config = makeRespoolConfig("a", { cpu: { reservation: 4, limit: 10 }, memory: 100_000 });
  const node = new RespoolNode("a", "/a", config);
  node.nonSlackEntitlement = scalar({ cpu: 8, memory: 100_000 });
  return node;
}

const table = new TaskTable();
const cpus = (n: number) => ({ resources: { cpuMilli: n * 1000, memMb: 128, diskMb: 0, gpuMilli: 0 } });

Deno.test("each held queue names the job of the gang that holds it; one only passed over is marked so", () => {
  const a = pool();
  a.enqueue(makeQueuedGang(table, a, 8, cpus(1)));
  dequeueGangs(a, 1000, true, []);
  const head = makeQueuedGang(table, a, 2, cpus(0.5));
  a.enqueue(head);
  a.enqueue(makeQueuedGang(table, a, 1, cpus(0.5)));
  const waits = admissionWaits(a, true, true);
  assert.match(waits.queues.pending!, /for the first gang in line \(2 tasks\)/);
  assert.deepEqual(waits.heads, { pending: { jobId: table.task[head.rows[0]]!.jobId, tasks: 2 } });

  const b = pool();
  const never = makeQueuedGang(table, b, 1, cpus(11));
  b.enqueue(never);
  const waitsB = admissionWaits(b, true, true);
  assert.match(waitsB.queues.pending!, /can never admit the first task in line/);
  assert.deepEqual(waitsB.heads, {
    pending: { jobId: table.task[never.rows[0]]!.jobId, tasks: 1, passedOver: true },
  });
  assert.equal(admissionWaits(pool(), true, true).heads, undefined, "nothing held, no heads");
});
