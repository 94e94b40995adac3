/** Benchmarks admission: gangs per second through one leaf pool, the pure admitter and the whole daemon. */
import type { Gang } from "../core/messages.ts";
import { resources, zero } from "../core/model/resources.ts";
import { makePorts, makeRespoolConfig, makeRmTask } from "../core/testing/harness.ts";
import { dequeueGangs } from "../core/resmgr/admission.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "../core/resmgr/resmgr.ts";
import { RespoolNode } from "../core/resmgr/respool_node.ts";
import { QueuedGang } from "../core/resmgr/queued_gang.ts";
import { PENDING, TaskTable } from "../core/resmgr/task_table.ts";
import { scalar } from "../core/resmgr/scalar.ts";

const GANGS = 100_000;

/** One-task gangs of one core over 10 priority levels, a tenth of them non-preemptible. */
function gangs(n: number): Gang[] {
  const out: Gang[] = [];
  for (let i = 0; i < n; i++) {
    const task = makeRmTask({ jobId: `j${i}`, respoolId: "a", priority: i % 10, preemptible: i % 10 !== 0 });
    out.push({ tasks: [task] });
  }
  return out;
}

const input = gangs(GANGS);

Deno.bench(`dequeueGangs: ${GANGS.toLocaleString("en-US")} one-task gangs admitted from one pool`, (b) => {
  const pool = new RespoolNode("a", "/a", makeRespoolConfig("a", { cpu: 1e6, memory: 1e9 }));
  pool.nonSlackEntitlement = scalar({ cpu: 1e6, memory: 1e9 });
  const table = new TaskTable();
  for (const g of input) {
    pool.enqueue(new QueuedGang(table, g.tasks.map((t) => table.add(t, pool, PENDING, undefined))));
  }
  const out: QueuedGang[] = [];
  b.start();
  const admitted = dequeueGangs(pool, Infinity, true, out);
  b.end();
  if (admitted !== GANGS) throw new Error(`Cannot bench admission: admitted ${admitted} of ${GANGS}`);
});

Deno.bench(`resource manager: enqueue + admit ${GANGS.toLocaleString("en-US")} gangs in one pool`, (b) => {
  const ports = makePorts();
  const config = { ...DEFAULT_RESMGR_CONFIG, dequeueGangLimit: Infinity };
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, config);
  rm.tree.create("a", "root", makeRespoolConfig("a", { cpu: 1e6, memory: 1e9 }));
  rm.receive({
    kind: "cluster-capacity",
    reqId: 0,
    capacity: { physical: resources(1e9, 1e9), slack: zero() },
  });
  b.start();
  rm.receive({ kind: "enqueue-gangs", gangs: input });
  rm.schedule();
  b.end();
  if (rm.tree.get("a")!.active.size !== GANGS) {
    throw new Error("Cannot bench the daemon: not every gang was admitted");
  }
});
