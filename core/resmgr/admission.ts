/** Admission control (Peloton's `respool/admission.go`): which queued gangs a leaf pool admits, whole. */
import type { Resources } from "../model/resources.ts";
import { neverAdmits } from "./admission_bounds.ts";
import { allocateTask } from "./allocation.ts";
import { ADMISSION_ORDER, type QueueKind, type RespoolNode } from "./respool_node.ts";
import type { QueuedGang } from "./queued_gang.ts";
import { RESOURCE_EPSILON as EPSILON, type Scalar } from "./scalar.ts";

export {
  type AdmissionBound,
  admissionBounds,
  boundsExceeded,
  kindsOver,
  neverAdmits,
} from "./admission_bounds.ts";

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
 * taken out of demand and into allocation, and appended to `out`. As in Peloton, each queue may look at
 * `limit` less the gangs admitted so far: a gang looked at and not admitted there (moved to a side queue,
 * passed over, or the head that stopped it) counts against that queue only. Returns the number admitted.
 *
 * Unlike Peloton, a gang the pool can never admit (`neverAdmits`) does not hold up the pending queue behind
 * it for good: it keeps its place at the head, and the gangs behind it are admitted as if it were not there
 * (in Peloton one such task stopped its pool's whole queue). Only a gang with no side queue can stop the
 * pending queue, and for it the one bound is the limit: work over another bound (a controller task over the
 * controller limit, non-preemptible work over the reservation, revocable work over the slack limit) has a
 * side queue to move to, where it waits at the head as in Peloton.
 */
export function dequeueGangs(
  pool: RespoolNode,
  limit: number,
  preemptionEnabled: boolean,
  out: QueuedGang[],
): number {
  let admitted = 0;
  for (const kind of ADMISSION_ORDER) {
    const queue = pool.queue(kind);
    let steps = admitted;
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
      // A gang the pool can never admit holds no one up, in any queue: passed over, it keeps its place
      // (and is not moved to a side queue, whose head it would block for good).
      if (neverAdmits(pool, gang, preemptionEnabled)) {
        passed.push(queue.shift()!);
        continue;
      }
      const side = kind === "pending" ? sideQueueFor(gang, preemptionEnabled) : undefined;
      if (side === undefined) break;
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
