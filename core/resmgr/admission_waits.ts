/**
 * Why a leaf pool's queued tasks wait for admission: for the first gang of each of its queues, the admitter
 * that refuses it (`admission.ts`), in words a user can act on. Asked for when someone looks (the job
 * manager, for PENDING tasks in `task list` and `task get`), so it costs nothing while nobody does.
 */
import type { AdmissionHead, AdmissionWaits } from "../messages.ts";
import type { Resources } from "../model/resources.ts";
import {
  boundsExceeded,
  canAdmit,
  controllerAdmits,
  entitlementAdmits,
  neverAdmits,
  reservationAdmits,
  sideQueueFor,
} from "./admission.ts";
import type { QueuedGang } from "./queued_gang.ts";
import { ADMISSION_ORDER, type QueueKind, type RespoolNode, toScalar } from "./respool_node.ts";
import { RESOURCE_EPSILON, RESOURCE_KINDS, type ResourceKind, type Scalar } from "./scalar.ts";

/**
 * A leaf pool's waits, as `dequeueGangs` would meet them. The side queues (non-preemptible, controller,
 * revocable) each stop at their first gang that does not fit. The pending queue moves a refused gang that
 * has a side queue aside and goes on: its reason is that of its first refused gang with no side queue; one
 * it moves aside speaks for its side queue when that has no gang yet. A gang the pool can never admit
 * (`neverAdmits`) is passed over in any queue, holding no one up: the queue says the pool can never admit
 * the first such gang, then what holds the gangs behind it, if anything does. A queue that is empty, or whose first
 * gang fits (admitted at the next pass), says nothing. `capacityKnown`: the cluster has capacity as the
 * host manager last reported it; without any, every entitlement is 0, and the message says why. `cluster`:
 * that capacity (its hosts' whole resources), to say of a gang asking for more than all of it that it waits
 * for hosts to be added, not for room.
 */
export function admissionWaits(
  pool: RespoolNode,
  preemptionEnabled: boolean,
  capacityKnown: boolean,
  cluster?: Resources,
): AdmissionWaits {
  const out: AdmissionWaits = {
    path: pool.path,
    limit: pool.limit(),
    preemption: preemptionEnabled,
    queues: {},
  };
  const why = (gang: QueuedGang, place: Place = "first") =>
    refusal(pool, gang, preemptionEnabled, capacityKnown, place, cluster);
  const heads: NonNullable<AdmissionWaits["heads"]> = {};
  const sides = ADMISSION_ORDER.filter((k) => k !== "pending");
  const headed = new Set<QueueKind>();
  for (const kind of sides) {
    let passedHere: string | undefined, passedGang: QueuedGang | undefined, looked = 0;
    for (const gang of pool.queue(kind)) {
      if (++looked > PENDING_LOOK_LIMIT) break;
      if (!gang.rows.length) continue;
      headed.add(kind);
      const reason = why(gang, passedHere === undefined ? "first" : "next");
      if (reason && neverAdmits(pool, gang, preemptionEnabled)) {
        // Passed over at admission, as in the pending queue.
        passedHere ??= reason;
        passedGang ??= gang;
        continue;
      }
      if (reason) {
        out.queues[kind] = passedHere === undefined ? reason : `${passedHere}; ${reason}`;
        heads[kind] = headOf(gang);
      }
      break;
    }
    if (passedGang && !heads[kind]) {
      out.queues[kind] ??= passedHere;
      heads[kind] = headOf(passedGang, true);
    }
  }
  // The first gang passed over (over the pool's limit): what the pending queue says first.
  let passed: string | undefined, passedGang: QueuedGang | undefined;
  let looked = 0;
  for (const gang of pool.pending) {
    // As far as one admission pass would go.
    if (++looked > PENDING_LOOK_LIMIT) break;
    if (!gang.rows.length) continue;
    const reason = why(gang, passed === undefined ? "first" : "next");
    if (!reason) break;
    const side = sideQueueFor(gang, preemptionEnabled);
    if (neverAdmits(pool, gang, preemptionEnabled)) {
      // Passed over at admission: the tasks behind it wait for their own reasons, if any.
      passed ??= reason;
      passedGang ??= gang;
      continue;
    }
    if (side === undefined) {
      out.queues.pending = passed === undefined ? reason : `${passed}; ${reason}`;
      heads.pending = headOf(gang);
      break;
    }
    // Moved aside at the next pass, to the back of its side queue: it speaks for that queue if it will
    // be its first gang.
    if (!headed.has(side)) {
      headed.add(side);
      out.queues[side] = reason;
      heads[side] = headOf(gang);
    }
  }
  if (passedGang && !heads.pending) {
    out.queues.pending ??= passed;
    heads.pending = headOf(passedGang, true);
  }
  if (Object.keys(heads).length) out.heads = heads;
  return out;
}

/** Whose gang a queue's reason is about (its tasks are queued, so the table still has them). */
function headOf(gang: QueuedGang, passedOver = false): AdmissionHead {
  const row = gang.rows[0];
  const jobId = gang.table.task[row]?.jobId ?? gang.table.taskId[row];
  const head: AdmissionHead = { jobId, tasks: gang.rows.length };
  if (passedOver) head.passedOver = true;
  return head;
}

/** Where the gang a reason is about stands in its queue: first, or next after gangs passed over. */
type Place = "first" | "next";

/** Gangs of the pending queue looked at, at most: Peloton's `dequeueGangLimit`, one pass's worth. */
const PENDING_LOOK_LIMIT = 1000;

/**
 * Why the gang is not admitted: that the pool never can (it asks for more than a bound of an admitter that
 * applies to it, `boundsExceeded`: its limit, slack limit, controller limit or reservation; the rule by which
 * the pool also leaves it out of its demand for entitlement), else what the first admitter that refuses it
 * says, in Peloton's order; undefined when none does.
 */
function refusal(
  pool: RespoolNode,
  gang: QueuedGang,
  preemptionEnabled: boolean,
  capacityKnown: boolean,
  place: Place,
  cluster?: Resources,
): string | undefined {
  if (canAdmit(pool, gang, preemptionEnabled)) return undefined;
  const first = gang.rows.length === 1
    ? `the ${place} task in line`
    : `the ${place} gang in line (${gang.rows.length} tasks)`;
  const never = boundsExceeded(pool, gang, preemptionEnabled);
  if (never) {
    const need = toScalar(gang.resources), bound = never.bound.bound;
    const asks = never.kinds.map((kind) =>
      `${kind} ${amount(kind, need[kind])}, more than its ${never.bound.name} of ${amount(kind, bound[kind])}`
    );
    return `resource pool ${pool.path} can never admit ${first}: it asks for ${asks.join(" and ")}`;
  }
  const a = pool.allocation;
  if (!entitlementAdmits(pool, gang)) {
    if (!capacityKnown) {
      return `resource pool ${pool.path} has no entitlement: the cluster has reported no capacity (no host is ` +
        "up)";
    }
    if (gang.revocable) {
      return short(
        pool,
        "slack entitlement (for revocable tasks)",
        a.slack,
        gang,
        pool.slackEntitlement,
        first,
      );
    }
    return short(pool, "entitlement", a.nonSlack, gang, pool.nonSlackEntitlement, first) +
      (cluster ? beyondCluster(gang, cluster) : "");
  }
  if (!controllerAdmits(pool, gang)) {
    const percent = pool.config.controllerLimit?.maxPercent;
    const what = `controller limit (${percent}% of its reservation)`;
    return short(pool, what, a.controller, gang, pool.controllerLimit()!, first);
  }
  if (!reservationAdmits(pool, gang, preemptionEnabled)) {
    const what = "reservation (which non-preemptible tasks may not exceed)";
    return short(pool, what, a.nonPreemptible, gang, pool.reservation(), first);
  }
  return undefined;
}

/**
 * "resource pool /a has no room in its entitlement for the first task in line: cpu 12 of 12 in use; it asks
 * for cpu 1, memory 128 MB". Every kind over the cap is named, asked for or not (an entitlement may shrink
 * below what is in use).
 */
function short(
  pool: RespoolNode,
  what: string,
  used: Resources,
  gang: QueuedGang,
  cap: Scalar,
  first: string,
): string {
  const u = toScalar(used), need = toScalar(gang.resources);
  const parts = RESOURCE_KINDS.filter((kind) => u[kind] + need[kind] - cap[kind] >= RESOURCE_EPSILON)
    .map((kind) => `${kind} ${amount(kind, u[kind])} of ${amount(kind, cap[kind])} in use`);
  const asks = RESOURCE_KINDS.filter((k) => need[k] > 0).map((k) => `${k} ${amount(k, need[k])}`).join(", ");
  return `resource pool ${pool.path} has no room in its ${what} for ${first}: ${parts.join(", ")}; ` +
    `it asks for ${asks}`;
}

/**
 * "; more than the whole cluster has (gpu 72): it waits for hosts to be added", when the gang asks for more
 * of a kind than all the cluster's hosts have: no entitlement can ever cover it on the cluster as it is (the
 * pool's limit allows it, or it would be refused as never admitted).
 */
function beyondCluster(gang: QueuedGang, cluster: Resources): string {
  const need = toScalar(gang.resources), has = toScalar(cluster);
  const over = RESOURCE_KINDS.filter((k) => need[k] - has[k] >= RESOURCE_EPSILON);
  if (!over.length) return "";
  const what = over.map((k) => `${k} ${amount(k, has[k])}`).join(", ");
  return `; more than the whole cluster has (${what}): it waits for hosts to be added`;
}

/** Cores and GPUs to three decimals, MB as integers, with their units. */
function amount(kind: ResourceKind, v: number): string {
  return kind === "memory" || kind === "disk" ? `${Math.round(v)} MB` : String(Math.round(v * 1000) / 1000);
}
