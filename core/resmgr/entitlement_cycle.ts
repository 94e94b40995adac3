/** One entitlement cycle: feeds the pool tree and cluster capacity to Peloton's calculator. */
import type { ClusterCapacity } from "../messages.ts";
import { calculateEntitlement, type EntitlementAnomaly, type EntitlementPool } from "./entitlement.ts";
import { type RespoolNode, type RespoolTree, toScalar } from "./respool_tree.ts";
import type { Scalar } from "./scalar.ts";

function toPool(node: RespoolNode): EntitlementPool {
  const resources: EntitlementPool["resources"] = {};
  for (const r of node.config.resources) {
    resources[r.kind] = { reservation: r.reservation, limit: r.limit, share: r.share, type: r.type };
  }
  return {
    id: node.path,
    children: node.children.map(toPool),
    resources,
    slackLimitPercent: node.config.slackLimit?.maxPercent,
    // Work the pool can never admit (`admission_bounds.ts`) is no claim on the cluster: left out.
    demand: toScalar(node.admissibleDemand()),
    slackDemand: toScalar(node.admissibleSlackDemand()),
    allocation: { nonSlack: toScalar(node.allocation.nonSlack), slack: toScalar(node.allocation.slack) },
  };
}

/**
 * Sets every pool's entitlement, non-slack and slack entitlement from the calculator. Returns the
 * places where Peloton's own loop would not have terminated (share-0 pools with demand).
 */
export function recalculateEntitlement(tree: RespoolTree, capacity: ClusterCapacity): EntitlementAnomaly[] {
  const root = toPool(tree.root);
  const anomalies = calculateEntitlement(root, toScalar(capacity.physical), toScalar(capacity.slack));
  const walk = (node: RespoolNode, pool: EntitlementPool) => {
    node.entitlement = pool.entitlement!;
    node.nonSlackEntitlement = pool.nonSlackEntitlement!;
    node.slackEntitlement = pool.slackEntitlement!;
    for (let i = 0; i < node.children.length; i++) walk(node.children[i], pool.children[i]);
  };
  walk(tree.root, root);
  return anomalies;
}

/** A pool's entitlement as the calculator splits it: what non-revocable and revocable work may hold. */
export interface EntitlementSplit {
  /** For non-revocable work (what admission checks it against). */
  nonSlack: Scalar;
  /** For revocable work, from the slack the hosts lend. */
  slack: Scalar;
}

/**
 * The entitlement the calculator gives every pool for the tree's demand and allocation now, without
 * setting it: what the next cycle would set, for statistics that must not change what the resource
 * manager acts on.
 */
export function entitlementNow(
  tree: RespoolTree,
  capacity: ClusterCapacity,
): Map<RespoolNode, EntitlementSplit> {
  const root = toPool(tree.root);
  calculateEntitlement(root, toScalar(capacity.physical), toScalar(capacity.slack));
  const out = new Map<RespoolNode, EntitlementSplit>();
  const walk = (node: RespoolNode, pool: EntitlementPool) => {
    out.set(node, { nonSlack: pool.nonSlackEntitlement!, slack: pool.slackEntitlement! });
    for (let i = 0; i < node.children.length; i++) walk(node.children[i], pool.children[i]);
  };
  walk(tree.root, root);
  return out;
}
