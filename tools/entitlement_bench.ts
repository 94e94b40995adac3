/** Benchmarks one entitlement recalculation on depth-4 pool trees of ~1,000 and ~10,000 pools. */

import {
  calculateEntitlement,
  type EntitlementPool,
  type PoolResourceConfig,
} from "../core/resmgr/entitlement.ts";
import { RESOURCE_KINDS, type Scalar, scalar } from "../core/resmgr/scalar.ts";

/** Numerical Recipes' LCG, so every run benches the same tree. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/**
 * A cluster-shaped tree: each level splits ~90% of its parent's reservation among its children, limits
 * reach up to the parent's, about a third of the leaves are idle and the rest ask for 0.5x-3x their
 * reservation, some of it revocable, so all three phases do work.
 */
function buildTree(branching: number[], seed: number) {
  const r = lcg(seed);
  const capacity = scalar({ cpu: 200_000, memory: 800_000_000, disk: 4_000_000_000, gpu: 2_000 });
  let count = 1;
  const grow = (id: string, reservation: Scalar, limit: Scalar, depth: number): EntitlementPool => {
    const children: EntitlementPool[] = [];
    const n = branching[depth] ?? 0;
    for (let i = 0; i < n; i++) {
      const res = scalar(), lim = scalar();
      const resources: Partial<Record<keyof Scalar, PoolResourceConfig>> = {};
      for (const kind of RESOURCE_KINDS) {
        res[kind] = reservation[kind] * 0.9 / n * (0.5 + r());
        lim[kind] = Math.min(limit[kind], res[kind] * (1 + 4 * r()));
        resources[kind] = {
          reservation: res[kind],
          limit: lim[kind],
          share: 1 + Math.floor(r() * 4),
          type: "ELASTIC",
        };
      }
      const child = grow(`${id}/${i}`, res, lim, depth + 1);
      child.resources = resources;
      children.push(child);
    }
    count += children.length;
    const pool: EntitlementPool = {
      id: id || "/",
      children,
      resources: {},
      demand: scalar(),
      slackDemand: scalar(),
      allocation: { nonSlack: scalar(), slack: scalar() },
    };
    if (children.length === 0 && r() > 0.33) {
      const want = 0.5 + 2.5 * r();
      pool.demand = scalar({ cpu: reservation.cpu * want * 0.3, memory: reservation.memory * want * 0.3 });
      pool.allocation.nonSlack = scalar({
        cpu: reservation.cpu * want * 0.6,
        memory: reservation.memory * want * 0.6,
      });
      pool.slackDemand = scalar({
        cpu: reservation.cpu * 0.2 * r(),
        memory: reservation.memory * 0.05 * r(),
      });
      pool.allocation.slack = scalar({
        cpu: reservation.cpu * 0.1 * r(),
        memory: reservation.memory * 0.02 * r(),
      });
    }
    return pool;
  };
  const root = grow("", capacity, capacity, 0);
  return { root, capacity, slack: scalar({ cpu: 20_000 }), count };
}

const small = buildTree([5, 5, 5, 8], 1);
const large = buildTree([10, 10, 10, 10], 2);

Deno.bench(`entitlement, ${small.count} pools, depth 4`, { group: "entitlement", baseline: true }, () => {
  calculateEntitlement(small.root, small.capacity, small.slack);
});

Deno.bench(`entitlement, ${large.count} pools, depth 4`, { group: "entitlement" }, () => {
  calculateEntitlement(large.root, large.capacity, large.slack);
});
