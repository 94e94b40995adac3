/** Admission control (Peloton's `respool/admission.go`): which queued gangs a leaf pool admits, whole. */
import type { Resources } from "../model/resources.ts";
import { allocateTask } from "./allocation.ts";
import { DEFAULT_SLACK_LIMIT_PERCENT } from "./entitlement.ts";
import { ADMISSION_ORDER, type QueueKind, type RespoolNode, toScalar } from "./respool_node.ts";
import type { QueuedGang } from "./queued_gang.ts";
import { RESOURCE_EPSILON as EPSILON, RESOURCE_KINDS, type ResourceKind, type Scalar } from "./scalar.ts";

/**
 * `(used + need) ≤ cap` in every dimension, in Peloton's units and with `LessThanOrEqual`'s epsilon
 * (a difference below 0.0009 counts as equal). Integer inputs, so nothing is allocated per check.
 */
export function fits(used: Resources, need: Resources, cap: Scalar): boolean {
  return (used.cpuMilli + need.cpuMilli) / 1000 - cap.cpu < EPSILON &&
    used.memMb + need.memMb - cap.memory < EPSILON &&
    used.diskMb + need.diskMb - cap.disk < EPSILON &&
    (used.gpuMilli + need.gpuMilli) / 1000 - cap.gpu < EPSILON;
}

/** `entitlementAdmitter`: non-revocable work against the non-slack entitlement, revocable against slack. */
export function entitlementAdmits(pool: RespoolNode, gang: QueuedGang): boolean {
  const a = pool.allocation;
  return gang.revocable
    ? fits(a.slack, gang.resources, pool.slackEntitlement)
    : fits(a.nonSlack, gang.resources, pool.nonSlackEntitlement);
}

/** `controllerAdmitter`: a controller gang within reservation × controllerLimit.maxPercent, if set. */
export function controllerAdmits(pool: RespoolNode, gang: QueuedGang): boolean {
  if (!gang.controller || gang.revocable) return true;
  const limit = pool.controllerLimit();
  return limit === undefined || fits(pool.allocation.controller, gang.resources, limit);
}

/**
 * `reservationAdmitter`: with preemption on, non-preemptible work must fit in the reservation, because
 * elastic resources above it may be taken back and such work cannot give them back.
 */
export function reservationAdmits(pool: RespoolNode, gang: QueuedGang, preemptionEnabled: boolean): boolean {
  if (!preemptionEnabled || gang.preemptible || gang.revocable) return true;
  return fits(pool.allocation.nonPreemptible, gang.resources, pool.reservation());
}

/** All of Peloton's admitters, in its order; the first that refuses decides. */
export function canAdmit(pool: RespoolNode, gang: QueuedGang, preemptionEnabled: boolean): boolean {
  return entitlementAdmits(pool, gang) && controllerAdmits(pool, gang) &&
    reservationAdmits(pool, gang, preemptionEnabled);
}

/**
 * The gang asks for more than the pool's limit in some resource: its entitlement never reaches that (the
 * limit caps it), so no admission pass will take it unless the pool's config changes. Revocable gangs are
 * held to slack, not the limit, and wait in their own queue. Such work is not the pool's demand for
 * entitlement either (`RespoolNode.neverDemand`).
 */
export function neverAdmits(pool: RespoolNode, gang: QueuedGang): boolean {
  return pool.neverAdmits(gang);
}

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
  const out: AdmissionBound[] = [];
  if (gang.revocable) {
    const percent = pool.config.slackLimit?.maxPercent ?? DEFAULT_SLACK_LIMIT_PERCENT;
    const r = pool.reservation(), m = percent / 100;
    out.push({
      name: `slack limit (${percent}% of its reservation)`,
      bound: { cpu: Infinity, memory: r.memory * m, disk: r.disk * m, gpu: r.gpu * m },
    });
    return out;
  }
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

/** The kinds the gang asks for more of than `bound`, by the epsilon or more (admission's own test). */
export function kindsOver(need: Resources, bound: Scalar): ResourceKind[] {
  const n = toScalar(need);
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
 * Where a gang the pending queue could not admit waits instead, so it does not block the gangs behind
 * it; undefined means the pool is full and the pending queue stops here.
 */
export function sideQueueFor(gang: QueuedGang, preemptionEnabled: boolean): QueueKind | undefined {
  if (!gang.preemptible && preemptionEnabled) return "nonPreemptible";
  if (gang.controller) return "controller";
  if (gang.revocable) return "revocable";
  return undefined;
}

/**
 * Peloton's `DequeueGangs(limit)` for one leaf pool: the non-preemptible, controller, revocable and
 * pending queues in that order, each FIFO by priority until a gang does not fit. Admitted gangs are
 * taken out of demand and into allocation, and appended to `out`. Moves to a side queue count against
 * `limit`, as they do in Peloton. Returns the number of gangs admitted.
 *
 * Unlike Peloton, a gang the pool can never admit (`neverAdmits`: more than its limit) does not hold up
 * the pending queue behind it for good: it keeps its place at the head, and the gangs behind it are
 * admitted as if it were not there (in Peloton one such task stopped its pool's whole queue).
 */
export function dequeueGangs(
  pool: RespoolNode,
  limit: number,
  preemptionEnabled: boolean,
  out: QueuedGang[],
): number {
  let steps = 0, admitted = 0;
  for (const kind of ADMISSION_ORDER) {
    const queue = pool.queue(kind);
    const passed: QueuedGang[] = [];
    while (steps < limit) {
      const gang = queue.peek();
      if (gang === undefined) break;
      if (gang.rows.length === 0) {
        // Every task was dropped while queued (Peloton's `validateGang` discards such a gang).
        queue.shift();
        continue;
      }
      steps++;
      if (canAdmit(pool, gang, preemptionEnabled)) {
        queue.shift();
        admit(pool, gang);
        out.push(gang);
        admitted++;
        continue;
      }
      const side = kind === "pending" ? sideQueueFor(gang, preemptionEnabled) : undefined;
      if (side === undefined) {
        if (kind !== "pending" || !neverAdmits(pool, gang)) break;
        passed.push(queue.shift()!);
        continue;
      }
      queue.shift();
      pool.queue(side).push(gang);
    }
    // Back at the head, in their order.
    for (let i = passed.length - 1; i >= 0; i--) queue.unshift(passed[i]);
  }
  return admitted;
}

function admit(pool: RespoolNode, gang: QueuedGang): void {
  pool.admitted(gang);
  const t = gang.table;
  for (const row of gang.rows) allocateTask(pool.allocation, t.resources[row]!, t.flags[row]);
}
