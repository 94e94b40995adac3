/**
 * Why a leaf pool's queued tasks wait for admission: for the first gang of each of its queues, the admitter
 * that refuses it (`admission.ts`), in words a user can act on. Asked for when someone looks (the job
 * manager, for PENDING tasks in `task list` and `task get`), so it costs nothing while nobody does.
 */
import type { AdmissionWaits } from "../messages.ts";
import type { Resources } from "../model/resources.ts";
import {
  controllerAdmits,
  entitlementAdmits,
  neverAdmits,
  reservationAdmits,
  sideQueueFor,
} from "./admission.ts";
import { DEFAULT_SLACK_LIMIT_PERCENT } from "./entitlement.ts";
import type { QueuedGang } from "./queued_gang.ts";
import { ADMISSION_ORDER, type QueueKind, type RespoolNode, toScalar } from "./respool_node.ts";
import { RESOURCE_EPSILON, RESOURCE_KINDS, type ResourceKind, type Scalar } from "./scalar.ts";

/**
 * A leaf pool's waits, as `dequeueGangs` would meet them. The side queues (non-preemptible, controller,
 * revocable) each stop at their first gang that does not fit. The pending queue moves a refused gang that
 * has a side queue aside and goes on: its reason is that of its first refused gang with no side queue; one
 * it moves aside speaks for its side queue when that has no gang yet. A queue that is empty, or whose
 * first gang fits (admitted at the next pass), says nothing. `capacityKnown`: the cluster has capacity as
 * the host manager last reported it; without any, every entitlement is 0, and the message says why.
 */
export function admissionWaits(
  pool: RespoolNode,
  preemptionEnabled: boolean,
  capacityKnown: boolean,
): AdmissionWaits {
  const out: AdmissionWaits = {
    path: pool.path,
    limit: pool.limit(),
    preemption: preemptionEnabled,
    queues: {},
  };
  const why = (gang: QueuedGang) => refusal(pool, gang, preemptionEnabled, capacityKnown);
  const sides = ADMISSION_ORDER.filter((k) => k !== "pending");
  const headed = new Set<QueueKind>();
  for (const kind of sides) {
    const gang = firstGang(pool.queue(kind));
    if (!gang) continue;
    headed.add(kind);
    const reason = why(gang);
    if (reason) out.queues[kind] = reason;
  }
  let looked = 0;
  for (const gang of pool.pending) {
    // As far as one admission pass would go.
    if (++looked > PENDING_LOOK_LIMIT) break;
    if (!gang.rows.length) continue;
    const reason = why(gang);
    if (!reason) break;
    const side = sideQueueFor(gang, preemptionEnabled);
    // Passed over at admission: the tasks behind it wait for their own reasons (its own tasks are told
    // they ask for more than the pool's limit).
    if (side === undefined && neverAdmits(pool, gang)) continue;
    if (side === undefined) {
      out.queues.pending = reason;
      break;
    }
    // Moved aside at the next pass, to the back of its side queue: it speaks for that queue if it will
    // be its first gang.
    if (!headed.has(side)) {
      headed.add(side);
      out.queues[side] = reason;
    }
  }
  return out;
}

/** Gangs of the pending queue looked at, at most: Peloton's `dequeueGangLimit`, one pass's worth. */
const PENDING_LOOK_LIMIT = 1000;

/** A queue's first gang with tasks (gangs emptied by drops wait to be skipped at the next pass). */
function firstGang(queue: Iterable<QueuedGang>): QueuedGang | undefined {
  for (const g of queue) if (g.rows.length) return g;
  return undefined;
}

/** What the first admitter that refuses the gang says, in Peloton's order; undefined when none does. */
function refusal(
  pool: RespoolNode,
  gang: QueuedGang,
  preemptionEnabled: boolean,
  capacityKnown: boolean,
): string | undefined {
  const a = pool.allocation;
  if (!entitlementAdmits(pool, gang)) {
    if (!capacityKnown) {
      return `resource pool ${pool.path} has no entitlement: the cluster has reported no capacity (no host is ` +
        "up)";
    }
    if (gang.revocable) {
      // Peloton caps revocable memory, disk and gpu at the pool's slack limit; revocable cpu comes from slack.
      const percent = pool.config.slackLimit?.maxPercent ?? DEFAULT_SLACK_LIMIT_PERCENT;
      const r = pool.reservation(), m = percent / 100;
      return short(pool, "slack entitlement (for revocable tasks)", a.slack, gang, pool.slackEntitlement, {
        name: `slack limit (${percent}% of its reservation)`,
        bound: { cpu: Infinity, memory: r.memory * m, disk: r.disk * m, gpu: r.gpu * m },
      });
    }
    return short(pool, "entitlement", a.nonSlack, gang, pool.nonSlackEntitlement, {
      name: "limit",
      bound: pool.limit(),
    });
  }
  if (!controllerAdmits(pool, gang)) {
    const percent = pool.config.controllerLimit?.maxPercent;
    const limit = pool.controllerLimit()!;
    return short(pool, `controller limit (${percent}% of its reservation)`, a.controller, gang, limit, {
      name: `controller limit (${percent}% of its reservation)`,
      bound: limit,
    });
  }
  if (!reservationAdmits(pool, gang, preemptionEnabled)) {
    return short(
      pool,
      "reservation (which non-preemptible tasks may not exceed)",
      a.nonPreemptible,
      gang,
      pool.reservation(),
      { name: "reservation", bound: pool.reservation() },
    );
  }
  return undefined;
}

/**
 * "resource pool /a has no room in its entitlement for the first task in line: cpu 12 of 12 in use; it asks
 * for cpu 1, memory 128 MB". Every kind over the cap is named, asked for or not (an entitlement may shrink
 * below what is in use). When the gang asks for more than `never.bound` (what the cap can never exceed:
 * the pool's limit, its slack or controller limit, or its reservation), waiting cannot help: said so.
 */
function short(
  pool: RespoolNode,
  what: string,
  used: Resources,
  gang: QueuedGang,
  cap: Scalar,
  never: { name: string; bound: Scalar },
): string {
  const u = toScalar(used), need = toScalar(gang.resources);
  const parts: string[] = [], impossible: string[] = [];
  for (const kind of RESOURCE_KINDS) {
    if (need[kind] > 0 && need[kind] - never.bound[kind] >= RESOURCE_EPSILON) {
      impossible.push(
        `${kind} ${amount(kind, need[kind])}, more than its ${never.name} of ${
          amount(kind, never.bound[kind])
        }`,
      );
    }
    if (u[kind] + need[kind] - cap[kind] >= RESOURCE_EPSILON) {
      parts.push(`${kind} ${amount(kind, u[kind])} of ${amount(kind, cap[kind])} in use`);
    }
  }
  const first = gang.rows.length === 1
    ? "the first task in line"
    : `the first gang in line (${gang.rows.length} tasks)`;
  if (impossible.length) {
    return `resource pool ${pool.path} can never admit ${first}: it asks for ${impossible.join(" and ")}`;
  }
  const asks = RESOURCE_KINDS.filter((k) => need[k] > 0).map((k) => `${k} ${amount(k, need[k])}`).join(", ");
  return `resource pool ${pool.path} has no room in its ${what} for ${first}: ${parts.join(", ")}; ` +
    `it asks for ${asks}`;
}

/** Cores and GPUs to three decimals, MB as integers, with their units. */
function amount(kind: ResourceKind, v: number): string {
  return kind === "memory" || kind === "disk" ? `${Math.round(v)} MB` : String(Math.round(v * 1000) / 1000);
}
