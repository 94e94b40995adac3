/**
 * The one rule for work a pool can never admit: the caps its admitters hold a gang to that nothing freeing
 * up can lift. Admission passes such work over, admission waits say so, and the pool leaves it out of its
 * demand for entitlement (`RespoolNode.neverDemand`), all by `neverAdmits` here.
 */
import type { Resources } from "../model/resources.ts";
import { DEFAULT_SLACK_LIMIT_PERCENT } from "./entitlement.ts";
import type { QueuedGang } from "./queued_gang.ts";
import type { RespoolNode } from "./respool_node.ts";
import { RESOURCE_EPSILON as EPSILON, RESOURCE_KINDS, type ResourceKind, type Scalar } from "./scalar.ts";

/** A cap an admitter holds a gang to that nothing freeing up can lift: only a change of the pool's config. */
export interface AdmissionBound {
  /** As a message names it after "its": "limit", "reservation", "slack limit (20% of its reservation)". */
  name: string;
  bound: Scalar;
}

/**
 * The bounds of the admitters that apply to the gang, in Peloton's admitter order: the entitlement never
 * exceeds the pool's limit (the calculator caps it there) and, for revocable work, its memory, disk and gpu
 * never the slack limit (revocable cpu comes from the hosts' slack); the controller limit; the reservation
 * for non-preemptible work with preemption on. A gang over one (`boundsExceeded`) is never admitted.
 */
export function admissionBounds(
  pool: RespoolNode,
  gang: QueuedGang,
  preemptionEnabled: boolean,
): AdmissionBound[] {
  if (gang.revocable) {
    const { name, bound } = slackLimit(pool);
    return [{ name, bound }];
  }
  const out: AdmissionBound[] = [];
  out.push({ name: "limit", bound: pool.limit() });
  const controller = gang.controller ? pool.controllerLimit() : undefined;
  if (controller) {
    out.push({
      name: `controller limit (${pool.config.controllerLimit?.maxPercent}% of its reservation)`,
      bound: controller,
    });
  }
  if (preemptionEnabled && !gang.preemptible) out.push({ name: "reservation", bound: pool.reservation() });
  return out;
}

/**
 * The bound revocable work is held to: its memory, disk and gpu never over the pool's slack limit, a
 * percentage of its reservation; its cpu, from the hosts' slack, unbounded. `percent` is that percentage.
 */
export function slackLimit(
  pool: Pick<RespoolNode, "config" | "reservation">,
): AdmissionBound & { percent: number } {
  const percent = pool.config.slackLimit?.maxPercent ?? DEFAULT_SLACK_LIMIT_PERCENT;
  const r = pool.reservation(), m = percent / 100;
  return {
    name: `slack limit (${percent}% of its reservation)`,
    bound: { cpu: Infinity, memory: r.memory * m, disk: r.disk * m, gpu: r.gpu * m },
    percent,
  };
}

/** The kinds the gang asks for more of than `bound`, by the epsilon or more (admission's own test). */
export function kindsOver(need: Resources, bound: Scalar): ResourceKind[] {
  const n = { cpu: need.cpuMilli / 1000, memory: need.memMb, disk: need.diskMb, gpu: need.gpuMilli / 1000 };
  return RESOURCE_KINDS.filter((k) => n[k] - bound[k] >= EPSILON);
}

/** The first of the gang's `admissionBounds` it asks for more than, with the kinds; undefined if none. */
export function boundsExceeded(
  pool: RespoolNode,
  gang: QueuedGang,
  preemptionEnabled: boolean,
): { bound: AdmissionBound; kinds: ResourceKind[] } | undefined {
  for (const bound of admissionBounds(pool, gang, preemptionEnabled)) {
    const kinds = kindsOver(gang.resources, bound.bound);
    if (kinds.length) return { bound, kinds };
  }
  return undefined;
}

/**
 * Whether no admission pass will ever take the gang unless the pool's config changes: it asks for more than
 * one of its `admissionBounds` (its limit; its controller limit, for a controller task; its reservation, for
 * non-preemptible work with preemption on; its slack limit, for revocable work). Such work is not the pool's
 * demand for entitlement either (`RespoolNode.neverDemand`). `preemptionEnabled` defaults to the pool's own
 * setting (`RespoolNode.preemptionEnabled`, the resource manager's).
 */
export function neverAdmits(
  pool: RespoolNode,
  gang: QueuedGang,
  preemptionEnabled: boolean = pool.preemptionEnabled,
): boolean {
  return boundsExceeded(pool, gang, preemptionEnabled) !== undefined;
}
