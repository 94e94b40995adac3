/** A resource manager for tests of its handoff: one leaf pool, a cluster to admit into, calls as a daemon. */
import type { Gang } from "../messages.ts";
import { resources, zero } from "../model/resources.ts";
import { DEFAULT_RESMGR_CONFIG, ResourceManager } from "../resmgr/resmgr.ts";
import { ROOT_ID } from "../resmgr/respool_tree.ts";
import { makePorts, makeRespoolConfig } from "./harness.ts";

/**
 * A resource manager with one pool `a` (100 cpus, 100,000 MB) on a cluster of 100 cpus. `dequeue` takes the
 * READY gangs as engine `engine`; `poll` the placements and changes for job manager `owner`.
 */
export function resmgrWithPool() {
  const ports = makePorts();
  const rm = new ResourceManager({ ...ports, self: "resmgr", hostmgr: "hostmgr" }, DEFAULT_RESMGR_CONFIG);
  if (!rm.tree.create("a", ROOT_ID, makeRespoolConfig("a", { cpu: 100, memory: 100_000 })).ok) {
    throw new Error("Cannot create pool a");
  }
  rm.receive({
    kind: "cluster-capacity",
    reqId: 0,
    capacity: { physical: resources(100_000, 1_000_000), slack: zero() },
  });
  let reqId = 0;
  const dequeue = (engine: string): Gang[] => {
    rm.receive({ kind: "dequeue-gangs", reqId: ++reqId, replyTo: engine, limit: 100, timeoutMs: 0 });
    return ports.transport.take("gangs", engine).flatMap((m) => m.gangs);
  };
  const poll = (owner: string) => {
    rm.receive({ kind: "get-placements", reqId: ++reqId, replyTo: owner, limit: 100, timeoutMs: 0 });
    return ports.transport.takeOne("placements", owner);
  };
  return { ...ports, rm, dequeue, poll };
}
