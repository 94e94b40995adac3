/**
 * Why a leaf pool's queued tasks wait for admission: for the first gang of each of its queues, the admitter
 * that refuses it (`admission.ts`), in words a user can act on. Asked for when someone looks (the job
 * manager, for PENDING tasks in `task list` and `task get`), so it costs nothing while nobody does.
 */
import type { AdmissionWaits } from "../messages.ts";
import type { Resources } from "../model/resources.ts";
import { controllerAdmits, entitlementAdmits, reservationAdmits } from "./admission.ts";
import type { QueuedGang } from "./queued_gang.ts";
import { ADMISSION_ORDER, type RespoolNode, toScalar } from "./respool_node.ts";
import { RESOURCE_EPSILON, RESOURCE_KINDS, type ResourceKind, type Scalar } from "./scalar.ts";

/** A leaf pool's waits: none of the four kinds when the first gang of every queue can be admitted. */
export function admissionWaits(pool: RespoolNode, preemptionEnabled: boolean): AdmissionWaits {
  const out: AdmissionWaits = { path: pool.path, limit: pool.limit() };
  for (const kind of ADMISSION_ORDER) {
    let gang: QueuedGang | undefined;
    // Gangs whose every task was dropped wait to be skipped at the next admission pass.
    for (const g of pool.queue(kind)) {
      if (g.rows.length) {
        gang = g;
        break;
      }
    }
    if (!gang) continue;
    // The admitters in Peloton's order: the first that refuses is what the gang waits for.
    if (!entitlementAdmits(pool, gang)) {
      if (gang.revocable) {
        out.slack ??= short(pool, "slack entitlement (for revocable tasks)", pool.allocation.slack, gang, {
          cap: pool.slackEntitlement,
        });
      } else {
        out.entitlement ??= short(pool, "entitlement", pool.allocation.nonSlack, gang, {
          cap: pool.nonSlackEntitlement,
          limit: pool.limit(),
        });
      }
    } else if (!controllerAdmits(pool, gang)) {
      const percent = pool.config.controllerLimit?.maxPercent;
      out.controller ??= short(
        pool,
        `controller limit (${percent}% of its reservation)`,
        pool.allocation.controller,
        gang,
        { cap: pool.controllerLimit()! },
      );
    } else if (!reservationAdmits(pool, gang, preemptionEnabled)) {
      out.reservation ??= short(
        pool,
        "reservation (which non-preemptible tasks may not exceed)",
        pool.allocation.nonPreemptible,
        gang,
        { cap: pool.reservation(), limit: pool.reservation(), limitName: "reservation" },
      );
    }
  }
  return out;
}

/**
 * "resource pool /a has no room in its entitlement for the first task in line: cpu 12 of 12 in use; it asks
 * for cpu 1, memory 128 MB".
 * When the gang asks for more than `limit` (what the cap can never exceed: the pool's limit, or its
 * reservation for non-preemptible work), waiting cannot help: said so.
 */
function short(
  pool: RespoolNode,
  what: string,
  used: Resources,
  gang: QueuedGang,
  bounds: { cap: Scalar; limit?: Scalar; limitName?: string },
): string {
  const u = toScalar(used), need = toScalar(gang.resources);
  const parts: string[] = [];
  const never: string[] = [];
  for (const kind of RESOURCE_KINDS) {
    if (need[kind] <= 0 || u[kind] + need[kind] - bounds.cap[kind] < RESOURCE_EPSILON) continue;
    const limit = bounds.limit?.[kind];
    if (limit !== undefined && need[kind] - limit >= RESOURCE_EPSILON) {
      never.push(
        `${kind} ${amount(kind, need[kind])}, more than its ${bounds.limitName ?? "limit"} of ${
          amount(kind, limit)
        }`,
      );
    }
    parts.push(`${kind} ${amount(kind, u[kind])} of ${amount(kind, bounds.cap[kind])} in use`);
  }
  const first = gang.rows.length === 1
    ? "the first task in line"
    : `the first gang in line (${gang.rows.length} tasks)`;
  const asks = RESOURCE_KINDS.filter((k) => need[k] > 0).map((k) => `${k} ${amount(k, need[k])}`).join(", ");
  if (never.length) {
    return `resource pool ${pool.path} can never admit ${first}: it asks for ${never.join(" and ")}`;
  }
  return `resource pool ${pool.path} has no room in its ${what} for ${first}: ${
    parts.join(", ")
  }; it asks for ${asks}`;
}

/** Cores and GPUs to three decimals, MB as integers, with their units. */
function amount(kind: ResourceKind, v: number): string {
  const n = Math.round(v * 1000) / 1000;
  return kind === "memory" || kind === "disk" ? `${Math.round(v)} MB` : String(n);
}
